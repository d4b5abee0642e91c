import { CONTEXT_MAX_EVENTS, type ContextEvent } from './prompt-builder';

/**
 * Each cached entry holds this many of a camera's newest described events: one more than the context
 * takes, so the described event itself (when re-analysed) can be left out and five remain.
 */
export const CONTEXT_CACHE_EVENTS = CONTEXT_MAX_EVENTS + 1;
/** Cameras kept; the least recently used entry goes first. */
export const CONTEXT_CACHE_CAMERAS = 500;

/**
 * Per-camera cache of the newest described events, the raw material of the prompt context. An entry
 * answers for any event at or after its newest row: no other described event can lie between them, since
 * every new description drops the camera's entry (`invalidate`, from `event.*` on the bus of every
 * instance). For an older event (re-analysis of the past) the caller queries instead.
 *
 * `hits` and `misses` count lookups since start (GET /ai/context-metrics).
 */
export class ContextCache {
  hits = 0;
  misses = 0;
  private readonly entries = new Map<string, ContextEvent[]>();
  /** Bumped by every invalidation: a load that started before one must not be stored. */
  private epoch = 0;

  constructor(private readonly maxCameras = CONTEXT_CACHE_CAMERAS) {}

  /** The cached newest events of a camera, if they answer for an event at `time`; counts a hit or a miss. */
  lookup(cameraId: string, time: Date): ContextEvent[] | undefined {
    const rows = this.entries.get(cameraId);
    if (rows && (rows.length === 0 || time.getTime() >= rows[0].timestamp.getTime())) {
      this.entries.delete(cameraId);
      this.entries.set(cameraId, rows);
      this.hits += 1;
      return rows;
    }
    this.misses += 1;
    return undefined;
  }

  /** Call before loading, and pass the result to `store`. */
  begin(): number {
    return this.epoch;
  }

  /** Stores a camera's newest described events (newest first, up to CONTEXT_CACHE_EVENTS) unless stale. */
  store(cameraId: string, newestFirst: ContextEvent[], epoch: number): void {
    if (epoch !== this.epoch) return;
    this.entries.delete(cameraId);
    this.entries.set(cameraId, newestFirst);
    while (this.entries.size > this.maxCameras) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  invalidate(cameraId: string): void {
    this.epoch += 1;
    this.entries.delete(cameraId);
  }

  clear(): void {
    this.epoch += 1;
    this.entries.clear();
  }
}
