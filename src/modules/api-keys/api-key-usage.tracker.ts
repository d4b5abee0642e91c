import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../../config/config';

interface PendingUsage {
  count: number;
  lastUsedAt: Date;
  lastUsedIp: string;
}

/**
 * Counts API-key use in memory and writes it in one batched UPDATE every `usageFlushIntervalMs`
 * (250 ms), so the request path never waits on a database write and `/usage` is current within 1 s.
 * Increments are added to the stored values, so several instances can flush to the same rows.
 */
@Injectable()
export class ApiKeyUsageTracker implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ApiKeyUsage');
  private pending = new Map<string, PendingUsage>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.usageFlushIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  record(apiKeyId: string, ip: string): void {
    const entry = this.pending.get(apiKeyId);
    const now = new Date();
    if (entry) {
      entry.count += 1;
      entry.lastUsedAt = now;
      entry.lastUsedIp = ip;
    } else {
      this.pending.set(apiKeyId, { count: 1, lastUsedAt: now, lastUsedIp: ip });
    }
  }

  /** Writes what has accumulated; concurrent calls run one after another. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  private async writeBatch(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const ids = [...batch.keys()];
    const entries = [...batch.values()];
    try {
      await this.dataSource.query(
        `UPDATE api_keys AS k
            SET usage_count = k.usage_count + u.delta,
                last_used_ip = CASE WHEN k.last_used_at IS NULL OR u.at >= k.last_used_at THEN u.ip ELSE k.last_used_ip END,
                last_used_at = GREATEST(k.last_used_at, u.at)
           FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[], $4::varchar[]) AS u(id, delta, at, ip)
          WHERE k.id = u.id`,
        [
          ids,
          entries.map((e) => e.count),
          entries.map((e) => e.lastUsedAt),
          entries.map((e) => e.lastUsedIp),
        ],
      );
    } catch (error) {
      // Keep the counts for the next attempt rather than lose them.
      for (const [id, entry] of batch) {
        const newer = this.pending.get(id);
        this.pending.set(
          id,
          newer
            ? { count: newer.count + entry.count, lastUsedAt: newer.lastUsedAt, lastUsedIp: newer.lastUsedIp }
            : entry,
        );
      }
      this.logger.warn({ msg: 'Could not write API-key usage; will retry', error: (error as Error).message });
    }
  }
}
