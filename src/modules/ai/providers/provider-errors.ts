import type { AiProviderName } from '../../settings/settings.registry';
import { ProviderError, type ProviderErrorKind } from './vision-provider';

/** A class an SDK throws, to recognise its errors with `instanceof`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ErrorClass = abstract new (...args: any[]) => Error;

export interface ErrorContext {
  provider: AiProviderName;
  /** Removed from every message. */
  apiKey: string | null;
  /** Where the client connects (named in network errors; credentials in it are never shown). */
  baseUrl: string;
  /** The SDK's errors for a request that timed out or was aborted, and for one that could not connect. */
  timeoutErrors?: ErrorClass[];
  connectionErrors?: ErrorClass[];
}

const MAX_DETAIL_LENGTH = 300;
const REDACTED = '[redacted]';
// Key formats of the providers, also in the masked form some APIs echo ("sk-proj-****abcd").
const KEY_PATTERNS = /\b(?:sk-[\w*-]{6,}|xai-[\w*-]{6,}|AIza[\w-]{20,})/g;

/**
 * Turns whatever an SDK threw into a ProviderError: by HTTP status (401/403 auth, 408 timeout, 429
 * rate_limited, 5xx server, other 4xx bad_request), else timeouts and aborts (timeout), connection failures
 * (network), an unreadable response body (malformed). The provider's own message is kept, shortened and
 * without the API key.
 */
export function toProviderError(err: unknown, context: ErrorContext): ProviderError {
  if (err instanceof ProviderError) return err;
  const { provider } = context;
  const status = statusOf(err);
  if (status !== undefined) {
    const detail = serverDetail(err, context.apiKey);
    const kind = kindForStatus(status);
    return new ProviderError(
      provider,
      kind,
      `${STATUS_TEXT[kind]} (HTTP ${status})${detail ? `: ${detail}` : ''}`,
      status,
    );
  }
  if (isOneOf(err, context.timeoutErrors) || isAbort(err)) {
    return new ProviderError(provider, 'timeout', 'the request timed out or was aborted');
  }
  if (isOneOf(err, context.connectionErrors) || isFetchFailure(err)) {
    const code = causeCode(err);
    return new ProviderError(
      provider,
      'network',
      `could not reach ${safeOrigin(context.baseUrl)}${code ? ` (${code})` : ''}`,
    );
  }
  if ((err as { name?: unknown } | null)?.name === 'SyntaxError') {
    return new ProviderError(provider, 'malformed', 'the response is not valid JSON');
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(
    provider,
    'server',
    `unexpected failure: ${redactSecrets(shorten(message), context.apiKey)}`,
  );
}

/** What one call used, also when its answer turned out unusable. */
export interface CallUsage {
  model: string;
  inputTokens: number;
  outputTokens: number;
}

/**
 * A failure after the provider answered: the answer was malformed, cut off or refused, but its tokens were
 * used and are billed. Still a plain ProviderError to anyone who does not care; `usage` lets the ledger
 * count what the call cost.
 */
export class ProviderErrorWithUsage extends ProviderError {
  constructor(
    error: ProviderError,
    readonly usage: CallUsage,
  ) {
    super(error.provider, error.kind, error.message, error.status);
  }
}

/** Runs the checks of an answer; a ProviderError they throw comes out carrying the call's usage. */
export function checkAnswer<T>(usage: CallUsage, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof ProviderError) throw new ProviderErrorWithUsage(err, usage);
    throw err;
  }
}

export function kindForStatus(status: number): ProviderErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server';
  return 'bad_request';
}

const STATUS_TEXT: Record<ProviderErrorKind, string> = {
  auth: 'authentication failed',
  timeout: 'the provider timed out',
  rate_limited: 'rate limited',
  server: 'server error',
  bad_request: 'request rejected',
  malformed: 'malformed answer',
  network: 'network error',
  not_configured: 'not configured',
};

/** Removes the API key (and anything shaped like a provider key, even masked) from a text. */
export function redactSecrets(text: string, apiKey: string | null): string {
  let out = text;
  if (apiKey && apiKey.length >= 4) out = out.split(apiKey).join(REDACTED);
  return out.replace(KEY_PATTERNS, REDACTED);
}

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 100 && status <= 599 ? status : undefined;
}

/**
 * The provider's explanation from an SDK error: the OpenAI and Anthropic SDKs put "<status> <message or
 * JSON>" in `message`, the Gemini SDK the error body as JSON. JSON bodies are reduced to their message.
 */
function serverDetail(err: unknown, apiKey: string | null): string {
  const raw = err instanceof Error ? err.message : '';
  let text = raw.replace(/^\d{3}\s+/, '').trim();
  if (text.startsWith('{')) {
    try {
      text = messageOf(JSON.parse(text)) ?? text;
    } catch {
      // not JSON after all: keep the text
    }
  }
  if (/^status code \(no body\)$/.test(text)) return '';
  return redactSecrets(shorten(text), apiKey);
}

function messageOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as { message?: unknown; error?: unknown };
  if (typeof record.message === 'string') return record.message;
  if (typeof record.error === 'string') return record.error;
  return messageOf(record.error);
}

function isOneOf(err: unknown, classes: ErrorClass[] | undefined): boolean {
  return (classes ?? []).some((cls) => err instanceof cls);
}

function isAbort(err: unknown): boolean {
  return someCause(err, (e) => e.name === 'AbortError' || e.name === 'TimeoutError');
}

/**
 * fetch (undici) rejects with `TypeError: fetch failed` and the socket error as `cause`; some SDKs wrap it
 * once more. Checked by name, not instanceof: the error may come from another realm (Node's own fetch seen
 * from a VM context such as Jest's).
 */
function isFetchFailure(err: unknown): boolean {
  return someCause(err, (e) => e.name === 'TypeError' && /fetch failed/i.test(e.message));
}

function someCause(err: unknown, test: (e: { name: string; message: string }) => boolean): boolean {
  let current: unknown = err;
  for (let depth = 0; typeof current === 'object' && current !== null && depth < 6; depth++) {
    const { name, message } = current as { name?: unknown; message?: unknown };
    if (typeof name === 'string' && test({ name, message: typeof message === 'string' ? message : '' }))
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The first system error code (ECONNREFUSED, ENOTFOUND, UND_ERR_SOCKET…) along the `cause` chain. */
function causeCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; current && depth < 6; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** scheme://host:port of a base URL, never its credentials or path. */
export function safeOrigin(baseUrl: string): string {
  try {
    return new URL(baseUrl).origin;
  } catch {
    return 'the provider';
  }
}

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_DETAIL_LENGTH ? `${flat.slice(0, MAX_DETAIL_LENGTH)}…` : flat;
}
