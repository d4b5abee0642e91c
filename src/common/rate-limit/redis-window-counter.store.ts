import type Redis from 'ioredis';
import { WindowCount, WindowCounterStore } from './window-counter.store';

// INCR and, on the window's first hit, PEXPIRE, in one atomic step; returns the count and the
// milliseconds left, so every instance sees the same window and the same end.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

export class RedisWindowCounterStore implements WindowCounterStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'vigil:window:',
  ) {
    this.redis.defineCommand('vigilWindowHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    const redis = this.redis as unknown as {
      vigilWindowHit(k: string, ms: number): Promise<[number, number]>;
    };
    const [count, ttl] = await redis.vigilWindowHit(this.prefix + key, windowMs);
    return { count, resetAt: Date.now() + ttl };
  }

  async peek(key: string): Promise<WindowCount | null> {
    const [count, ttl] = await Promise.all([
      this.redis.get(this.prefix + key),
      this.redis.pttl(this.prefix + key),
    ]);
    if (count === null || ttl <= 0) return null;
    return { count: Number(count), resetAt: Date.now() + ttl };
  }

  async reset(key: string): Promise<void> {
    await this.redis.del(this.prefix + key);
  }
}
