import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, Validate } from 'class-validator';
import { PasswordBytesConstraint } from '../../../common/http/password.constraint';
import { UserResponseDto } from '../../users/dto/user.dto';

export class LoginDto {
  @ApiProperty({ example: 'admin' })
  @IsString()
  @Length(1, 64)
  username: string;

  @ApiProperty({ example: 'correct horse battery staple', format: 'password' })
  @IsString()
  @Length(1, 200)
  password: string;
}

export class ChangePasswordDto {
  @ApiProperty({ format: 'password', example: 'correct horse battery staple' })
  @IsString()
  @Length(1, 200)
  current_password: string;

  @ApiProperty({ description: '8 to 72 bytes.', format: 'password', example: 'a much longer passphrase' })
  @IsString()
  @Validate(PasswordBytesConstraint)
  new_password: string;
}

export class LoginResponseDto {
  @ApiProperty({
    description: 'A JWT; also set as the HttpOnly cookie `vigil_access_token`.',
    example: 'eyJhbGciOiJIUzI1NiIs...',
  })
  access_token: string;

  @ApiProperty({ enum: ['bearer'], example: 'bearer' })
  token_type: 'bearer';

  @ApiProperty({ description: 'Seconds until the token expires.', example: 86400 })
  expires_in: number;

  @ApiProperty({ type: UserResponseDto })
  user: UserResponseDto;
}
