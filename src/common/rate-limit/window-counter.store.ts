/** The state of one fixed window after a hit. */
export interface WindowCount {
  count: number;
  /** Epoch milliseconds at which the window ends and the count starts again from zero. */
  resetAt: number;
}

/**
 * Counters over fixed windows: the first hit opens a window of `windowMs`; every hit in it adds one;
 * when it ends the next hit opens a new one. Implemented in memory (one process) and in Redis (shared
 * by every instance, atomic, so N instances enforce one limit exactly).
 */
export interface WindowCounterStore {
  hit(key: string, windowMs: number): Promise<WindowCount>;
  peek(key: string): Promise<WindowCount | null>;
  reset(key: string): Promise<void>;
}

export const WINDOW_COUNTER_STORE = Symbol('WINDOW_COUNTER_STORE');

export class MemoryWindowCounterStore implements WindowCounterStore {
  private readonly windows = new Map<string, WindowCount>();
  private lastSweep = Date.now();

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    return this.hitSync(key, windowMs, Date.now());
  }

  /** Synchronous so that concurrent requests in one process can never both see the same count. */
  hitSync(key: string, windowMs: number, now: number): WindowCount {
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count += 1;
    return { ...window };
  }

  async peek(key: string): Promise<WindowCount | null> {
    const window = this.windows.get(key);
    return window && window.resetAt > Date.now() ? { ...window } : null;
  }

  async reset(key: string): Promise<void> {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
}
