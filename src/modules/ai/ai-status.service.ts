import { Injectable } from '@nestjs/common';
import { ValidationFailedError } from '../../common/errors/app-errors';
import { isoOrNull } from '../../common/http/transforms';
import { AI_PROVIDER_NAMES } from '../settings/settings.registry';
import { SettingsService } from '../settings/settings.service';
import { AiRepository, UsageRow } from './ai.repository';
import { AiService } from './ai.service';
import { DescribeQueueService } from './describe-queue.service';
import {
  AiCapabilitiesDto,
  AiProvidersDto,
  AiRangeQueryDto,
  AiUsageDto,
  ContextMetricsDto,
  UsageFiguresDto,
} from './dto/ai.dto';
import { PromptService } from './prompt.service';
import { PROVIDER_DEFAULTS } from './providers/provider-factory';

/** Default range of GET /ai/usage and /ai/context-metrics. */
export const DEFAULT_RANGE_MS = 30 * 86_400_000;

const round6 = (value: number) => Math.round(value * 1_000_000) / 1_000_000;
const round1 = (value: number | null) => (value === null ? null : Math.round(value * 10) / 10);

function figures(row: UsageRow): UsageFiguresDto {
  return {
    calls: row.calls,
    successes: row.successes,
    failures: row.failures,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    tokens_used: row.input_tokens + row.output_tokens,
    cost_usd: round6(row.cost_usd),
    avg_latency_ms: row.avg_latency_ms,
  };
}

/** The range of a query: defaults filled in, `end` not before `start` (422). */
export function rangeOf(query: AiRangeQueryDto, now = new Date()): { start: Date; end: Date } {
  const end = query.end ?? now;
  const start = query.start ?? new Date(end.getTime() - DEFAULT_RANGE_MS);
  if (end.getTime() < start.getTime())
    throw new ValidationFailedError([{ field: 'query.end', message: 'end must not be before start' }]);
  return { start, end };
}

/** The read side of /ai: providers' state, capabilities, usage and context metrics (all from SQL aggregates). */
@Injectable()
export class AiStatusService {
  constructor(
    private readonly ai: AiService,
    private readonly repository: AiRepository,
    private readonly settings: SettingsService,
    private readonly queue: DescribeQueueService,
    private readonly prompts: PromptService,
  ) {}

  async providers(): Promise<AiProvidersDto> {
    const [states, readiness, spend, daily, monthly, depth] = await Promise.all([
      this.ai.providerStates(),
      this.ai.readiness(),
      this.ai.spend(),
      this.settings.get('ai_daily_cost_cap_usd'),
      this.settings.get('ai_monthly_cost_cap_usd'),
      this.repository.queueDepth(),
    ]);
    const stats = new Map(
      (await this.repository.providerStats(states.map((s) => s.name))).map((r) => [r.provider, r]),
    );
    let status: string;
    let detail: string | null = null;
    switch (readiness.state) {
      case 'ready':
        status = 'active';
        break;
      case 'off':
        status = 'off';
        detail = 'No AI provider is enabled and configured; new events stay pending until one is.';
        break;
      case 'paused':
        status = 'paused';
        detail = readiness.check.detail;
        break;
      case 'waiting':
        status = 'waiting';
        detail =
          "Every enabled provider's circuit is open after repeated failures" +
          (readiness.retryAt ? `; the next try is at ${readiness.retryAt.toISOString()}` : '');
        break;
    }
    return {
      status,
      status_detail: detail,
      spent_today_usd: round6(spend.today),
      spent_month_usd: round6(spend.month),
      daily_cost_cap_usd: daily,
      monthly_cost_cap_usd: monthly,
      queue: { due: depth.due, waiting: depth.waiting, in_progress: this.queue.inProgress },
      providers: states.map((s) => {
        const row = stats.get(s.name);
        return {
          name: s.name,
          label: s.label,
          enabled: s.enabled,
          configured: s.configured,
          problem: s.problem,
          model: s.model,
          position: s.position,
          timeout_ms: s.timeoutMs,
          circuit_state: s.circuit,
          consecutive_failures: s.consecutiveFailures,
          circuit_retry_at: isoOrNull(s.circuitRetryAt),
          local: s.capabilities.local,
          last_latency_ms: row?.last_latency_ms ?? null,
          avg_latency_ms: row?.avg_latency_ms ?? null,
          last_success_at: isoOrNull(row?.last_success_at ?? null),
          last_error: row?.last_error ?? null,
          last_error_at: isoOrNull(row?.last_error_at ?? null),
        };
      }),
    };
  }

  /** Per provider, from its documentation (an OpenAI-compatible server is local when its base URL is). */
  async capabilities(): Promise<AiCapabilitiesDto> {
    const states = new Map((await this.ai.providerStates()).map((s) => [s.name, s]));
    return {
      providers: AI_PROVIDER_NAMES.map((name) => {
        const defaults = PROVIDER_DEFAULTS[name];
        const capabilities = states.get(name)?.capabilities ?? defaults.capabilities;
        return {
          provider: name,
          label: defaults.label,
          ...capabilities,
          default_model: defaults.defaultModel,
          requires_api_key: defaults.requiresApiKey,
        };
      }),
    };
  }

  async usage(query: AiRangeQueryDto): Promise<AiUsageDto> {
    const { start, end } = rangeOf(query);
    const rows = await this.repository.usage(start, end);
    const total = rows.find((r) => r.grouping === 3);
    const empty: UsageFiguresDto = {
      calls: 0,
      successes: 0,
      failures: 0,
      input_tokens: 0,
      output_tokens: 0,
      tokens_used: 0,
      cost_usd: 0,
      avg_latency_ms: null,
    };
    return {
      start: start.toISOString(),
      end: end.toISOString(),
      totals: total ? figures(total) : empty,
      by_provider: rows
        .filter((r) => r.grouping === 1 && r.provider !== null)
        .map((r) => ({ provider: r.provider!, ...figures(r) }))
        .sort((a, b) => b.calls - a.calls || a.provider.localeCompare(b.provider)),
      by_day: rows
        .filter((r) => r.grouping === 2 && r.day !== null)
        .map((r) => ({ date: r.day!, ...figures(r) }))
        .sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0)),
    };
  }

  async contextMetrics(query: AiRangeQueryDto): Promise<ContextMetricsDto> {
    const { start, end } = rangeOf(query);
    const [row, enabled] = await Promise.all([
      this.repository.contextMetrics(start, end),
      this.settings.get('ai_context_enabled'),
    ]);
    const withContext = round1(row.avg_latency_with_context_ms);
    const without = round1(row.avg_latency_without_context_ms);
    return {
      start: start.toISOString(),
      end: end.toISOString(),
      context_enabled: enabled,
      requests: row.requests,
      requests_with_context: row.requests_with_context,
      avg_context_events: round1(row.avg_context_events),
      avg_context_tokens: round1(row.avg_context_tokens),
      cache_hits: this.prompts.cache.hits,
      cache_misses: this.prompts.cache.misses,
      avg_latency_with_context_ms: withContext,
      avg_latency_without_context_ms: without,
      latency_added_ms: withContext !== null && without !== null ? round1(withContext - without) : null,
    };
  }
}
