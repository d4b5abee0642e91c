import { Global, Module } from '@nestjs/common';
import { DomainEventBus } from './domain-event-bus';

/** The domain event bus (and, in the WebSocket issue, the gateway that forwards it to clients). */
@Global()
@Module({
  providers: [DomainEventBus],
  exports: [DomainEventBus],
})
export class RealtimeModule {}
