import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ImageStore } from '../../common/storage/image-store';
import { DomainEventBus } from '../realtime/domain-event-bus';
import { SettingsService } from '../settings/settings.service';

const DAY_MS = 86_400_000;

/**
 * Deletes events older than the `event_retention_days` setting, with their images: at start, every hour,
 * and whenever the setting changes (on any instance). Deletes in batches (`DELETE ... RETURNING
 * image_file`), each its own short statement, so a large clean-up never holds long locks; rows another
 * instance is deleting at the same moment are skipped (`SKIP LOCKED`), so instances do not collide.
 * Each deleted event is published as `event.deleted`.
 */
@Injectable()
export class EventRetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  static readonly INTERVAL_MS = 3_600_000;
  private readonly logger = new Logger('EventRetention');
  /** Events per DELETE statement. */
  batchSize = 1000;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly settings: SettingsService,
    private readonly images: ImageStore,
    private readonly bus: DomainEventBus,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe = this.settings.onChange((keys) => {
      if (keys.includes('event_retention_days')) this.trigger();
    });
    this.timer = setInterval(() => this.trigger(), EventRetentionService.INTERVAL_MS);
    this.timer.unref();
    this.trigger();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Starts a pass unless one is running (then one more pass follows it). */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.purge();
        } catch (error) {
          this.logger.warn({ msg: 'Event retention pass failed', error: (error as Error).message });
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
  }

  /** One pass: deletes every event older than the retention. Returns how many were deleted. */
  async purge(): Promise<number> {
    const days = await this.settings.get('event_retention_days');
    if (days === null) return 0;
    const cutoff = new Date(Date.now() - days * DAY_MS);
    let total = 0;
    while (!this.stopped) {
      const rows: { id: string; camera_id: string; image_file: string | null }[] =
        await this.dataSource.query(
          `WITH doomed AS (
           DELETE FROM events WHERE id IN (
             SELECT id FROM events WHERE "timestamp" < $1 ORDER BY "timestamp" LIMIT $2 FOR UPDATE SKIP LOCKED
           )
           RETURNING id, camera_id, image_file
         )
         SELECT id, camera_id, image_file FROM doomed`,
          [cutoff, this.batchSize],
        );
      if (rows.length === 0) break;
      total += rows.length;
      await this.images.remove(rows.map((row) => row.image_file));
      for (const row of rows) this.bus.publish('event.deleted', { id: row.id, camera_id: row.camera_id });
      if (rows.length < this.batchSize) break;
    }
    if (total > 0) {
      this.logger.log({
        msg: 'Deleted events past the retention',
        count: total,
        retention_days: days,
        before: cutoff.toISOString(),
      });
    }
    return total;
  }
}
