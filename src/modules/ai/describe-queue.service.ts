import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { readFile } from 'node:fs/promises';
import { NotFoundError } from '../../common/errors/app-errors';
import { ImageStore } from '../../common/storage/image-store';
import type { DetectionType } from '../events/entities/event.entity';
import { EventsService, EventUpdate } from '../events/events.service';
import { DomainEventBus } from '../realtime/domain-event-bus';
import { SettingsService } from '../settings/settings.service';
import {
  AiCancelledError,
  AiOffError,
  AiPausedError,
  AllProvidersFailedError,
  NoProviderAvailableError,
} from './ai-errors';
import { AiRepository, ClaimedEvent, LeaseEnd } from './ai.repository';
import { AiService } from './ai.service';
import { PromptService } from './prompt.service';
import { DEFAULT_QUEUE_TIMING, leaseMs, QueueTiming, retryDelayMs } from './queue-timing';

interface Job {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Describes events in the background. The queue is the `events` table itself: an event is due when its
 * `description_due_at` has passed (set by recordEvent for a pending event with an image, by a re-analysis
 * request, and after a failure). Each instance claims due events atomically (`FOR UPDATE SKIP LOCKED`, a
 * lease that moves the due time forward), so no event is described twice, and nothing is lost by a restart
 * or a crash: an unfinished claim comes due again when its lease ends (at shutdown the claims are handed
 * back at once).
 *
 * At most `concurrency` (DESCRIBE_CONCURRENCY) events are described at once per instance. New pending
 * events wake the queue through the bus; otherwise it polls. While AI is off (no usable provider), paused
 * (cost cap) or every circuit is open, nothing is claimed: events stay pending and due. When every provider
 * fails, the event becomes `failed` and is due again after 1, 2, 4, ... minutes (at most an hour).
 */
@Injectable()
export class DescribeQueueService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('DescribeQueue');
  private readonly jobs = new Map<string, Job>();
  private timing: QueueTiming = DEFAULT_QUEUE_TIMING;
  private pollTimer: NodeJS.Timeout | null = null;
  private wakeTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private unsubscribe: (() => void)[] = [];

  constructor(
    private readonly ai: AiService,
    private readonly prompts: PromptService,
    private readonly repository: AiRepository,
    private readonly events: EventsService,
    private readonly images: ImageStore,
    private readonly bus: DomainEventBus,
    private readonly settings: SettingsService,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe.push(
      this.bus.subscribe((message) => {
        if (message.type !== 'event.created' && message.type !== 'event.updated') return;
        const data = message.data as { description_status?: unknown; thumbnail_url?: unknown };
        if (data.description_status === 'pending' && data.thumbnail_url) this.wake();
      }),
      // AI turned on, a provider fixed, a cap raised: look at once.
      this.settings.onChange((keys) => {
        if (keys.some((key) => key.startsWith('ai_'))) this.wake();
      }),
    );
    this.startPolling();
    this.wake();
  }

  /** Cancels the calls in flight and hands their events back (due at once), before the database closes. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    for (const off of this.unsubscribe) off();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    for (const job of this.jobs.values()) job.controller.abort();
    await this.polling;
    await Promise.allSettled([...this.jobs.values()].map((job) => job.done));
  }

  /**
   * Changes the queue's numbers (see queue-timing.ts for the defaults); tests shorten the retry wait to see
   * a failed event retried.
   */
  configureTiming(timing: Partial<QueueTiming>): void {
    this.timing = { ...this.timing, ...timing };
    if (this.pollTimer) this.startPolling();
  }

  /** Events being described by this instance now. */
  get inProgress(): number {
    return this.jobs.size;
  }

  /** Looks for due events now (unless a look is running: then once more after it). */
  wake(): void {
    if (this.stopped) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = (async () => {
      do {
        this.again = false;
        try {
          await this.fill();
        } catch (error) {
          this.logger.warn({ msg: 'Looking for due descriptions failed', error: (error as Error).message });
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.polling = null;
    });
  }

  private startPolling(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = setInterval(() => this.wake(), this.timing.pollIntervalMs);
    this.pollTimer.unref();
  }

  /** Claims due events up to the free capacity, while AI is ready. */
  private async fill(): Promise<void> {
    while (!this.stopped) {
      const free = this.timing.concurrency - this.jobs.size;
      if (free <= 0) return;
      const readiness = await this.ai.readiness();
      if (readiness.state === 'waiting' && readiness.retryAt) this.wakeAt(readiness.retryAt);
      if (readiness.state !== 'ready') return;
      const claimed = await this.repository.claimDue(free, leaseMs(readiness.timeoutsMs));
      for (const event of claimed) this.start(event);
      if (claimed.length < free) return;
    }
  }

  /** A circuit half-opens at `at`: look then rather than at the next poll. */
  private wakeAt(at: Date): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => this.wake(), Math.max(0, at.getTime() - Date.now()) + 10);
    this.wakeTimer.unref();
  }

  private start(event: ClaimedEvent): void {
    const controller = new AbortController();
    const done = this.describe(event, controller.signal)
      .catch((error: Error) =>
        this.logger.error({
          msg: 'Describing an event failed unexpectedly',
          event_id: event.id,
          error: error.message,
        }),
      )
      .finally(() => {
        this.jobs.delete(event.id);
        // A slot is free: there may be more due events.
        this.wake();
      });
    this.jobs.set(event.id, { controller, done });
  }

  private async describe(event: ClaimedEvent, signal: AbortSignal): Promise<void> {
    let image: Buffer;
    try {
      if (!event.imageFile) throw Object.assign(new Error('no image'), { code: 'ENOENT' });
      image = await readFile(this.images.path(event.imageFile));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // The image is gone: retrying cannot help. The event stays without a description.
      this.logger.warn({ msg: 'Cannot describe an event without its image', event_id: event.id });
      await this.update(event, { descriptionStatus: 'failed' });
      await this.repository.finishLease(event.id, event.lease, { kind: 'done' });
      return;
    }
    try {
      const prompt = await this.prompts.build({
        eventId: event.id,
        cameraId: event.cameraId,
        cameraName: event.cameraName,
        promptOverride: event.promptOverride,
        time: event.timestamp,
        withContext: true,
      });
      const outcome = await this.ai.run({
        image,
        mimeType: 'image/jpeg',
        prompt: prompt.prompt,
        structured: true,
        purpose: event.reanalysis ? 'reanalyse' : 'describe',
        eventId: event.id,
        context: { events: prompt.contextEvents, tokens: prompt.contextTokens },
        signal,
      });
      const answer = outcome.result.answer!;
      const patch: EventUpdate = {
        description: answer.description,
        descriptionStatus: 'complete',
        detectionType: answer.detection_type as DetectionType,
        objectsDetected: answer.objects_detected,
        aiConfidence: answer.confidence,
        providerUsed: outcome.provider,
        modelUsed: outcome.model.slice(0, 100),
        tokensUsed: outcome.inputTokens + outcome.outputTokens,
        aiCostUsd: outcome.costUsd,
        responseTimeMs: outcome.latencyMs,
      };
      if (event.reanalysis) {
        patch.reanalysisCount = event.reanalysisCount + 1;
        // The claim's time: requests made after it are still waiting (see AiRepository.claimDue).
        patch.reanalysedAt = event.claimedAt;
      }
      if (!(await this.update(event, patch))) return;
      this.prompts.invalidate(event.cameraId);
      await this.repository.finishLease(event.id, event.lease, { kind: 'done' });
    } catch (error) {
      await this.afterFailure(event, error);
    }
  }

  private async afterFailure(event: ClaimedEvent, error: unknown): Promise<void> {
    let end: LeaseEnd;
    if (
      error instanceof AiOffError ||
      error instanceof AiPausedError ||
      error instanceof NoProviderAvailableError ||
      error instanceof AiCancelledError
    ) {
      // Nothing was tried (or the try was cut short by shutdown): hand the event back, due at once; the
      // queue claims again when AI is ready.
      end = { kind: 'release', delayMs: 0 };
    } else {
      end = { kind: 'retry', delayMs: retryDelayMs(event.attempts, this.timing) };
      if (error instanceof AllProvidersFailedError) {
        this.logger.warn({
          msg: 'Every AI provider failed to describe an event; retrying later',
          event_id: event.id,
          attempts: event.attempts,
          retry_in_ms: end.delayMs,
        });
      } else {
        this.logger.error({
          msg: 'Describing an event failed',
          event_id: event.id,
          error: (error as Error).message,
        });
      }
      if (
        event.descriptionStatus !== 'failed' &&
        !(await this.update(event, { descriptionStatus: 'failed' }))
      )
        return;
    }
    await this.repository.finishLease(event.id, event.lease, end);
  }

  /** updateEvent; false when the event was deleted meanwhile. */
  private async update(event: ClaimedEvent, patch: EventUpdate): Promise<boolean> {
    try {
      await this.events.updateEvent(event.id, patch);
      return true;
    } catch (error) {
      if (error instanceof NotFoundError) return false;
      throw error;
    }
  }
}
