import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidateIf,
  ValidateNested,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { isoOrNull, trimString } from '../../../common/http/transforms';
import { DETECTION_TYPES, type DetectionType } from '../../events/entities/event.entity';
import { USB_DEVICE_PATTERN } from '../camera-source';
import {
  CAMERA_SOURCE_TYPES,
  CAMERA_STATUSES,
  CameraEntity,
  type CameraSourceType,
  type CameraStatus,
  MOTION_SENSITIVITIES,
  type MotionSensitivity,
} from '../entities/camera.entity';

export const MAX_DETECTION_ZONES = 20;
export const MIN_ZONE_POINTS = 3;
export const MAX_ZONE_POINTS = 100;
export const MAX_PROMPT_OVERRIDE_LENGTH = 2000;

/** Optional, but not nullable: `null` is not a name, a flag or a number (IsOptional would let it through). */
const IfPresent = () => ValidateIf((_object: unknown, value: unknown) => value !== undefined);

/** A polygon: 3..100 `[x, y]` pairs, each coordinate a number from 0 to 1 (fractions of the image). */
@ValidatorConstraint({ name: 'polygonPoints' })
export class PolygonPointsConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return (
      Array.isArray(value) &&
      value.length >= MIN_ZONE_POINTS &&
      value.length <= MAX_ZONE_POINTS &&
      value.every(
        (point) =>
          Array.isArray(point) &&
          point.length === 2 &&
          point.every((c) => typeof c === 'number' && Number.isFinite(c) && c >= 0 && c <= 1),
      )
    );
  }

  defaultMessage(): string {
    return `points must be ${MIN_ZONE_POINTS} to ${MAX_ZONE_POINTS} [x, y] pairs of numbers from 0 to 1`;
  }
}

const POINTS_SCHEMA = {
  type: 'array',
  minItems: MIN_ZONE_POINTS,
  maxItems: MAX_ZONE_POINTS,
  items: {
    type: 'array',
    minItems: 2,
    maxItems: 2,
    items: { type: 'number', minimum: 0, maximum: 1 },
  },
  example: [
    [0, 0.5],
    [0.5, 0.5],
    [0.5, 1],
    [0, 1],
  ],
} as const;

export class DetectionZoneInputDto {
  @ApiProperty({
    description: 'Zone name, 1 to 50 characters.',
    example: 'Driveway',
    minLength: 1,
    maxLength: 50,
  })
  @Transform(trimString)
  @IsString()
  @Length(1, 50)
  name: string;

  @ApiPropertyOptional({ description: 'Disabled zones are ignored.', default: true, example: true })
  @IfPresent()
  @IsBoolean()
  enabled?: boolean;

  @ApiProperty({
    ...POINTS_SCHEMA,
    description:
      'The polygon: 3 to 100 `[x, y]` points in image coordinates from 0 to 1 (0,0 is the top left corner).',
  })
  @Validate(PolygonPointsConstraint)
  points: [number, number][];
}

export class DetectionZoneDto {
  @ApiProperty({ example: 'Driveway' })
  name: string;

  @ApiProperty({ example: true })
  enabled: boolean;

  @ApiProperty({ ...POINTS_SCHEMA, description: 'The polygon, `[x, y]` points from 0 to 1.' })
  points: [number, number][];
}

// One definition per field, shared by create and update. Nullable fields accept `null` (= not set / clear).
const Fields = {
  url: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        maxLength: 2048,
        description:
          'Stream URL: `rtsp://` or `rtsps://` for rtsp, `http://` or `https://` for mjpeg; not used by usb and ' +
          'protect. Must not contain credentials: use `username` and `password`.',
        example: 'rtsp://192.168.1.20:554/stream1',
      }),
      IsOptional(),
      Transform(trimString),
      IsString(),
      IsNotEmpty({ message: 'url must not be empty (send null to clear it)' }),
      MaxLength(2048),
    ),
  username: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        maxLength: 200,
        description: 'Stream login (rtsp, mjpeg).',
        example: 'viewer',
      }),
      IsOptional(),
      IsString(),
      Length(1, 200),
    ),
  password: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        format: 'password',
        maxLength: 256,
        writeOnly: true,
        description:
          'Stream password (rtsp, mjpeg). Write-only: stored encrypted, never returned (see `has_password`).',
        example: 'correct-horse',
      }),
      IsOptional(),
      IsString(),
      Length(1, 256),
    ),
  device: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        pattern: USB_DEVICE_PATTERN.source,
        description: 'Video device of a usb camera.',
        example: '/dev/video0',
      }),
      IsOptional(),
      Transform(trimString),
      IsString(),
      Matches(USB_DEVICE_PATTERN, { message: 'device must be a video device path like /dev/video0' }),
    ),
  protectControllerId: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        format: 'uuid',
        description: 'The Protect controller the camera belongs to (protect).',
        example: '3f6e2a1c-9b7d-4e0a-8c5f-1d2e3f4a5b6c',
      }),
      IsOptional(),
      IsUUID('all', { message: 'protect_controller_id must be a UUID' }),
    ),
  protectCameraId: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        maxLength: 100,
        description: "The camera's id on the Protect controller (protect).",
        example: '65a1b2c3d4e5f60718293a4b',
      }),
      IsOptional(),
      Transform(trimString),
      IsString(),
      Length(1, 100),
    ),
  enabled: () =>
    applyDecorators(
      ApiPropertyOptional({
        description:
          'Whether the camera captures (rtsp, mjpeg, usb): an enabled camera starts at once and resumes after a ' +
          'service restart. The same as `POST /cameras/{id}/start` and `/stop`.',
        default: false,
        example: true,
      }),
      IfPresent(),
      IsBoolean(),
    ),
  frameRate: () =>
    applyDecorators(
      ApiPropertyOptional({
        description: 'Frames analysed per second.',
        minimum: 1,
        maximum: 30,
        default: 5,
      }),
      IfPresent(),
      IsInt(),
      Min(1),
      Max(30),
    ),
  motionSensitivity: () =>
    applyDecorators(
      ApiPropertyOptional({ enum: MOTION_SENSITIVITIES, default: 'medium' }),
      IfPresent(),
      IsIn(MOTION_SENSITIVITIES, {
        message: `motion_sensitivity must be one of: ${MOTION_SENSITIVITIES.join(', ')}`,
      }),
    ),
  motionCooldownSeconds: () =>
    applyDecorators(
      ApiPropertyOptional({
        description: 'Seconds after an event before motion makes another one.',
        minimum: 0,
        maximum: 3600,
        default: 30,
      }),
      IfPresent(),
      IsInt(),
      Min(0),
      Max(3600),
    ),
  detectionZones: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: [DetectionZoneInputDto],
        maxItems: MAX_DETECTION_ZONES,
        description: `Up to ${MAX_DETECTION_ZONES} polygons; when any enabled zone exists, motion outside all of them is ignored. Replaces the whole list.`,
        default: [],
      }),
      IfPresent(),
      IsArray(),
      ArrayMaxSize(MAX_DETECTION_ZONES),
      ValidateNested({ each: true }),
      Type(() => DetectionZoneInputDto),
    ),
  detectionTypes: () =>
    applyDecorators(
      ApiPropertyOptional({
        enum: DETECTION_TYPES,
        isArray: true,
        minItems: 1,
        uniqueItems: true,
        description: 'Which detection types make events (at least one). Default: all.',
        example: ['person', 'vehicle', 'package'],
      }),
      IfPresent(),
      IsArray(),
      ArrayMinSize(1),
      ArrayMaxSize(DETECTION_TYPES.length),
      ArrayUnique(),
      IsIn(DETECTION_TYPES, {
        each: true,
        message: `each value in detection_types must be one of: ${DETECTION_TYPES.join(', ')}`,
      }),
    ),
  promptOverride: () =>
    applyDecorators(
      ApiPropertyOptional({
        type: String,
        nullable: true,
        maxLength: MAX_PROMPT_OVERRIDE_LENGTH,
        description: 'Replaces the AI description prompt for this camera. An empty string or null clears it.',
        example: 'Describe people and vehicles near the front door.',
      }),
      Transform(({ value }: { value: unknown }) =>
        typeof value === 'string' && value.trim() === '' ? null : value,
      ),
      IsOptional(),
      IsString(),
      MaxLength(MAX_PROMPT_OVERRIDE_LENGTH),
    ),
};

const NAME_DOC = {
  description: 'Unique name, 1 to 100 characters (compared case-insensitively; surrounding spaces removed).',
  example: 'Front door',
  minLength: 1,
  maxLength: 100,
};
const SOURCE_TYPE_DOC = {
  enum: CAMERA_SOURCE_TYPES,
  description:
    'rtsp: `url` (rtsp/rtsps), optional `username`/`password`; mjpeg: `url` (http/https), optional ' +
    '`username`/`password`; usb: `device`; protect: `protect_controller_id` and `protect_camera_id`. ' +
    'Fields of other source types are refused.',
  example: 'rtsp',
};

export class CreateCameraDto {
  @ApiProperty(NAME_DOC)
  @Transform(trimString)
  @IsString()
  @Length(1, 100)
  name: string;

  @ApiProperty(SOURCE_TYPE_DOC)
  @IsIn(CAMERA_SOURCE_TYPES, { message: `source_type must be one of: ${CAMERA_SOURCE_TYPES.join(', ')}` })
  source_type: CameraSourceType;

  @Fields.url() url?: string | null;
  @Fields.username() username?: string | null;
  @Fields.password() password?: string | null;
  @Fields.device() device?: string | null;
  @Fields.protectControllerId() protect_controller_id?: string | null;
  @Fields.protectCameraId() protect_camera_id?: string | null;
  @Fields.enabled() enabled?: boolean;
  @Fields.frameRate() frame_rate?: number;
  @Fields.motionSensitivity() motion_sensitivity?: MotionSensitivity;
  @Fields.motionCooldownSeconds() motion_cooldown_seconds?: number;
  @Fields.detectionZones() detection_zones?: DetectionZoneInputDto[];
  @Fields.detectionTypes() detection_types?: DetectionType[];
  @Fields.promptOverride() prompt_override?: string | null;
}

/**
 * Partial update: omitted fields keep their value; `null` clears a nullable field (`password: null` removes
 * the stored password). The result must still be a valid camera for its source type.
 */
export class UpdateCameraDto {
  @ApiPropertyOptional(NAME_DOC)
  @IfPresent()
  @Transform(trimString)
  @IsString()
  @Length(1, 100)
  name?: string;

  @ApiPropertyOptional({
    ...SOURCE_TYPE_DOC,
    description: `${SOURCE_TYPE_DOC.description} Changing it clears the old type's fields that the request does not send.`,
  })
  @IfPresent()
  @IsIn(CAMERA_SOURCE_TYPES, { message: `source_type must be one of: ${CAMERA_SOURCE_TYPES.join(', ')}` })
  source_type?: CameraSourceType;

  @Fields.url() url?: string | null;
  @Fields.username() username?: string | null;
  @Fields.password() password?: string | null;
  @Fields.device() device?: string | null;
  @Fields.protectControllerId() protect_controller_id?: string | null;
  @Fields.protectCameraId() protect_camera_id?: string | null;
  @Fields.enabled() enabled?: boolean;
  @Fields.frameRate() frame_rate?: number;
  @Fields.motionSensitivity() motion_sensitivity?: MotionSensitivity;
  @Fields.motionCooldownSeconds() motion_cooldown_seconds?: number;
  @Fields.detectionZones() detection_zones?: DetectionZoneInputDto[];
  @Fields.detectionTypes() detection_types?: DetectionType[];
  @Fields.promptOverride() prompt_override?: string | null;
}

const DATE_TIME = { type: String, format: 'date-time' } as const;
const NULLABLE_DATE_TIME = { ...DATE_TIME, nullable: true } as const;

export class CameraResponseDto {
  @ApiProperty({ format: 'uuid', example: '9d2f7c1a-5b3e-4f6d-8a0b-1c2d3e4f5a6b' })
  id: string;

  @ApiProperty({ example: 'Front door' })
  name: string;

  @ApiProperty({ enum: CAMERA_SOURCE_TYPES, example: 'rtsp' })
  source_type: CameraSourceType;

  @ApiProperty({ type: String, nullable: true, example: 'rtsp://192.168.1.20:554/stream1' })
  url: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'viewer' })
  username: string | null;

  @ApiProperty({ description: 'Whether a password is stored (the password itself is never returned).' })
  has_password: boolean;

  @ApiProperty({ type: String, nullable: true, example: null })
  device: string | null;

  @ApiProperty({ type: String, format: 'uuid', nullable: true, example: null })
  protect_controller_id: string | null;

  @ApiProperty({ type: String, nullable: true, example: null })
  protect_camera_id: string | null;

  @ApiProperty({ example: false })
  enabled: boolean;

  @ApiProperty({ enum: CAMERA_STATUSES, example: 'stopped' })
  status: CameraStatus;

  @ApiProperty({ type: String, nullable: true, example: null })
  status_message: string | null;

  @ApiProperty({ minimum: 1, maximum: 30, example: 5 })
  frame_rate: number;

  @ApiProperty({ enum: MOTION_SENSITIVITIES, example: 'medium' })
  motion_sensitivity: MotionSensitivity;

  @ApiProperty({ minimum: 0, maximum: 3600, example: 30 })
  motion_cooldown_seconds: number;

  @ApiProperty({ type: [DetectionZoneDto] })
  detection_zones: DetectionZoneDto[];

  @ApiProperty({ enum: DETECTION_TYPES, isArray: true, example: ['person', 'vehicle', 'package'] })
  detection_types: DetectionType[];

  @ApiProperty({ type: String, nullable: true, example: null })
  prompt_override: string | null;

  @ApiProperty({ ...NULLABLE_DATE_TIME, example: null })
  last_frame_at: string | null;

  @ApiProperty({ ...NULLABLE_DATE_TIME, example: null })
  last_event_at: string | null;

  @ApiProperty({ ...DATE_TIME, example: '2026-11-20T08:00:00.000Z' })
  created_at: string;

  @ApiProperty({ ...DATE_TIME, example: '2026-11-22T03:14:15.123Z' })
  updated_at: string;
}

/** The camera as the API returns it: never the password, only whether one is stored. */
export function toCameraResponse(camera: CameraEntity): CameraResponseDto {
  return {
    id: camera.id,
    name: camera.name,
    source_type: camera.sourceType,
    url: camera.url,
    username: camera.username,
    has_password: camera.passwordEncrypted !== null,
    device: camera.device,
    protect_controller_id: camera.protectControllerId,
    protect_camera_id: camera.protectCameraId,
    enabled: camera.enabled,
    status: camera.status,
    status_message: camera.statusMessage,
    frame_rate: camera.frameRate,
    motion_sensitivity: camera.motionSensitivity,
    motion_cooldown_seconds: camera.motionCooldownSeconds,
    detection_zones: camera.detectionZones.map((zone) => ({
      name: zone.name,
      enabled: zone.enabled,
      points: zone.points.map(([x, y]) => [x, y]),
    })),
    detection_types: [...camera.detectionTypes],
    prompt_override: camera.promptOverride,
    last_frame_at: isoOrNull(camera.lastFrameAt),
    last_event_at: isoOrNull(camera.lastEventAt),
    created_at: camera.createdAt.toISOString(),
    updated_at: camera.updatedAt.toISOString(),
  };
}

const TESTABLE_SOURCE_TYPES = ['rtsp', 'mjpeg', 'usb'] as const;

/** POST /cameras/test: a connection to try; nothing is saved. */
export class TestCameraDto {
  @ApiProperty({
    enum: TESTABLE_SOURCE_TYPES,
    description:
      'rtsp: `url` (rtsp/rtsps), mjpeg: `url` (http/https), both with optional `username`/`password`; usb: ' +
      '`device`. Protect cameras are tested through their controller.',
    example: 'rtsp',
  })
  @IsIn(TESTABLE_SOURCE_TYPES, {
    message: `source_type must be one of: ${TESTABLE_SOURCE_TYPES.join(', ')} (Protect cameras are tested through their controller)`,
  })
  source_type: (typeof TESTABLE_SOURCE_TYPES)[number];

  @Fields.url() url?: string | null;
  @Fields.username() username?: string | null;
  @Fields.password() password?: string | null;
  @Fields.device() device?: string | null;
}

export class CameraTestResponseDto {
  @ApiProperty({ description: 'Whether a video frame was received.', example: true })
  success: boolean;

  @ApiProperty({
    description:
      'What happened, precisely: e.g. "Connected", "Authentication failed: ...", "Connection timed out: ...", ' +
      '"Connection refused by ...", "Not a video stream: ...".',
    example: 'Connected: h264 640x360 at 15 fps',
  })
  message: string;

  @ApiProperty({
    type: String,
    nullable: true,
    description: '`WIDTHxHEIGHT` of the stream.',
    example: '640x360',
  })
  resolution: string | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Frames per second the stream announces.',
    example: 15,
  })
  fps: number | null;

  @ApiProperty({ type: String, nullable: true, description: 'Video codec (ffmpeg name).', example: 'h264' })
  codec: string | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Milliseconds from connecting to the first decoded frame.',
    example: 840,
  })
  latency_ms: number | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The first frame as a `data:image/jpeg;base64,` URI (at most 640 pixels wide).',
    example: null,
  })
  thumbnail: string | null;
}
