import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorators';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { CreateFeedbackDto, FeedbackResponseDto, ReanalyseResponseDto } from './dto/ai.dto';
import { EventAiService } from './event-ai.service';

const EVENT_ID = new UuidParamPipe('Event');
const EventIdParam = () => ApiParam({ name: 'id', format: 'uuid', description: 'The event id.' });

/** The AI routes under /events (here rather than in EventsController: the events module knows no AI). */
@ApiTags('Events')
@Controller('events')
export class EventAiController {
  constructor(private readonly eventAi: EventAiService) {}

  @Post(':id/reanalyse')
  @RequireScope('admin')
  @HttpCode(202)
  @EventIdParam()
  @ApiOp({
    summary: 'Re-analyse an event',
    description:
      "Queues a new AI description of the event's image: the event becomes `pending` at once and, when " +
      'described, gets the new description with `reanalysis_count` + 1 and `reanalysed_at` (WebSocket ' +
      '`event.updated` both times). At most 3 accepted requests per event in any rolling hour: 429 with ' +
      '`Retry-After` (seconds until the oldest of them is an hour old). 400: the event has no image. 409: no ' +
      'AI provider is enabled and configured.',
    errors: [400, 404, 409],
  })
  @ApiSuccess({ status: 202, type: ReanalyseResponseDto, description: 'Queued.' })
  reanalyseEvent(@Param('id', EVENT_ID) id: string): Promise<ReanalyseResponseDto> {
    return this.eventAi.reanalyse(id);
  }

  @Post(':id/feedback')
  @RequireScope('read:events')
  @EventIdParam()
  @ApiOp({
    summary: "Rate an event's description",
    description:
      'Stores a rating (and optionally a correction) of the current description, which is kept with it. ' +
      'POST /ai/refine-prompt learns from the ratings.',
    errors: [400, 404, 413, 415, 422],
  })
  @ApiSuccess({ status: 201, type: FeedbackResponseDto, description: 'The stored rating.' })
  createEventFeedback(
    @Param('id', EVENT_ID) id: string,
    @Body() dto: CreateFeedbackDto,
  ): Promise<FeedbackResponseDto> {
    return this.eventAi.feedback(id, dto);
  }
}
