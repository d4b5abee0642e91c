import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsIn, IsOptional, IsString, IsUUID, Length, ValidateIf } from 'class-validator';
import { trimString } from '../../../common/http/transforms';
import { DETECTION_TYPES } from '../../events/entities/event.entity';
import { AI_PROVIDER_NAMES, type AiProviderName } from '../../settings/settings.registry';
import { FEEDBACK_RATINGS, type FeedbackRating } from '../entities/event-feedback.entity';

/** Largest prompt a request may carry (the `ai_prompt` setting's limit). */
export const MAX_PROMPT_LENGTH = 4000;
export const MAX_CORRECTION_LENGTH = 2000;

/** Optional, but not nullable. */
const IfPresent = () => ValidateIf((_object: unknown, value: unknown) => value !== undefined);

const lowerCase = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' ? value.trim().toLowerCase() : value;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * An ISO 8601 date (`2026-11-22`: the start of that UTC day, or its last millisecond for a range's end) or
 * date-time (UTC when no zone is given) -> Date; anything else is left to fail @IsDate.
 */
export function toRangeBound(endOfDay: boolean) {
  return ({ value }: { value: unknown }): unknown => {
    if (typeof value !== 'string') return value;
    const text = value.trim();
    let date: Date;
    if (DATE_ONLY.test(text)) {
      date = new Date(`${text}T00:00:00Z`);
      // 2026-02-30 would roll over into March: not a date.
      if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text) return value;
      if (endOfDay) date = new Date(date.getTime() + 86_400_000 - 1);
    } else if (DATE_TIME.test(text)) {
      date = new Date(/(Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`);
    } else {
      return value;
    }
    return Number.isNaN(date.getTime()) ? value : date;
  };
}

// ---------------------------------------------------------------------------------------------------
// Requests

export class DescribeImageDto {
  @ApiPropertyOptional({
    description:
      'A JPEG or PNG image, base64 (a `data:image/...;base64,` prefix and line breaks are allowed), at most 10 MiB decoded.',
    type: String,
    format: 'byte',
  })
  @IfPresent()
  @IsString()
  image_base64?: string;

  @ApiPropertyOptional({ description: "Describe this event's stored image.", format: 'uuid' })
  @IfPresent()
  @Transform(lowerCase)
  @IsUUID('all', { message: 'event_id must be a UUID' })
  event_id?: string;

  @ApiPropertyOptional({ description: "Describe this running camera's current snapshot.", format: 'uuid' })
  @IfPresent()
  @Transform(lowerCase)
  @IsUUID('all', { message: 'camera_id must be a UUID' })
  camera_id?: string;

  @ApiPropertyOptional({
    description:
      'Instructions instead of the `ai_prompt` setting (the camera instructions, name and local time are still added).',
    minLength: 1,
    maxLength: MAX_PROMPT_LENGTH,
  })
  @IfPresent()
  @Transform(trimString)
  @IsString()
  @Length(1, MAX_PROMPT_LENGTH)
  prompt?: string;

  @ApiPropertyOptional({
    description:
      'Only this provider (no fallback; it must be enabled and configured). Default: the fallback chain.',
    enum: AI_PROVIDER_NAMES,
  })
  @IfPresent()
  @IsIn(AI_PROVIDER_NAMES, { message: `provider must be one of: ${AI_PROVIDER_NAMES.join(', ')}` })
  provider?: AiProviderName;
}

/** A date range; default: the 30 days up to now. */
export class AiRangeQueryDto {
  @ApiPropertyOptional({
    description:
      'Start (inclusive): an ISO 8601 date (the start of that UTC day) or date-time. Default: 30 days before `end`.',
    type: String,
    example: '2026-11-01',
  })
  @IsOptional()
  @Transform(toRangeBound(false))
  @IsDate({ message: 'start must be an ISO 8601 date or date-time' })
  start?: Date;

  @ApiPropertyOptional({
    description:
      'End (inclusive): an ISO 8601 date (up to the end of that UTC day) or date-time. Default: now. Not before `start`.',
    type: String,
    example: '2026-11-30',
  })
  @IsOptional()
  @Transform(toRangeBound(true))
  @IsDate({ message: 'end must be an ISO 8601 date or date-time' })
  end?: Date;
}

export class RefinePromptDto {
  @ApiPropertyOptional({
    description: 'The prompt to improve. Default: the `ai_prompt` setting.',
    minLength: 1,
    maxLength: MAX_PROMPT_LENGTH,
  })
  @IfPresent()
  @Transform(trimString)
  @IsString()
  @Length(1, MAX_PROMPT_LENGTH)
  prompt?: string;

  @ApiPropertyOptional({
    description: 'Ask only this provider (it must be enabled and configured). Default: the fallback chain.',
    enum: AI_PROVIDER_NAMES,
  })
  @IfPresent()
  @IsIn(AI_PROVIDER_NAMES, { message: `provider must be one of: ${AI_PROVIDER_NAMES.join(', ')}` })
  provider?: AiProviderName;
}

export class CreateFeedbackDto {
  @ApiProperty({ enum: FEEDBACK_RATINGS, description: 'Whether the description was helpful.' })
  @IsIn(FEEDBACK_RATINGS, { message: `rating must be one of: ${FEEDBACK_RATINGS.join(', ')}` })
  rating: FeedbackRating;

  @ApiPropertyOptional({
    description: 'What the description should have said (1 to 2000 characters).',
    type: String,
    nullable: true,
    maxLength: MAX_CORRECTION_LENGTH,
    example: 'It is the postman, not a stranger.',
  })
  @IsOptional()
  @Transform(trimString)
  @IsString()
  @Length(1, MAX_CORRECTION_LENGTH)
  correction?: string | null;
}

// ---------------------------------------------------------------------------------------------------
// Responses

export const CIRCUIT_STATES = ['closed', 'open', 'half_open'] as const;
export const AI_STATES = ['active', 'off', 'paused', 'waiting'] as const;

export class AiProviderStatusDto {
  @ApiProperty({ enum: AI_PROVIDER_NAMES, example: 'openai' })
  name: string;

  @ApiProperty({ example: 'OpenAI' })
  label: string;

  @ApiProperty({ description: 'Enabled in the settings.' })
  enabled: boolean;

  @ApiProperty({ description: 'Enabled and has what it needs (API key where required, base URL, model).' })
  configured: boolean;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'What it lacks, when it cannot be used (whether enabled or not).',
    example: null,
  })
  problem: string | null;

  @ApiProperty({
    description: 'The model used (the setting, or the provider default).',
    example: 'gpt-4o-mini',
  })
  model: string;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Place in `ai_provider_order` (1 = tried first); null when not in the order.',
    example: 1,
  })
  position: number | null;

  @ApiProperty({ type: 'integer', example: 30000 })
  timeout_ms: number;

  @ApiProperty({
    enum: CIRCUIT_STATES,
    description:
      'closed: used. open: skipped after 3 consecutive failures. half_open: the next request probes it. Per instance.',
  })
  circuit_state: string;

  @ApiProperty({
    type: 'integer',
    description: 'Failures since its last success (this instance).',
    example: 0,
  })
  consecutive_failures: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When an open circuit lets a probe through.',
    example: null,
  })
  circuit_retry_at: string | null;

  @ApiProperty({ description: 'Runs on your own network (images never leave it).' })
  local: boolean;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Latency of its latest successful call.',
    example: 1840,
  })
  last_latency_ms: number | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Mean latency of its last 100 successful calls.',
    example: 1720,
  })
  avg_latency_ms: number | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T03:14:17.000Z' })
  last_success_at: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why its latest failed call failed (from the ledger; never a key).',
    example: 'server: server error (HTTP 500)',
  })
  last_error: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null })
  last_error_at: string | null;
}

export class AiQueueStatusDto {
  @ApiProperty({ type: 'integer', description: 'Events due for a description now.', example: 0 })
  due: number;

  @ApiProperty({
    type: 'integer',
    description: 'Events waiting for a description (due now, being described, or retried later).',
    example: 2,
  })
  waiting: number;

  @ApiProperty({ type: 'integer', description: 'Being described by this instance.', example: 1 })
  in_progress: number;
}

export class AiProvidersDto {
  @ApiProperty({
    enum: AI_STATES,
    description:
      'active: describing. off: no provider is enabled and configured. paused: a cost cap is reached. ' +
      "waiting: every provider's circuit is open.",
  })
  status: string;

  @ApiProperty({ type: String, nullable: true, description: 'Why AI is not active.', example: null })
  status_detail: string | null;

  @ApiProperty({ type: Number, description: 'Spent today (UTC), US dollars.', example: 0.0123 })
  spent_today_usd: number;

  @ApiProperty({ type: Number, description: 'Spent this month (UTC), US dollars.', example: 0.4821 })
  spent_month_usd: number;

  @ApiProperty({ type: Number, nullable: true, example: 1.5 })
  daily_cost_cap_usd: number | null;

  @ApiProperty({ type: Number, nullable: true, example: 30 })
  monthly_cost_cap_usd: number | null;

  @ApiProperty({ type: AiQueueStatusDto })
  queue: AiQueueStatusDto;

  @ApiProperty({
    type: AiProviderStatusDto,
    isArray: true,
    description: 'Every provider: those of `ai_provider_order` in that order, then the others.',
  })
  providers: AiProviderStatusDto[];
}

export class DescribeResultDto {
  @ApiProperty({ example: 'A courier in a brown uniform leaves a parcel at the front door.' })
  description: string;

  @ApiProperty({ enum: DETECTION_TYPES, example: 'package' })
  detection_type: string;

  @ApiProperty({ type: String, isArray: true, example: ['person', 'package'] })
  objects_detected: string[];

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: 100,
    description: "The model's confidence.",
    example: 88,
  })
  confidence: number;

  @ApiProperty({ enum: AI_PROVIDER_NAMES, example: 'openai' })
  provider: string;

  @ApiProperty({ example: 'gpt-4o-mini-2024-07-18' })
  model: string;

  @ApiProperty({ type: 'integer', example: 1105 })
  input_tokens: number;

  @ApiProperty({ type: 'integer', example: 48 })
  output_tokens: number;

  @ApiProperty({ type: 'integer', description: 'input_tokens + output_tokens.', example: 1153 })
  tokens_used: number;

  @ApiProperty({ type: Number, description: 'US dollars, at list price.', example: 0.000195 })
  cost_usd: number;

  @ApiProperty({ type: 'integer', description: 'Time of the successful provider call.', example: 1840 })
  response_time_ms: number;
}

export class UsageFiguresDto {
  @ApiProperty({
    type: 'integer',
    description: 'Provider calls (each try of the fallback chain counts).',
    example: 120,
  })
  calls: number;

  @ApiProperty({ type: 'integer', example: 117 })
  successes: number;

  @ApiProperty({ type: 'integer', example: 3 })
  failures: number;

  @ApiProperty({ type: 'integer', example: 132600 })
  input_tokens: number;

  @ApiProperty({ type: 'integer', example: 5760 })
  output_tokens: number;

  @ApiProperty({ type: 'integer', description: 'input_tokens + output_tokens.', example: 138360 })
  tokens_used: number;

  @ApiProperty({ type: Number, description: 'US dollars.', example: 0.023346 })
  cost_usd: number;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Mean latency of the successful calls; null without one.',
    example: 1720,
  })
  avg_latency_ms: number | null;
}

export class ProviderUsageDto extends UsageFiguresDto {
  @ApiProperty({ example: 'openai' })
  provider: string;
}

export class DayUsageDto extends UsageFiguresDto {
  @ApiProperty({ type: String, format: 'date', description: 'UTC day.', example: '2026-11-22' })
  date: string;
}

export class AiUsageDto {
  @ApiProperty({ type: String, format: 'date-time', example: '2026-10-23T10:00:00.000Z' })
  start: string;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T10:00:00.000Z' })
  end: string;

  @ApiProperty({ type: UsageFiguresDto })
  totals: UsageFiguresDto;

  @ApiProperty({
    type: ProviderUsageDto,
    isArray: true,
    description: 'Providers with calls, most calls first.',
  })
  by_provider: ProviderUsageDto[];

  @ApiProperty({ type: DayUsageDto, isArray: true, description: 'UTC days with calls, oldest first.' })
  by_day: DayUsageDto[];
}

export class ProviderCapabilitiesDto {
  @ApiProperty({ enum: AI_PROVIDER_NAMES, example: 'gemini' })
  provider: string;

  @ApiProperty({ example: 'Google Gemini' })
  label: string;

  @ApiProperty({ description: 'Understands images.' })
  vision: boolean;

  @ApiProperty({ type: 'integer', description: 'Images per request.', example: 3600 })
  max_images: number;

  @ApiProperty({ type: 'integer', description: 'Size of one image, bytes.', example: 20971520 })
  max_image_bytes: number;

  @ApiProperty({ description: 'Answers follow a JSON schema.' })
  structured_output: boolean;

  @ApiProperty({ description: 'Understands video.' })
  video: boolean;

  @ApiProperty({ description: 'Can stream its answer.' })
  streaming: boolean;

  @ApiProperty({
    description: 'Runs on your own hardware (for an OpenAI-compatible server: its base URL is local).',
  })
  local: boolean;

  @ApiProperty({
    description: "The model used when the settings name none ('' = a model must be set).",
    example: 'gemini-2.5-flash',
  })
  default_model: string;

  @ApiProperty({ description: 'Needs an API key.' })
  requires_api_key: boolean;
}

export class AiCapabilitiesDto {
  @ApiProperty({ type: ProviderCapabilitiesDto, isArray: true })
  providers: ProviderCapabilitiesDto[];
}

export class ContextMetricsDto {
  @ApiProperty({ type: String, format: 'date-time' })
  start: string;

  @ApiProperty({ type: String, format: 'date-time' })
  end: string;

  @ApiProperty({ description: 'The `ai_context_enabled` setting now.' })
  context_enabled: boolean;

  @ApiProperty({
    type: 'integer',
    description: 'Event description calls (describe and re-analyse) in the range.',
    example: 240,
  })
  requests: number;

  @ApiProperty({ type: 'integer', description: 'Those whose prompt carried context.', example: 180 })
  requests_with_context: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Mean number of earlier events added, over the requests with context.',
    example: 3.2,
  })
  avg_context_events: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'Mean approximate tokens (characters / 4) the context added, over the requests with context.',
    example: 96.5,
  })
  avg_context_tokens: number | null;

  @ApiProperty({
    type: 'integer',
    description: 'Context lookups served from the cache (this instance, since start).',
    example: 41,
  })
  cache_hits: number;

  @ApiProperty({
    type: 'integer',
    description: 'Context lookups that queried the database (this instance, since start).',
    example: 139,
  })
  cache_misses: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Mean latency of successful calls with context.',
    example: 1905.4,
  })
  avg_latency_with_context_ms: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Mean latency of successful calls without context.',
    example: 1780.2,
  })
  avg_latency_without_context_ms: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'avg_latency_with_context_ms - avg_latency_without_context_ms; null unless both are known.',
    example: 125.2,
  })
  latency_added_ms: number | null;
}

export class RefinePromptResultDto {
  @ApiProperty({ description: 'The improved prompt (fits the `ai_prompt` setting: 1 to 4000 characters).' })
  suggested_prompt: string;

  @ApiProperty({ description: 'What was changed and why.' })
  summary: string;

  @ApiProperty({
    type: 'integer',
    description: 'Rated descriptions the suggestion is based on.',
    example: 12,
  })
  feedback_used: number;

  @ApiProperty({ enum: AI_PROVIDER_NAMES, example: 'anthropic' })
  provider: string;

  @ApiProperty({ example: 'claude-haiku-4-5' })
  model: string;
}

export class FeedbackResponseDto {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'uuid' })
  event_id: string;

  @ApiProperty({ enum: FEEDBACK_RATINGS, example: 'not_helpful' })
  rating: string;

  @ApiProperty({ type: String, nullable: true, example: 'It is the postman, not a stranger.' })
  correction: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The description that was rated, as it was then.',
    example: 'A stranger walks to the door.',
  })
  description: string | null;

  @ApiProperty({ type: String, format: 'date-time' })
  created_at: string;
}

export class ReanalyseResponseDto {
  @ApiProperty({ format: 'uuid' })
  event_id: string;

  @ApiProperty({ enum: ['queued'], example: 'queued' })
  status: 'queued';
}
