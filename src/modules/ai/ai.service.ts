import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { AI_PROVIDER_NAMES, AiProviderName, AiProviderSettings } from '../settings/settings.registry';
import { DeepReadonly, SettingsService } from '../settings/settings.service';
import {
  AiCancelledError,
  AiOffError,
  AiPausedError,
  AllProvidersFailedError,
  NoProviderAvailableError,
  ProviderFailure,
  ProviderNotUsableError,
} from './ai-errors';
import { AiRepository } from './ai.repository';
import {
  CircuitBreaker,
  CircuitBreakerOptions,
  CircuitState,
  DEFAULT_CIRCUIT_OPTIONS,
} from './circuit-breaker';
import { CapCheck, capPeriods, checkCaps } from './cost-caps';
import type { AiCallPurpose } from './entities/ai-call.entity';
import { costUsd } from './providers/pricing';
import { ProviderErrorWithUsage } from './providers/provider-errors';
import { createProvider, PROVIDER_DEFAULTS, resolveBaseUrl } from './providers/provider-factory';
import {
  ProviderCapabilities,
  ProviderError,
  VisionProvider,
  VisionResult,
} from './providers/vision-provider';

/** One request to the AI, answered by the first provider of the chain that succeeds. */
export interface AiRequest {
  image: Buffer;
  mimeType: 'image/jpeg' | 'image/png';
  prompt: string;
  /** Structured answer (VisionAnswer) or free text. */
  structured: boolean;
  purpose: AiCallPurpose;
  eventId?: string | null;
  /** The prompt's context block, for the ledger (GET /ai/context-metrics). */
  context?: { events: number; tokens: number };
  /** Only this provider: no fallback, and its circuit does not hold the request back. */
  provider?: AiProviderName;
  /** Aborts the call in flight (shutdown); the request then fails with AiCancelledError. */
  signal?: AbortSignal;
}

export interface AiOutcome<T> {
  /** What `accept` made of the provider's result. */
  value: T;
  result: VisionResult;
  provider: AiProviderName;
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Time of the successful call. */
  latencyMs: number;
}

/** Whether the queue may describe now. */
export type AiReadiness =
  | { state: 'ready'; timeoutsMs: number[] }
  | { state: 'off' }
  | { state: 'paused'; check: Extract<CapCheck, { paused: true }> }
  | { state: 'waiting'; retryAt: Date | null };

/** A provider's settings made usable: its client, effective model, and what it lacks (if anything). */
interface ProviderEntry {
  name: AiProviderName;
  settings: DeepReadonly<AiProviderSettings>;
  client: VisionProvider;
  model: string;
  /** Why it cannot be used although enabled (no API key, no base URL, no model); null when it can. */
  problem: string | null;
  fingerprint: string;
}

export interface ProviderState {
  name: AiProviderName;
  label: string;
  enabled: boolean;
  configured: boolean;
  problem: string | null;
  model: string;
  position: number | null;
  circuit: CircuitState;
  consecutiveFailures: number;
  circuitRetryAt: Date | null;
  timeoutMs: number;
  capabilities: ProviderCapabilities;
}

/** What a provider needs before it can be called, from its settings; null when it has it all. */
export function configurationProblem(
  name: AiProviderName,
  settings: DeepReadonly<AiProviderSettings>,
): string | null {
  const defaults = PROVIDER_DEFAULTS[name];
  if (defaults.requiresApiKey && !settings.api_key?.trim()) return 'no API key is configured';
  if (resolveBaseUrl(name, settings.base_url) === null) return 'no base URL is configured';
  if (!(settings.model.trim() || defaults.defaultModel)) return 'no model is configured';
  return null;
}

const fingerprintOf = (settings: DeepReadonly<AiProviderSettings>) =>
  JSON.stringify([settings.api_key, settings.model, settings.base_url, settings.timeout_ms]);

/**
 * The AI engine: turns the `ai_providers` settings into provider clients (rebuilt when a provider's settings
 * change, on any instance), runs a request along the fallback chain (`ai_provider_order`, enabled and
 * configured providers only), keeps a circuit breaker per provider, writes a ledger row (`ai_calls`) for
 * every provider call, successful or not, and enforces the cost caps.
 *
 * Circuit breakers live in memory, per instance: each instance learns on its own that a provider is down.
 */
@Injectable()
export class AiService {
  private readonly logger = new Logger('AiService');
  private readonly breakers = new Map<AiProviderName, { fingerprint: string; breaker: CircuitBreaker }>();
  private entries = new Map<AiProviderName, ProviderEntry>();
  private entriesSource: unknown = null;
  private circuitOptions: CircuitBreakerOptions = DEFAULT_CIRCUIT_OPTIONS;

  constructor(
    private readonly settings: SettingsService,
    private readonly repository: AiRepository,
  ) {}

  /**
   * Changes the breakers' numbers (fresh breakers for every provider). The defaults are the constants of
   * circuit-breaker.ts; tests shorten the open time to watch a circuit recover.
   */
  configureCircuits(options: Partial<CircuitBreakerOptions>): void {
    this.circuitOptions = { ...this.circuitOptions, ...options };
    this.breakers.clear();
  }

  /** Runs a request along the chain. `accept` may refuse a result with a `malformed` ProviderError. */
  async run<T = VisionResult>(
    request: AiRequest,
    accept?: (result: VisionResult, provider: AiProviderName) => T,
  ): Promise<AiOutcome<T>> {
    const chain = await this.chainFor(request.provider);
    const cap = await this.capCheck();
    if (cap.paused) throw new AiPausedError(cap.detail, cap.until);
    const failures: ProviderFailure[] = [];
    let attempted = false;
    let retryAt: number | null = null;
    for (const entry of chain) {
      const breaker = this.breakerOf(entry);
      if (!breaker.tryAcquire() && request.provider === undefined) {
        const at = breaker.retryAt;
        if (at !== null && (retryAt === null || at < retryAt)) retryAt = at;
        continue;
      }
      attempted = true;
      const outcome = await this.call(entry, breaker, request, accept);
      if ('failure' in outcome) failures.push(outcome.failure);
      else return outcome;
    }
    if (!attempted) throw new NoProviderAvailableError(retryAt === null ? null : new Date(retryAt));
    throw new AllProvidersFailedError(failures);
  }

  /** One provider call: ledger row, breaker outcome. */
  private async call<T>(
    entry: ProviderEntry,
    breaker: CircuitBreaker,
    request: AiRequest,
    accept: ((result: VisionResult, provider: AiProviderName) => T) | undefined,
  ): Promise<AiOutcome<T> | { failure: ProviderFailure }> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const row = {
      provider: entry.name,
      purpose: request.purpose,
      eventId: request.eventId ?? null,
      contextEvents: request.context?.events ?? 0,
      contextTokens: request.context?.tokens ?? 0,
    };
    let result: VisionResult | null = null;
    try {
      result = await entry.client.describe({
        image: request.image,
        mimeType: request.mimeType,
        prompt: request.prompt,
        structured: request.structured,
        model: entry.model,
        timeoutMs: entry.settings.timeout_ms,
        signal: request.signal,
      });
      if (request.structured && !result.answer)
        throw new ProviderError(entry.name, 'malformed', 'the answer has no structured content');
      const value = accept ? accept(result, entry.name) : (result as T);
      const latencyMs = elapsed();
      const model = result.model || entry.model;
      const cost = costUsd(entry.name, model, result.inputTokens, result.outputTokens);
      breaker.success();
      await this.record({
        ...row,
        model,
        success: true,
        error: null,
        inputTokens: result.inputTokens,
        outputTokens: result.outputTokens,
        costUsd: cost,
        latencyMs,
      });
      return {
        value,
        result,
        provider: entry.name,
        model,
        inputTokens: result.inputTokens,
        outputTokens: result.outputTokens,
        costUsd: cost,
        latencyMs,
      };
    } catch (error) {
      const latencyMs = elapsed();
      // A result refused by `accept` (or without an answer), and a malformed answer the client rejected, still
      // used (and cost) their tokens.
      const usage = error instanceof ProviderErrorWithUsage ? error.usage : null;
      const inputTokens = result?.inputTokens ?? usage?.inputTokens ?? 0;
      const outputTokens = result?.outputTokens ?? usage?.outputTokens ?? 0;
      const model = result?.model || usage?.model || entry.model;
      const failed = {
        ...row,
        model,
        success: false,
        inputTokens,
        outputTokens,
        costUsd: costUsd(entry.name, model, inputTokens, outputTokens),
        latencyMs,
      };
      if (request.signal?.aborted) {
        breaker.release();
        await this.record({ ...failed, error: 'cancelled: the service is shutting down' });
        throw new AiCancelledError();
      }
      const failure =
        error instanceof ProviderError
          ? { provider: entry.name, kind: error.kind, message: error.message }
          : {
              provider: entry.name,
              kind: 'server',
              message: `unexpected failure: ${(error as Error).message}`,
            };
      breaker.failure();
      await this.record({ ...failed, error: `${failure.kind}: ${failure.message}`.slice(0, 2000) });
      this.logger.warn({
        msg: 'AI provider call failed',
        provider: entry.name,
        purpose: request.purpose,
        event_id: request.eventId ?? undefined,
        kind: failure.kind,
        error: failure.message,
        latency_ms: latencyMs,
        circuit: breaker.state,
      });
      return { failure };
    }
  }

  private async record(row: Parameters<AiRepository['insertCall']>[0]): Promise<void> {
    try {
      await this.repository.insertCall(row);
    } catch (error) {
      // The answer is still good; the ledger (and with it the caps) misses one row. Say so loudly.
      this.logger.error({
        msg: 'Could not write an AI ledger row',
        provider: row.provider,
        error: (error as Error).message,
      });
    }
  }

  /** The enabled, configured providers in fallback order (or only `only`: 409 when it cannot be used). */
  private async chainFor(only?: AiProviderName): Promise<ProviderEntry[]> {
    const entries = await this.providerEntries();
    if (only !== undefined) {
      const entry = entries.get(only)!;
      if (!entry.settings.enabled) throw new ProviderNotUsableError(only, 'it is not enabled');
      if (entry.problem) throw new ProviderNotUsableError(only, entry.problem);
      return [entry];
    }
    const chain = await this.chain();
    if (chain.length === 0) throw new AiOffError();
    return chain;
  }

  private async chain(): Promise<ProviderEntry[]> {
    const entries = await this.providerEntries();
    const order = await this.settings.get('ai_provider_order');
    return order.map((name) => entries.get(name)!).filter((e) => e.settings.enabled && e.problem === null);
  }

  /** Whether the queue may describe now, and if not, why. */
  async readiness(): Promise<AiReadiness> {
    const chain = await this.chain();
    if (chain.length === 0) return { state: 'off' };
    const cap = await this.capCheck();
    if (cap.paused) return { state: 'paused', check: cap };
    const breakers = chain.map((entry) => this.breakerOf(entry));
    if (!breakers.some((b) => b.available)) {
      const at = Math.min(...breakers.map((b) => b.retryAt ?? Number.POSITIVE_INFINITY));
      return { state: 'waiting', retryAt: Number.isFinite(at) ? new Date(at) : null };
    }
    return { state: 'ready', timeoutsMs: chain.map((e) => e.settings.timeout_ms) };
  }

  /** Spending against the caps, from the ledger. */
  async capCheck(now = new Date()): Promise<CapCheck> {
    const [daily, monthly] = await Promise.all([
      this.settings.get('ai_daily_cost_cap_usd'),
      this.settings.get('ai_monthly_cost_cap_usd'),
    ]);
    if (daily === null && monthly === null) return { paused: false };
    return checkCaps(await this.spend(now), { daily, monthly }, now);
  }

  async spend(now = new Date()): Promise<{ today: number; month: number }> {
    const periods = capPeriods(now);
    return this.repository.spend(periods.dayStart, periods.monthStart);
  }

  /** Every provider's settings, state and circuit, in fallback order (then the rest). */
  async providerStates(): Promise<ProviderState[]> {
    const entries = await this.providerEntries();
    const order = await this.settings.get('ai_provider_order');
    const names = [...order, ...AI_PROVIDER_NAMES.filter((n) => !order.includes(n))];
    return names.map((name) => {
      const entry = entries.get(name)!;
      const breaker = this.breakerOf(entry);
      const position = order.indexOf(name);
      return {
        name,
        label: PROVIDER_DEFAULTS[name].label,
        enabled: entry.settings.enabled,
        configured: entry.settings.enabled && entry.problem === null,
        problem: entry.problem,
        model: entry.model,
        position: position === -1 ? null : position + 1,
        circuit: breaker.state,
        consecutiveFailures: breaker.failures,
        circuitRetryAt:
          breaker.state === 'open' && breaker.retryAt !== null ? new Date(breaker.retryAt) : null,
        timeoutMs: entry.settings.timeout_ms,
        capabilities: entry.client.capabilities,
      };
    });
  }

  private breakerOf(entry: ProviderEntry): CircuitBreaker {
    const known = this.breakers.get(entry.name);
    if (known && known.fingerprint === entry.fingerprint) return known.breaker;
    // New or changed settings (key, model, URL): the provider gets a fresh start.
    const breaker = new CircuitBreaker(this.circuitOptions);
    this.breakers.set(entry.name, { fingerprint: entry.fingerprint, breaker });
    return breaker;
  }

  /**
   * The clients, rebuilt for the providers whose settings changed since the last call. The settings cache
   * hands out a new (frozen) value after every change on any instance, so comparing it is enough.
   */
  private async providerEntries(): Promise<Map<AiProviderName, ProviderEntry>> {
    const providers = await this.settings.get('ai_providers');
    if (providers === this.entriesSource) return this.entries;
    const next = new Map<AiProviderName, ProviderEntry>();
    for (const name of AI_PROVIDER_NAMES) {
      const settings = providers[name];
      const fingerprint = fingerprintOf(settings);
      const known = this.entries.get(name);
      if (known && known.fingerprint === fingerprint) {
        next.set(name, { ...known, settings });
        continue;
      }
      const client = createProvider({
        name,
        apiKey: settings.api_key?.trim() || null,
        model: settings.model,
        baseUrl: settings.base_url,
        timeoutMs: settings.timeout_ms,
      });
      next.set(name, {
        name,
        settings,
        client,
        model: settings.model.trim() || client.defaultModel,
        problem: configurationProblem(name, settings),
        fingerprint,
      });
    }
    this.entries = next;
    this.entriesSource = providers;
    return next;
  }
}
