import { LoggerService } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LogLevel } from '../../config/config';

/** The request id of the request being handled, so every log line it causes carries it. */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };
const SECRET_KEYS = /password|secret|token|authorization|cookie|^(x-)?api[_-]?key$|^key$/i;

/** Replaces the values of secret-looking fields, at any depth, before a line is written. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 5 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

/**
 * Structured JSON logs, one object per line on stdout: time, level, context, msg, request_id and the
 * fields passed. Secret-looking fields are redacted.
 */
export class JsonLogger implements LoggerService {
  constructor(private readonly level: LogLevel = 'info') {}

  log(message: unknown, context?: string): void {
    this.write('info', message, context);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest.at(-1) as string | undefined);
  }
  warn(message: unknown, context?: string): void {
    this.write('warn', message, context);
  }
  debug(message: unknown, context?: string): void {
    this.write('debug', message, context);
  }
  verbose(message: unknown, context?: string): void {
    this.write('debug', message, context);
  }
  fatal(message: unknown, context?: string): void {
    this.write('error', message, context);
  }

  private write(level: LogLevel, message: unknown, context?: string): void {
    if (RANK[level] > RANK[this.level]) return;
    const fields =
      typeof message === 'object' && message !== null
        ? (redact(message) as Record<string, unknown>)
        : { msg: String(message) };
    const line = {
      time: new Date().toISOString(),
      level,
      context: typeof context === 'string' ? context : undefined,
      request_id: requestScope.getStore()?.requestId,
      ...fields,
    };
    process.stdout.write(JSON.stringify(line) + '\n');
  }
}
