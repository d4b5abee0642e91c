import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { RedisWindowCounterStore } from '../rate-limit/redis-window-counter.store';
import {
  MemoryWindowCounterStore,
  WINDOW_COUNTER_STORE,
  WindowCount,
  WindowCounterStore,
} from '../rate-limit/window-counter.store';

/** The shared Redis connection when REDIS_URL is set; `null` when the service runs alone. */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client: Redis | null;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.client = config.redisUrl
      ? new Redis(config.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 })
      : null;
    this.client?.on('error', (error: Error) =>
      this.logger.warn({ msg: 'Redis connection error', error: error.message }),
    );
  }

  async onModuleInit(): Promise<void> {
    if (!this.client) return;
    try {
      await this.client.connect();
    } catch (error) {
      this.logger.warn({
        msg: 'Redis is unreachable; rate limits fall back to this instance until it returns',
        error: (error as Error).message,
      });
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.client && this.client.status !== 'end') this.client.disconnect();
  }
}

/**
 * Uses Redis while it answers and this process's memory while it does not, so a Redis outage degrades
 * shared limits to per-instance limits instead of failing every API-key request.
 */
class ResilientWindowCounterStore implements WindowCounterStore {
  private readonly logger = new Logger('RateLimit');
  private lastWarning = 0;

  constructor(
    private readonly primary: WindowCounterStore,
    private readonly fallback: WindowCounterStore,
  ) {}

  hit(key: string, windowMs: number): Promise<WindowCount> {
    return this.primary
      .hit(key, windowMs)
      .catch((error: Error) => this.degrade(error, () => this.fallback.hit(key, windowMs)));
  }

  peek(key: string): Promise<WindowCount | null> {
    return this.primary.peek(key).catch((error: Error) => this.degrade(error, () => this.fallback.peek(key)));
  }

  reset(key: string): Promise<void> {
    return this.primary
      .reset(key)
      .catch((error: Error) => this.degrade(error, () => this.fallback.reset(key)));
  }

  private degrade<T>(error: Error, run: () => Promise<T>): Promise<T> {
    if (Date.now() - this.lastWarning > 30_000) {
      this.lastWarning = Date.now();
      this.logger.warn({ msg: 'Redis failed; counting in memory on this instance', error: error.message });
    }
    return run();
  }
}

@Global()
@Module({
  providers: [
    RedisService,
    {
      provide: WINDOW_COUNTER_STORE,
      inject: [RedisService],
      useFactory: (redis: RedisService): WindowCounterStore =>
        redis.client
          ? new ResilientWindowCounterStore(
              new RedisWindowCounterStore(redis.client),
              new MemoryWindowCounterStore(),
            )
          : new MemoryWindowCounterStore(),
    },
  ],
  exports: [RedisService, WINDOW_COUNTER_STORE],
})
export class RedisModule {}
