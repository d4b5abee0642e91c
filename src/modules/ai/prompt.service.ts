import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DomainEventBus } from '../realtime/domain-event-bus';
import { SettingsService } from '../settings/settings.service';
import { AiRepository } from './ai.repository';
import { CONTEXT_CACHE_EVENTS, ContextCache } from './context-cache';
import { BuiltPrompt, buildPrompt, CONTEXT_WINDOW_MS, ContextEvent, selectContext } from './prompt-builder';

export interface PromptSubject {
  /** The event described (left out of its own context), if any. */
  eventId?: string | null;
  cameraId?: string | null;
  cameraName?: string | null;
  promptOverride?: string | null;
  /** When the image was taken. */
  time: Date;
  /** Replaces the `ai_prompt` setting (POST /ai/describe with a prompt). */
  basePrompt?: string | null;
  /** Add the camera's recent events (when `ai_context_enabled`). */
  withContext: boolean;
}

/**
 * Builds prompts from the settings (`ai_prompt`, `ai_context_enabled`, `timezone`), the camera and, for event
 * descriptions, the camera's recent described events, served from a per-camera cache that every change of
 * an event on any instance invalidates (`event.*` on the bus).
 */
@Injectable()
export class PromptService implements OnModuleInit, OnModuleDestroy {
  readonly cache = new ContextCache();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly settings: SettingsService,
    private readonly repository: AiRepository,
    private readonly bus: DomainEventBus,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.bus.subscribe((message) => {
      if (
        message.type === 'event.created' ||
        message.type === 'event.updated' ||
        message.type === 'event.deleted'
      )
        this.cache.invalidate((message.data as { camera_id: string }).camera_id);
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /** A camera got a new description (on this instance): its context changed. */
  invalidate(cameraId: string): void {
    this.cache.invalidate(cameraId);
  }

  async build(subject: PromptSubject): Promise<BuiltPrompt> {
    const [aiPrompt, contextEnabled, timeZone] = await Promise.all([
      this.settings.get('ai_prompt'),
      this.settings.get('ai_context_enabled'),
      this.settings.get('timezone'),
    ]);
    const context =
      subject.withContext && contextEnabled && subject.cameraId
        ? await this.context(subject.cameraId, subject.time, subject.eventId ?? null)
        : null;
    return buildPrompt({
      basePrompt: subject.basePrompt?.trim() || aiPrompt,
      promptOverride: subject.promptOverride,
      cameraName: subject.cameraName,
      time: subject.time,
      timeZone,
      context,
    });
  }

  private async context(cameraId: string, time: Date, eventId: string | null): Promise<ContextEvent[]> {
    const cached = this.cache.lookup(cameraId, time);
    if (cached) return selectContext(cached, time, eventId);
    const epoch = this.cache.begin();
    const newest = await this.repository.describedEvents(cameraId, CONTEXT_CACHE_EVENTS);
    if (newest.length === 0 || time.getTime() >= newest[0].timestamp.getTime()) {
      this.cache.store(cameraId, newest, epoch);
      return selectContext(newest, time, eventId);
    }
    // An event older than the camera's newest description (a re-analysis): its own hour, not cached.
    const window = { after: new Date(time.getTime() - CONTEXT_WINDOW_MS), before: time };
    return selectContext(
      await this.repository.describedEvents(cameraId, CONTEXT_CACHE_EVENTS, window),
      time,
      eventId,
    );
  }
}
