import { Module } from '@nestjs/common';
import { CamerasModule } from '../cameras/cameras.module';
import { EventsModule } from '../events/events.module';
import { AiDescribeService } from './ai-describe.service';
import { AiStatusService } from './ai-status.service';
import { AiController } from './ai.controller';
import { AiRepository } from './ai.repository';
import { AiService } from './ai.service';
import { DescribeQueueService } from './describe-queue.service';
import { EventAiController } from './event-ai.controller';
import { EventAiService } from './event-ai.service';
import { PromptService } from './prompt.service';

/**
 * AI descriptions: the provider chain with circuit breakers, ledger and cost caps (AiService), the background
 * queue that describes pending events (DescribeQueueService), the /ai endpoints and the AI routes of events
 * (re-analysis, feedback).
 */
@Module({
  imports: [EventsModule, CamerasModule],
  controllers: [AiController, EventAiController],
  providers: [
    AiRepository,
    AiService,
    PromptService,
    DescribeQueueService,
    AiStatusService,
    AiDescribeService,
    EventAiService,
  ],
  exports: [AiService],
})
export class AiModule {}
