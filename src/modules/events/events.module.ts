import { Module } from '@nestjs/common';
import { EventsController } from './events.controller';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';

/**
 * The events resource. EventsService.recordEvent is the one way an event comes into being (ingestion now;
 * capture, Protect and AI later), so every subscriber of the domain event bus sees every event.
 */
@Module({
  controllers: [EventsController],
  providers: [EventsService, EventsRepository],
  exports: [EventsService],
})
export class EventsModule {}
