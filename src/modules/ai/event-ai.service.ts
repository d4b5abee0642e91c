import { Injectable } from '@nestjs/common';
import { BusinessRuleError, NotFoundError, TooManyRequestsError } from '../../common/errors/app-errors';
import { EventsService } from '../events/events.service';
import { AiOffError } from './ai-errors';
import { AiRepository } from './ai.repository';
import { AiService } from './ai.service';
import { CreateFeedbackDto, FeedbackResponseDto, ReanalyseResponseDto } from './dto/ai.dto';

/** Re-analysis requests per event in any rolling window of REANALYSIS_WINDOW_MS. */
export const REANALYSIS_LIMIT = 3;
export const REANALYSIS_WINDOW_MS = 3_600_000;

/** The AI side of an event: re-analysis requests and ratings of its description. */
@Injectable()
export class EventAiService {
  constructor(
    private readonly ai: AiService,
    private readonly repository: AiRepository,
    private readonly events: EventsService,
  ) {}

  /**
   * Queues a new description of the event's image: 404 unknown event, 400 without an image (decisions.md
   * §1: a business rule), 409 while AI is off, 429 after 3 accepted requests in the last hour (Retry-After:
   * until the oldest of them is an hour old). The event becomes `pending` and due at once (`event.updated`);
   * when described, `reanalysis_count` goes up by one and `reanalysed_at` is set (`event.updated` again).
   */
  async reanalyse(eventId: string): Promise<ReanalyseResponseDto> {
    if ((await this.ai.readiness()).state === 'off') {
      // Unknown events are still 404 first.
      if (!(await this.repository.eventForDescription(eventId))) throw new NotFoundError('Event');
      throw new AiOffError();
    }
    const request = await this.repository.requestReanalysis(eventId, REANALYSIS_LIMIT, REANALYSIS_WINDOW_MS);
    switch (request.outcome) {
      case 'not_found':
        throw new NotFoundError('Event');
      case 'no_image':
        throw new BusinessRuleError('The event has no image to re-analyse');
      case 'limited':
        throw new TooManyRequestsError(
          `At most ${REANALYSIS_LIMIT} re-analyses per event per hour; try again in ` +
            `${Math.max(1, Math.ceil(request.retryAfterMs / 1000))} s`,
          request.retryAfterMs / 1000,
        );
      case 'accepted':
        break;
    }
    await this.events.updateEvent(eventId, {
      descriptionStatus: 'pending',
      descriptionDueAt: new Date(),
      descriptionAttempts: 0,
    });
    return { event_id: eventId, status: 'queued' };
  }

  /** Stores a rating of the event's current description (kept with it, for POST /ai/refine-prompt). */
  async feedback(eventId: string, dto: CreateFeedbackDto): Promise<FeedbackResponseDto> {
    const row = await this.repository.insertFeedback(eventId, dto.rating, dto.correction ?? null);
    if (!row) throw new NotFoundError('Event');
    return {
      id: row.id,
      event_id: row.eventId,
      rating: row.rating,
      correction: row.correction,
      description: row.description,
      created_at: row.createdAt.toISOString(),
    };
  }
}
