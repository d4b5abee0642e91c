import type { Response } from 'express';

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Epoch milliseconds at which the current window ends. */
  resetAt: number;
}

/** Writes X-RateLimit-Limit/Remaining/Reset (Reset in Unix epoch seconds, decisions.md §3). */
export function applyRateLimitHeaders(res: Response, state: RateLimitState | undefined): void {
  if (!state || res.headersSent) return;
  res.setHeader('X-RateLimit-Limit', String(state.limit));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, state.remaining)));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil(state.resetAt / 1000)));
}
