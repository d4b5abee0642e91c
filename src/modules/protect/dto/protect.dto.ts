import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  Min,
  ValidateIf,
} from 'class-validator';
import { isoOrNull, trimString } from '../../../common/http/transforms';
import { DETECTION_TYPES, type DetectionType } from '../../events/entities/event.entity';
import {
  CONTROLLER_STATUSES,
  type ControllerStatus,
  ProtectControllerEntity,
} from '../entities/protect-controller.entity';

/** A host name, an IPv4 address or an IPv6 address (without brackets): no scheme, port or path. */
export const CONTROLLER_HOST_PATTERN =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)$/;

/** Optional, but not nullable. */
const IfPresent = () => ValidateIf((_object: unknown, value: unknown) => value !== undefined);

// One definition per field, shared by create, update and test.
const Fields = {
  name: (required: boolean) =>
    applyDecorators(
      (required ? ApiProperty : ApiPropertyOptional)({
        description: 'Unique name (1 to 100 characters).',
        minLength: 1,
        maxLength: 100,
        example: 'Home UDM Pro',
      }),
      ...(required ? [] : [IfPresent()]),
      Transform(trimString),
      IsString(),
      Length(1, 100),
    ),
  host: (required: boolean) =>
    applyDecorators(
      (required ? ApiProperty : ApiPropertyOptional)({
        description: 'Host name or IP address of the console (no scheme, port or path).',
        maxLength: 255,
        pattern: CONTROLLER_HOST_PATTERN.source,
        example: '192.168.1.1',
      }),
      ...(required ? [] : [IfPresent()]),
      Transform(trimString),
      IsString(),
      Length(1, 255),
      Matches(CONTROLLER_HOST_PATTERN, {
        message: 'host must be a host name or IP address (no scheme, port or path)',
      }),
    ),
  port: () =>
    applyDecorators(
      ApiPropertyOptional({
        description: 'HTTPS port of the console.',
        minimum: 1,
        maximum: 65535,
        default: 443,
      }),
      IfPresent(),
      IsInt(),
      Min(1),
      Max(65535),
    ),
  username: (required: boolean) =>
    applyDecorators(
      (required ? ApiProperty : ApiPropertyOptional)({
        description: 'A local user of the console with view rights on Protect.',
        minLength: 1,
        maxLength: 200,
        example: 'vigil',
      }),
      ...(required ? [] : [IfPresent()]),
      IsString(),
      Length(1, 200),
    ),
  password: (required: boolean) =>
    applyDecorators(
      (required ? ApiProperty : ApiPropertyOptional)({
        format: 'password',
        writeOnly: true,
        minLength: 1,
        maxLength: 256,
        description: 'Write-only: stored encrypted, never returned.',
        example: 'correct-horse',
      }),
      ...(required ? [] : [IfPresent()]),
      IsString(),
      Length(1, 256),
    ),
  verifyTls: () =>
    applyDecorators(
      ApiPropertyOptional({
        description:
          "Whether the console's certificate must verify against the system's trusted CAs (consoles ship " +
          'self-signed certificates, so the default is false).',
        default: false,
      }),
      IfPresent(),
      IsBoolean(),
    ),
  enabled: () =>
    applyDecorators(
      ApiPropertyOptional({
        description:
          'Whether Vigil keeps a connection to the console (and turns its detections into events).',
        default: true,
      }),
      IfPresent(),
      IsBoolean(),
    ),
};

export class CreateProtectControllerDto {
  @Fields.name(true) name: string;
  @Fields.host(true) host: string;
  @Fields.port() port?: number;
  @Fields.username(true) username: string;
  @Fields.password(true) password: string;
  @Fields.verifyTls() verify_tls?: boolean;
  @Fields.enabled() enabled?: boolean;
}

/** Partial update: only the fields sent change. */
export class UpdateProtectControllerDto {
  @Fields.name(false) name?: string;
  @Fields.host(false) host?: string;
  @Fields.port() port?: number;
  @Fields.username(false) username?: string;
  @Fields.password(false) password?: string;
  @Fields.verifyTls() verify_tls?: boolean;
  @Fields.enabled() enabled?: boolean;
}

/** POST /protect/controllers/test: a connection to try; nothing is saved. */
export class TestProtectControllerDto {
  @Fields.host(true) host: string;
  @Fields.port() port?: number;
  @Fields.username(true) username: string;

  @ApiPropertyOptional({
    format: 'password',
    writeOnly: true,
    minLength: 1,
    maxLength: 256,
    description: 'Required unless `controller_id` names a saved controller whose password is to be used.',
  })
  @IfPresent()
  @IsString()
  @Length(1, 256)
  password?: string;

  @Fields.verifyTls() verify_tls?: boolean;

  @ApiPropertyOptional({
    format: 'uuid',
    description:
      'A saved controller whose stored password is used when `password` is left out (editing a controller).',
  })
  @IsOptional()
  @IsUUID('all', { message: 'controller_id must be a UUID' })
  controller_id?: string;
}

const DATE_TIME = { type: String, format: 'date-time' } as const;

export class ProtectControllerResponseDto {
  @ApiProperty({ format: 'uuid', example: '3f6e2a1c-9b7d-4e0a-8c5f-1d2e3f4a5b6c' })
  id: string;

  @ApiProperty({ example: 'Home UDM Pro' })
  name: string;

  @ApiProperty({ example: '192.168.1.1' })
  host: string;

  @ApiProperty({ example: 443 })
  port: number;

  @ApiProperty({ example: 'vigil' })
  username: string;

  @ApiProperty({ example: false })
  verify_tls: boolean;

  @ApiProperty({ example: true })
  enabled: boolean;

  @ApiProperty({
    enum: CONTROLLER_STATUSES,
    description:
      'connecting: logging in / loading the bootstrap; connected: receiving realtime updates; disconnected: ' +
      'disabled, or connected by another instance, or waiting to reconnect; error: the console refused or failed ' +
      '(see status_message; retried with backoff).',
    example: 'connected',
  })
  status: ControllerStatus;

  @ApiProperty({ type: String, nullable: true, example: null })
  status_message: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Console name from its bootstrap.',
    example: 'UDM Pro',
  })
  console_name: string | null;

  @ApiProperty({ type: String, nullable: true, description: 'Protect version.', example: '5.3.48' })
  version: string | null;

  @ApiProperty({ type: Number, nullable: true, description: 'Cameras on the console.', example: 4 })
  camera_count: number | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, example: '2026-11-22T03:14:15.123Z' })
  last_connected_at: string | null;

  @ApiProperty({ ...DATE_TIME, example: '2026-11-20T08:00:00.000Z' })
  created_at: string;

  @ApiProperty({ ...DATE_TIME, example: '2026-11-22T03:14:15.123Z' })
  updated_at: string;
}

/** The controller as the API returns it: never the password. */
export function toControllerResponse(controller: ProtectControllerEntity): ProtectControllerResponseDto {
  return {
    id: controller.id,
    name: controller.name,
    host: controller.host,
    port: controller.port,
    username: controller.username,
    verify_tls: controller.verifyTls,
    enabled: controller.enabled,
    status: controller.status,
    status_message: controller.statusMessage,
    console_name: controller.consoleName,
    version: controller.version,
    camera_count: controller.cameraCount,
    last_connected_at: isoOrNull(controller.lastConnectedAt),
    created_at: controller.createdAt.toISOString(),
    updated_at: controller.updatedAt.toISOString(),
  };
}

export class ProtectTestResponseDto {
  @ApiProperty({ description: 'Whether Vigil logged in and loaded the Protect bootstrap.', example: true })
  success: boolean;

  @ApiProperty({
    description:
      'What happened, precisely: "Connected to ...", "Authentication failed: ...", "TLS verification failed: ...", ' +
      '"Host unreachable: ...", "Connection timed out: ...", "Not a UniFi Protect console: ...".',
    example: 'Connected to UDM Pro (Protect 5.3.48, 4 cameras)',
  })
  message: string;

  @ApiProperty({ type: String, nullable: true, example: 'UDM Pro' })
  console_name: string | null;

  @ApiProperty({ type: String, nullable: true, example: '5.3.48' })
  version: string | null;

  @ApiProperty({ type: Number, nullable: true, example: 4 })
  camera_count: number | null;

  @ApiProperty({ description: 'Time to log in and load the bootstrap (or to fail).', example: 182 })
  latency_ms: number;
}

export const PROTECT_CAMERA_TYPES = ['camera', 'doorbell'] as const;

export class ProtectCameraDto {
  @ApiProperty({ description: "The camera's id on the console.", example: '65a1b2c3d4e5f60718293a4b' })
  protect_camera_id: string;

  @ApiProperty({ example: 'Driveway' })
  name: string;

  @ApiProperty({ example: 'G4 Bullet' })
  model: string;

  @ApiProperty({ enum: PROTECT_CAMERA_TYPES, example: 'camera' })
  type: (typeof PROTECT_CAMERA_TYPES)[number];

  @ApiProperty({ description: 'Whether the console reports the camera connected.', example: true })
  online: boolean;

  @ApiProperty({
    enum: DETECTION_TYPES,
    isArray: true,
    description:
      'The smart detections the camera can make, as Vigil detection types (motion and ring not listed).',
    example: ['person', 'vehicle'],
  })
  smart_detect_types: DetectionType[];

  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    description: 'The Vigil camera adopting it (`source_type: protect`), or null.',
    example: null,
  })
  camera_id: string | null;
}
