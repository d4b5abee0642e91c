import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { RedisService } from '../../common/redis/redis.module';
import { DomainEventMap, DomainEventType, DomainMessage } from './domain-events';

const CHANNEL = 'vigil:domain-events';

type Handler = (message: DomainMessage) => void;

/**
 * One bus for every domain event. `publish` after the transaction commits. Subscribers receive every
 * message published on any instance: through Redis pub/sub when REDIS_URL is set (an instance receives its
 * own messages back from Redis, so each message is delivered exactly once per instance), in-process
 * otherwise. If Redis cannot take a message, it is still delivered to this instance's subscribers.
 */
@Injectable()
export class DomainEventBus implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('DomainEventBus');
  private readonly handlers = new Set<Handler>();
  private subscriber: Redis | null = null;

  constructor(private readonly redis: RedisService) {}

  async onModuleInit(): Promise<void> {
    const client = this.redis.client;
    if (!client) return;
    this.subscriber = client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.subscriber.on('error', (error: Error) =>
      this.logger.warn({ msg: 'Redis subscriber error', error: error.message }),
    );
    this.subscriber.on('message', (_channel: string, raw: string) => {
      try {
        this.deliver(JSON.parse(raw) as DomainMessage);
      } catch (error) {
        this.logger.warn({ msg: 'Dropped an unreadable bus message', error: (error as Error).message });
      }
    });
    try {
      await this.subscriber.subscribe(CHANNEL);
    } catch (error) {
      this.logger.warn({
        msg: 'Could not subscribe to Redis; events stay on this instance',
        error: (error as Error).message,
      });
    }
  }

  onApplicationShutdown(): void {
    this.subscriber?.disconnect();
  }

  publish<K extends DomainEventType>(type: K, data: DomainEventMap[K]): void {
    const message: DomainMessage<K> = { type, data, timestamp: new Date().toISOString() };
    const client = this.redis.client;
    if (client && this.subscriber?.status === 'ready' && client.status === 'ready') {
      client.publish(CHANNEL, JSON.stringify(message)).catch((error: Error) => {
        this.logger.warn({
          msg: 'Redis publish failed; delivering on this instance only',
          error: error.message,
        });
        this.deliver(message);
      });
      return;
    }
    // No Redis: deliver asynchronously, like Redis would, so publishers never run subscriber code inline.
    setImmediate(() => this.deliver(message));
  }

  /** Receives every message from every instance. Returns the unsubscribe function. */
  subscribe(handler: Handler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  private deliver(message: DomainMessage): void {
    for (const handler of this.handlers) {
      try {
        handler(message);
      } catch (error) {
        this.logger.error({
          msg: 'A bus subscriber failed',
          type: message.type,
          error: (error as Error).message,
        });
      }
    }
  }
}
