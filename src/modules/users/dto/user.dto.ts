import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsString, Length, Matches, Validate, ValidateIf } from 'class-validator';
import { isoOrNull, trimString } from '../../../common/http/transforms';
import { PasswordBytesConstraint } from '../../../common/http/password.constraint';
import { USER_ROLES, UserEntity, UserRole } from '../entities/user.entity';

export class CreateUserDto {
  @ApiProperty({
    description: 'Login name, 3 to 64 of A-Z a-z 0-9 . _ - (case-insensitive, stored lower-case).',
    example: 'alice',
  })
  @Transform(trimString)
  @IsString()
  @Length(3, 64)
  @Matches(/^[A-Za-z0-9._-]+$/, { message: 'username may contain only letters, digits, ".", "_" and "-"' })
  username: string;

  @ApiProperty({ description: '8 to 72 bytes.', example: 'correct horse battery staple', format: 'password' })
  @IsString()
  @Validate(PasswordBytesConstraint)
  password: string;

  @ApiProperty({ enum: USER_ROLES, example: 'viewer' })
  @IsIn(USER_ROLES)
  role: UserRole;
}

/** Optional, but not nullable: `null` is not a role, a flag or a password (IsOptional would let it through). */
const IfPresent = () => ValidateIf((_object: unknown, value: unknown) => value !== undefined);

export class UpdateUserDto {
  @ApiPropertyOptional({
    description: "New password, 8 to 72 bytes. Ends the user's sessions.",
    format: 'password',
  })
  @IfPresent()
  @IsString()
  @Validate(PasswordBytesConstraint)
  password?: string;

  @ApiPropertyOptional({ enum: USER_ROLES, example: 'admin' })
  @IfPresent()
  @IsIn(USER_ROLES)
  role?: UserRole;

  @ApiPropertyOptional({ description: "False blocks login and ends the user's sessions.", example: true })
  @IfPresent()
  @IsBoolean()
  is_active?: boolean;
}

export class UserResponseDto {
  @ApiProperty({ format: 'uuid', example: '5d0c1c1e-3a0b-4c55-8f1e-7f6c2a9d4b10' })
  id: string;

  @ApiProperty({ example: 'admin' })
  username: string;

  @ApiProperty({ enum: USER_ROLES, example: 'admin' })
  role: UserRole;

  @ApiProperty({ example: true })
  is_active: boolean;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T03:14:15.123Z' })
  last_login_at: string | null;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-20T08:00:00.000Z' })
  created_at: string;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-20T08:00:00.000Z' })
  updated_at: string;
}

export function toUserResponse(user: UserEntity): UserResponseDto {
  return {
    id: user.id,
    username: user.username,
    role: user.role,
    is_active: user.isActive,
    last_login_at: isoOrNull(user.lastLoginAt),
    created_at: user.createdAt.toISOString(),
    updated_at: user.updatedAt.toISOString(),
  };
}
