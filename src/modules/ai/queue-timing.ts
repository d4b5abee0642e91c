/** Events described at the same time by one instance (each is one provider call at a time). */
export const DESCRIBE_CONCURRENCY = 4;
/** How often the queue looks for due events when nothing woke it (new events wake it at once). */
export const QUEUE_POLL_INTERVAL_MS = 5_000;
/** The first retry of a failed description comes after a minute; each further failure doubles the wait... */
export const RETRY_BASE_MS = 60_000;
/** ...up to an hour. Failed events are retried for as long as they exist. */
export const RETRY_MAX_MS = 3_600_000;
/** Added to the providers' timeouts for a claim's lease: reading the image, the prompt, writing the result. */
export const LEASE_MARGIN_MS = 60_000;

export interface QueueTiming {
  concurrency: number;
  pollIntervalMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

export const DEFAULT_QUEUE_TIMING: QueueTiming = {
  concurrency: DESCRIBE_CONCURRENCY,
  pollIntervalMs: QUEUE_POLL_INTERVAL_MS,
  retryBaseMs: RETRY_BASE_MS,
  retryMaxMs: RETRY_MAX_MS,
};

/** The wait after the `attempts`-th failed attempt (1 = the first): base, 2 x base, 4 x base, ... capped. */
export function retryDelayMs(
  attempts: number,
  timing: Pick<QueueTiming, 'retryBaseMs' | 'retryMaxMs'>,
): number {
  const exponent = Math.min(Math.max(attempts, 1) - 1, 30);
  return Math.min(timing.retryBaseMs * 2 ** exponent, timing.retryMaxMs);
}

/**
 * How long a claimed event stays leased: long enough for every provider of the chain to time out one after
 * the other, plus a margin. A worker that dies mid-way loses its events to the next claim after that.
 */
export function leaseMs(providerTimeoutsMs: number[]): number {
  return providerTimeoutsMs.reduce((sum, t) => sum + t, 0) + LEASE_MARGIN_MS;
}
