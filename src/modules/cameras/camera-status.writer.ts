import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { KeyedQueue } from '../../common/concurrency/keyed-queue';
import { DomainEventBus } from '../realtime/domain-event-bus';
import type { CameraStatus } from './entities/camera.entity';

/**
 * Writes camera statuses for whoever runs a camera (live capture, a Protect controller): each change goes to
 * the camera row and, when status or message changed, is published as `camera.status` with the previous
 * status. Writes of one camera are chained so they land in the order they happened.
 */
@Injectable()
export class CameraStatusWriter {
  private readonly logger = new Logger('CameraStatus');
  private readonly writes = new KeyedQueue((id, error) =>
    this.logger.warn({ msg: 'Could not store a camera status', camera_id: id, error: error.message }),
  );

  constructor(
    private readonly dataSource: DataSource,
    private readonly bus: DomainEventBus,
  ) {}

  write(id: string, status: CameraStatus, message: string | null): void {
    void this.writes.run(id, async () => {
      const rows: { name: string; previous_status: string; previous_message: string | null }[] =
        await this.dataSource.query(
          // A SELECT around the UPDATE, so the driver returns plain rows (and the old values come along).
          `WITH old AS (SELECT id, status, status_message FROM cameras WHERE id = $1 FOR UPDATE),
                changed AS (UPDATE cameras c SET status = $2, status_message = $3 FROM old WHERE c.id = old.id
                            RETURNING c.name, old.status AS previous_status, old.status_message AS previous_message)
           SELECT * FROM changed`,
          [id, status, message],
        );
      const row = rows[0];
      if (!row || (row.previous_status === status && row.previous_message === message)) return;
      this.bus.publish('camera.status', {
        camera_id: id,
        camera_name: row.name,
        status,
        previous_status: row.previous_status,
        status_message: message,
      });
    });
  }

  /** Resolves when the camera's writes so far have landed. */
  settled(id: string): Promise<void> {
    return this.writes.settled(id);
  }

  /** Resolves when every write so far has landed. */
  allSettled(): Promise<void> {
    return this.writes.allSettled();
  }
}
