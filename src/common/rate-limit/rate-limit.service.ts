import { Inject, Injectable } from '@nestjs/common';
import { RateLimitState } from './rate-limit-headers';
import { WINDOW_COUNTER_STORE, type WindowCounterStore } from './window-counter.store';

export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Per-API-key request limits over fixed one-minute windows (decisions.md §3). */
@Injectable()
export class RateLimitService {
  constructor(@Inject(WINDOW_COUNTER_STORE) private readonly store: WindowCounterStore) {}

  async consume(apiKeyId: string, limit: number): Promise<RateLimitState & { allowed: boolean }> {
    const { count, resetAt } = await this.store.hit(`apikey:${apiKeyId}`, RATE_LIMIT_WINDOW_MS);
    return { limit, remaining: Math.max(0, limit - count), resetAt, allowed: count <= limit };
  }
}
