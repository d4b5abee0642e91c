import { Global, Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AuthModule } from '../auth/auth.module';
import { DomainEventBus } from './domain-event-bus';
import { RealtimeGateway } from './realtime.gateway';

/** The domain event bus and the WebSocket gateway (/ws, /api/v1/ws) that forwards it to clients. */
@Global()
@Module({
  imports: [AuthModule, ApiKeysModule],
  providers: [DomainEventBus, RealtimeGateway],
  exports: [DomainEventBus],
})
export class RealtimeModule {}
