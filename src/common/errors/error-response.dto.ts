import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class FieldErrorDto {
  @ApiProperty({ example: 'body.name' })
  field: string;

  @ApiProperty({ example: 'name must be shorter than or equal to 100 characters' })
  message: string;
}

/** The one error envelope of every non-2xx response (decisions.md §1). */
export class ErrorResponseDto {
  @ApiProperty({ example: 'Invalid or expired API key' })
  detail: string;

  @ApiProperty({ example: 401 })
  status_code: number;

  @ApiPropertyOptional({ type: [FieldErrorDto], description: 'Present on 422 validation errors.' })
  errors?: FieldErrorDto[];
}
