import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDate,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxDate,
  Min,
  MinDate,
  registerDecorator,
  ValidationArguments,
  ValidationOptions,
} from 'class-validator';
import { isoOrNull, trimString } from '../../../common/http/transforms';
import {
  DESCRIPTION_STATUSES,
  DETECTION_TYPES,
  DetectionType,
  EVENT_SOURCE_TYPES,
  EventEntity,
  EventSourceType,
} from '../entities/event.entity';

// ---------------------------------------------------------------------------------------------------
// Query-string conversion (query parameters arrive as strings; the global pipe does no implicit conversion)

const INTEGER = /^-?\d{1,9}$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
/** Earliest and latest instants accepted anywhere a date-time is given (PostgreSQL has no year 0). */
const MIN_DATE = new Date('0001-01-01T00:00:00Z');
const MAX_DATE = new Date('9999-12-31T23:59:59.999Z');

/** "42" -> 42; anything else is left as it is and fails @IsInt. */
export function toInteger({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && INTEGER.test(value.trim()) ? Number(value.trim()) : value;
}

/** A full ISO 8601 date-time -> Date (no zone means UTC); anything else is left to fail @IsDate. */
export function toDateTime({ value }: { value: unknown }): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (!ISO_DATE_TIME.test(text)) return value;
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(text);
  const date = new Date(hasZone ? text : `${text}Z`);
  return Number.isNaN(date.getTime()) ? value : date;
}

/**
 * A comma list (`a,b`), also repeated (`x=a&x=b`) -> trimmed, de-duplicated strings. An empty item stays
 * (and fails the item validation).
 */
export function toList({ value }: { value: unknown }): unknown {
  const parts: unknown[] = Array.isArray(value) ? value : [value];
  if (!parts.every((p) => typeof p === 'string')) return value;
  return [...new Set(parts.flatMap((p) => p.split(',')).map((s) => s.trim()))];
}

const lowerCase = ({ value }: { value: unknown }): unknown =>
  Array.isArray(value)
    ? value.map((v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v))
    : typeof value === 'string'
      ? value.toLowerCase()
      : value;

/** `end_time` must not be before `start_time`. */
function NotBefore(property: string, options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'notBefore',
      target: object.constructor,
      propertyName,
      constraints: [property],
      options,
      validator: {
        validate(value: unknown, args: ValidationArguments) {
          const other = (args.object as Record<string, unknown>)[property];
          return !(value instanceof Date && other instanceof Date) || value.getTime() >= other.getTime();
        },
        defaultMessage: () => `${propertyName} must not be before ${property}`,
      },
    });
}

const MAX_LIST = 100;

// ---------------------------------------------------------------------------------------------------
// Requests

/** The filters shared by GET /events, /events/stats and /events/export. */
export class EventFilterQueryDto {
  @ApiPropertyOptional({
    description: 'Camera id, or a comma-separated list of ids (any of them).',
    type: String,
    example: '3f1c0a52-6a7b-4c8e-9d10-2b3c4d5e6f70',
  })
  @IsOptional()
  @Transform(toList)
  @Transform(lowerCase)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_LIST)
  @IsUUID('all', { each: true, message: 'each value in camera_id must be a UUID' })
  camera_id?: string[];

  @ApiPropertyOptional({
    description: `Detection type, or a comma-separated list (any of them): ${DETECTION_TYPES.join(', ')}.`,
    type: String,
    example: 'person,vehicle',
  })
  @IsOptional()
  @Transform(toList)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(DETECTION_TYPES.length)
  @IsIn(DETECTION_TYPES, {
    each: true,
    message: `each value in detection_type must be one of: ${DETECTION_TYPES.join(', ')}`,
  })
  detection_type?: DetectionType[];

  @ApiPropertyOptional({
    description: 'Events at or after this time (ISO 8601 date-time; UTC when no zone is given).',
    type: String,
    format: 'date-time',
    example: '2026-11-22T00:00:00Z',
  })
  @IsOptional()
  @Transform(toDateTime)
  @IsDate({ message: 'start_time must be an ISO 8601 date-time' })
  @MinDate(MIN_DATE, { message: 'start_time must be an ISO 8601 date-time' })
  @MaxDate(MAX_DATE, { message: 'start_time must be an ISO 8601 date-time' })
  start_time?: Date;

  @ApiPropertyOptional({
    description:
      'Events at or before this time (ISO 8601 date-time; UTC when no zone is given). Not before `start_time` (422).',
    type: String,
    format: 'date-time',
    example: '2026-11-22T23:59:59.999Z',
  })
  @IsOptional()
  @Transform(toDateTime)
  @IsDate({ message: 'end_time must be an ISO 8601 date-time' })
  @MinDate(MIN_DATE, { message: 'end_time must be an ISO 8601 date-time' })
  @MaxDate(MAX_DATE, { message: 'end_time must be an ISO 8601 date-time' })
  @NotBefore('start_time')
  end_time?: Date;

  @ApiPropertyOptional({
    description:
      'Only events with at least this confidence (0..100); events without a confidence are left out.',
    type: 'integer',
    minimum: 0,
    maximum: 100,
    example: 60,
  })
  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: 'min_confidence must be an integer from 0 to 100' })
  @Min(0)
  @Max(100)
  min_confidence?: number;

  @ApiPropertyOptional({
    description: `Where the event came from, or a comma-separated list: ${EVENT_SOURCE_TYPES.join(', ')} (\`api\` = POST /events).`,
    type: String,
    example: 'rtsp',
  })
  @IsOptional()
  @Transform(toList)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(EVENT_SOURCE_TYPES.length)
  @IsIn(EVENT_SOURCE_TYPES, {
    each: true,
    message: `each value in source_type must be one of: ${EVENT_SOURCE_TYPES.join(', ')}`,
  })
  source_type?: EventSourceType[];

  @ApiPropertyOptional({
    description:
      'Words that must all occur in the description (whole words, any order, case-insensitive; punctuation is ignored).',
    minLength: 1,
    maxLength: 200,
    example: 'red car',
  })
  @IsOptional()
  @Transform(trimString)
  @IsString()
  @Length(1, 200)
  @Matches(/[\p{L}\p{N}]/u, { message: 'q must contain at least one word' })
  q?: string;
}

export const EVENT_SORTS = ['-timestamp', 'timestamp'] as const;
export type EventSort = (typeof EVENT_SORTS)[number];

export class ListEventsQueryDto extends EventFilterQueryDto {
  @ApiPropertyOptional({ description: 'Page number (1-based).', type: 'integer', minimum: 1, default: 1 })
  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: 'page must be an integer of at least 1' })
  @Min(1)
  @Max(10_000_000)
  page?: number;

  @ApiPropertyOptional({ description: 'Page size.', type: 'integer', minimum: 1, maximum: 500, default: 50 })
  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: 'limit must be an integer from 1 to 500' })
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({
    description: '`-timestamp` newest first (default) or `timestamp` oldest first; ties by id.',
    enum: EVENT_SORTS,
    default: '-timestamp',
  })
  @IsOptional()
  @IsIn(EVENT_SORTS, { message: 'sort must be one of: -timestamp, timestamp' })
  sort?: EventSort;
}

export class ExportEventsQueryDto extends EventFilterQueryDto {
  @ApiPropertyOptional({
    description: '`-timestamp` newest first (default) or `timestamp` oldest first; ties by id.',
    enum: EVENT_SORTS,
    default: '-timestamp',
  })
  @IsOptional()
  @IsIn(EVENT_SORTS, { message: 'sort must be one of: -timestamp, timestamp' })
  sort?: EventSort;
}

/** How far ahead of the server's clock an ingested event may be (clock skew). */
export const FUTURE_TOLERANCE_MS = 5 * 60_000;

export class CreateEventDto {
  @ApiProperty({ description: 'The camera the event belongs to.', format: 'uuid' })
  @Transform(lowerCase)
  @IsUUID('all', { message: 'camera_id must be a UUID' })
  camera_id: string;

  @ApiPropertyOptional({
    description: 'When it happened (ISO 8601 date-time, at most 5 minutes in the future). Default: now.',
    type: String,
    format: 'date-time',
    example: '2026-11-22T03:14:15.123Z',
  })
  @IsOptional()
  @Transform(toDateTime)
  @IsDate({ message: 'timestamp must be an ISO 8601 date-time' })
  @MinDate(MIN_DATE, { message: 'timestamp must be an ISO 8601 date-time' })
  @MaxDate(() => new Date(Date.now() + FUTURE_TOLERANCE_MS), {
    message: 'timestamp must not be more than 5 minutes in the future',
  })
  timestamp?: Date;

  @ApiProperty({ enum: DETECTION_TYPES, example: 'person' })
  @IsIn(DETECTION_TYPES, { message: `detection_type must be one of: ${DETECTION_TYPES.join(', ')}` })
  detection_type: DetectionType;

  @ApiPropertyOptional({
    description: 'What was seen (up to 50 labels of 1 to 100 characters).',
    type: String,
    isArray: true,
    example: ['person', 'backpack'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @Length(1, 100, { each: true })
  objects_detected?: string[];

  @ApiPropertyOptional({
    description: 'Detection confidence, 0..100.',
    type: 'integer',
    minimum: 0,
    maximum: 100,
  })
  @IsOptional()
  @IsInt({ message: 'confidence must be an integer from 0 to 100' })
  @Min(0)
  @Max(100)
  confidence?: number | null;

  @ApiPropertyOptional({
    description: 'A description (1 to 10000 characters). Without one the event waits for an AI description.',
    type: String,
    maxLength: 10000,
    example: 'A courier leaves a parcel at the front door.',
  })
  @IsOptional()
  @Transform(trimString)
  @IsString()
  @Length(1, 10000)
  description?: string | null;

  @ApiPropertyOptional({
    description:
      'A JPEG image, base64 (a `data:image/jpeg;base64,` prefix and line breaks are allowed), at most 10 MiB decoded.',
    type: String,
    format: 'byte',
  })
  @IsOptional()
  @IsString()
  image_base64?: string | null;
}

// ---------------------------------------------------------------------------------------------------
// Responses

export class EventResponseDto {
  @ApiProperty({ format: 'uuid', example: '7a1d6a3e-2f0b-4f7e-8a9c-1b2c3d4e5f60' })
  id: string;

  @ApiProperty({ format: 'uuid', example: '3f1c0a52-6a7b-4c8e-9d10-2b3c4d5e6f70' })
  camera_id: string;

  @ApiProperty({ example: 'Front door' })
  camera_name: string;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T03:14:15.123Z' })
  timestamp: string;

  @ApiProperty({ enum: DETECTION_TYPES, example: 'person' })
  detection_type: string;

  @ApiProperty({ type: String, isArray: true, example: ['person'] })
  objects_detected: string[];

  @ApiProperty({ type: 'integer', nullable: true, minimum: 0, maximum: 100, example: 87 })
  confidence: number | null;

  @ApiProperty({ type: String, nullable: true, example: 'A person in a red jacket rings the doorbell.' })
  description: string | null;

  @ApiProperty({ enum: DESCRIPTION_STATUSES, example: 'complete' })
  description_status: string;

  @ApiProperty({ enum: EVENT_SOURCE_TYPES, example: 'rtsp' })
  source_type: string;

  @ApiProperty({ type: String, nullable: true, example: null })
  protect_event_id: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Path of the event image (GET, same credentials), or null when it has none.',
    example: '/api/v1/events/7a1d6a3e-2f0b-4f7e-8a9c-1b2c3d4e5f60/thumbnail',
  })
  thumbnail_url: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'openai' })
  provider_used: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'gpt-4o-mini' })
  model_used: string | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 90 })
  ai_confidence: number | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 812 })
  tokens_used: number | null;

  @ApiProperty({ type: Number, nullable: true, example: 0.00041 })
  ai_cost_usd: number | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 1840 })
  response_time_ms: number | null;

  @ApiProperty({ type: 'integer', example: 0 })
  reanalysis_count: number;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null })
  reanalysed_at: string | null;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T03:14:15.456Z' })
  created_at: string;
}

export class EventPageDto {
  @ApiProperty({ type: EventResponseDto, isArray: true })
  items: EventResponseDto[];

  @ApiProperty({ type: 'integer', description: 'Events matching the filters.', example: 1234 })
  total: number;

  @ApiProperty({ type: 'integer', example: 1 })
  page: number;

  @ApiProperty({ type: 'integer', example: 50 })
  limit: number;

  @ApiProperty({ type: 'integer', description: 'ceil(total / limit); 0 when total is 0.', example: 25 })
  pages: number;
}

/** An `EventPageDto` as JSON text, from its items' JSON texts (the same text JSON.stringify would make). */
export function eventPageJson(items: string[], counts: Omit<EventPageDto, 'items'>): string {
  const { total, page, limit, pages } = counts;
  return `{"items":[${items.join(',')}],"total":${total},"page":${page},"limit":${limit},"pages":${pages}}`;
}

export class EventCountByTypeDto {
  @ApiProperty({ type: 'integer' }) person: number;
  @ApiProperty({ type: 'integer' }) vehicle: number;
  @ApiProperty({ type: 'integer' }) animal: number;
  @ApiProperty({ type: 'integer' }) package: number;
  @ApiProperty({ type: 'integer' }) face: number;
  @ApiProperty({ type: 'integer' }) license_plate: number;
  @ApiProperty({ type: 'integer' }) motion: number;
  @ApiProperty({ type: 'integer' }) ring: number;
  @ApiProperty({ type: 'integer' }) unknown: number;
}

export class EventCountByCameraDto {
  @ApiProperty({ format: 'uuid' })
  camera_id: string;

  @ApiProperty({ example: 'Front door' })
  camera_name: string;

  @ApiProperty({ type: 'integer', example: 321 })
  count: number;
}

export class EventCountByDayDto {
  @ApiProperty({ type: String, format: 'date', description: 'UTC day.', example: '2026-11-22' })
  date: string;

  @ApiProperty({ type: 'integer', example: 57 })
  count: number;
}

export class EventStatsDto {
  @ApiProperty({ type: 'integer', description: 'Events matching the filters.', example: 1234 })
  total: number;

  @ApiProperty({
    type: EventCountByTypeDto,
    description: 'Events per detection type (every type, 0 included).',
  })
  by_detection_type: EventCountByTypeDto;

  @ApiProperty({
    type: EventCountByCameraDto,
    isArray: true,
    description: 'Cameras with at least one matching event, most events first.',
  })
  by_camera: EventCountByCameraDto[];

  @ApiProperty({
    type: 'integer',
    isArray: true,
    minItems: 24,
    maxItems: 24,
    description: 'Events per hour of the day, UTC: index 0 is 00:00-00:59.',
    example: [3, 1, 0, 0, 0, 2, 9, 14, 20, 18, 11, 9, 12, 10, 9, 13, 17, 22, 25, 19, 12, 8, 6, 4],
  })
  by_hour: number[];

  @ApiProperty({
    type: EventCountByDayDto,
    isArray: true,
    description: 'Events per UTC day, oldest first; days without events are left out.',
  })
  by_day: EventCountByDayDto[];

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Mean confidence (one decimal) of matching events that have one; null when none has.',
    example: 74.3,
  })
  average_confidence: number | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-01T06:12:00.000Z' })
  first_event_at: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T03:14:15.123Z' })
  last_event_at: string | null;
}

// ---------------------------------------------------------------------------------------------------
// Mapping

/** An event row with its camera's name (what the repository reads). */
export type EventWithCamera = Omit<EventEntity, 'camera' | 'aiCostUsd'> & {
  cameraName: string;
  /** numeric arrives from PostgreSQL as a string. */
  aiCostUsd: number | string | null;
};

/** Where the events resource is served (thumbnail URLs are made from it, in the service and in SQL). */
export const EVENTS_URL = '/api/v1/events';
export const thumbnailUrl = (eventId: string): string => `${EVENTS_URL}/${eventId}/thumbnail`;

/** The event record (GET /events/{id}, the list items and the `event.*` WebSocket payloads). */
export function toEventResponse(event: EventWithCamera): EventResponseDto {
  return {
    id: event.id,
    camera_id: event.cameraId,
    camera_name: event.cameraName,
    timestamp: event.timestamp.toISOString(),
    detection_type: event.detectionType,
    objects_detected: event.objectsDetected,
    confidence: event.confidence,
    description: event.description,
    description_status: event.descriptionStatus,
    source_type: event.sourceType,
    protect_event_id: event.protectEventId,
    thumbnail_url: event.imageFile ? thumbnailUrl(event.id) : null,
    provider_used: event.providerUsed,
    model_used: event.modelUsed,
    ai_confidence: event.aiConfidence,
    tokens_used: event.tokensUsed,
    ai_cost_usd: event.aiCostUsd === null ? null : Number(event.aiCostUsd),
    response_time_ms: event.responseTimeMs,
    reanalysis_count: event.reanalysisCount,
    reanalysed_at: isoOrNull(event.reanalysedAt),
    created_at: event.createdAt.toISOString(),
  };
}
