import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsDate,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
  MinDate,
} from 'class-validator';
import { isoOrNull, toBoolean, trimString } from '../../../common/http/transforms';
import { API_KEY_SCOPES, ApiKeyEntity, Scope } from '../entities/api-key.entity';

export class CreateApiKeyDto {
  @ApiProperty({
    description: 'Descriptive name (1 to 100 characters).',
    example: 'Home Assistant',
    minLength: 1,
    maxLength: 100,
  })
  @Transform(trimString)
  @IsString()
  @Length(1, 100)
  name: string;

  @ApiProperty({
    description: 'One or more scopes. `admin` includes every other scope.',
    enum: API_KEY_SCOPES,
    isArray: true,
    example: ['read:events', 'read:cameras'],
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(API_KEY_SCOPES.length)
  @ArrayUnique()
  @IsIn(API_KEY_SCOPES, {
    each: true,
    message: `each value in scopes must be one of: ${API_KEY_SCOPES.join(', ')}`,
  })
  scopes: Scope[];

  @ApiPropertyOptional({
    description: 'Expiry (ISO 8601, in the future). No expiry when omitted or null.',
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2027-01-01T00:00:00Z',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && isIsoDateTime(value) ? new Date(value) : value,
  )
  @IsDate({ message: 'expires_at must be an ISO 8601 date-time' })
  @MinDate(() => new Date(), { message: 'expires_at must be in the future' })
  expires_at?: Date | null;

  @ApiPropertyOptional({
    description: 'Requests allowed per minute.',
    minimum: 1,
    maximum: 10000,
    default: 100,
    example: 100,
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10000)
  rate_limit_per_minute?: number;
}

/** Accepts full ISO 8601 date-times (with a time and optionally a zone), not bare numbers or words. */
function isIsoDateTime(value: string): boolean {
  return (
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/.test(value) &&
    !Number.isNaN(Date.parse(value))
  );
}

export class ListApiKeysQueryDto {
  @ApiPropertyOptional({ description: 'Include revoked keys.', default: false })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'include_revoked must be true or false' })
  include_revoked?: boolean;
}

export class ApiKeyResponseDto {
  @ApiProperty({ format: 'uuid', example: '0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23' })
  id: string;

  @ApiProperty({ example: 'Home Assistant' })
  name: string;

  @ApiProperty({
    description: 'The first 12 characters of the key; never the full key.',
    example: 'vgl_a1B2c3D4',
  })
  prefix: string;

  @ApiProperty({ enum: API_KEY_SCOPES, isArray: true, example: ['read:events'] })
  scopes: string[];

  @ApiProperty({ description: 'False once revoked.', example: true })
  is_active: boolean;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null })
  expires_at: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T03:14:15.123Z' })
  last_used_at: string | null;

  @ApiProperty({ example: 42 })
  usage_count: number;

  @ApiProperty({ example: 100 })
  rate_limit_per_minute: number;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-20T08:00:00.000Z' })
  created_at: string;
}

export class ApiKeyCreatedDto {
  @ApiProperty({ format: 'uuid', example: '0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23' })
  id: string;

  @ApiProperty({ example: 'Home Assistant' })
  name: string;

  @ApiProperty({
    description: 'The full key. Shown only in this response; store it now.',
    example: 'vgl_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0',
  })
  key: string;

  @ApiProperty({ example: 'vgl_a1B2c3D4' })
  prefix: string;

  @ApiProperty({ enum: API_KEY_SCOPES, isArray: true, example: ['read:events', 'read:cameras'] })
  scopes: string[];

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null })
  expires_at: string | null;

  @ApiProperty({ example: 100 })
  rate_limit_per_minute: number;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T03:14:15.123Z' })
  created_at: string;
}

export class ApiKeyUsageDto {
  @ApiProperty({ format: 'uuid', example: '0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23' })
  id: string;

  @ApiProperty({ example: 'Home Assistant' })
  name: string;

  @ApiProperty({ example: 'vgl_a1B2c3D4' })
  prefix: string;

  @ApiProperty({ example: 42 })
  usage_count: number;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T03:14:15.123Z' })
  last_used_at: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'IP address of the last request.',
    example: '192.168.1.20',
  })
  last_used_ip: string | null;

  @ApiProperty({ example: 100 })
  rate_limit_per_minute: number;
}

export function toApiKeyResponse(key: ApiKeyEntity): ApiKeyResponseDto {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    is_active: key.isActive,
    expires_at: isoOrNull(key.expiresAt),
    last_used_at: isoOrNull(key.lastUsedAt),
    usage_count: key.usageCount,
    rate_limit_per_minute: key.rateLimitPerMinute,
    created_at: key.createdAt.toISOString(),
  };
}

export function toApiKeyCreated(key: ApiKeyEntity, fullKey: string): ApiKeyCreatedDto {
  return {
    id: key.id,
    name: key.name,
    key: fullKey,
    prefix: key.prefix,
    scopes: key.scopes,
    expires_at: isoOrNull(key.expiresAt),
    rate_limit_per_minute: key.rateLimitPerMinute,
    created_at: key.createdAt.toISOString(),
  };
}

export function toApiKeyUsage(key: ApiKeyEntity): ApiKeyUsageDto {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    usage_count: key.usageCount,
    last_used_at: isoOrNull(key.lastUsedAt),
    last_used_ip: key.lastUsedIp,
    rate_limit_per_minute: key.rateLimitPerMinute,
  };
}
