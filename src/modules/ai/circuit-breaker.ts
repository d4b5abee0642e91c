/** Consecutive failures that open a provider's circuit. */
export const CIRCUIT_FAILURE_THRESHOLD = 3;
/** How long an open circuit stays open before one probe request may try the provider again. */
export const CIRCUIT_OPEN_MS = 30_000;

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitBreakerOptions {
  failureThreshold: number;
  openMs: number;
}

export const DEFAULT_CIRCUIT_OPTIONS: CircuitBreakerOptions = {
  failureThreshold: CIRCUIT_FAILURE_THRESHOLD,
  openMs: CIRCUIT_OPEN_MS,
};

/**
 * A circuit breaker for one provider (per instance, in memory). Closed: every request may go. After
 * `failureThreshold` consecutive failures it opens: requests skip the provider. Once `openMs` have passed it
 * is half-open: exactly one request (the probe) may go; its success closes the circuit, its failure opens it
 * again for another `openMs`. Pure: time comes from `now`.
 */
export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openedAt: number | null = null;
  private probing = false;

  constructor(
    private readonly options: CircuitBreakerOptions = DEFAULT_CIRCUIT_OPTIONS,
    private readonly now: () => number = Date.now,
  ) {}

  /** `half_open` once the open time is over (the next request is the probe), also while the probe runs. */
  get state(): CircuitState {
    if (this.openedAt === null) return 'closed';
    return this.now() - this.openedAt >= this.options.openMs ? 'half_open' : 'open';
  }

  get failures(): number {
    return this.consecutiveFailures;
  }

  /** When an open circuit lets its probe through (null unless open). */
  get retryAt(): number | null {
    return this.openedAt === null ? null : this.openedAt + this.options.openMs;
  }

  /** Whether a request could go now (without taking the probe). */
  get available(): boolean {
    const state = this.state;
    return state === 'closed' || (state === 'half_open' && !this.probing);
  }

  /**
   * Asks to send one request. True: send it, then report `success()` or `failure()` (or `release()` when it
   * was never answered, e.g. cancelled at shutdown). In half-open state only the first caller gets true.
   */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.probing) return false;
    this.probing = true;
    return true;
  }

  success(): void {
    this.consecutiveFailures = 0;
    this.openedAt = null;
    this.probing = false;
  }

  failure(): void {
    this.consecutiveFailures += 1;
    if (this.probing || this.consecutiveFailures >= this.options.failureThreshold) this.openedAt = this.now();
    this.probing = false;
  }

  /** A request that neither succeeded nor failed (cancelled): a probe slot is handed back. */
  release(): void {
    this.probing = false;
  }
}
