import { Inject, Injectable } from '@nestjs/common';
import { statfs } from 'node:fs/promises';
import { DataSource } from 'typeorm';
import { ImageStore } from '../../common/storage/image-store';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { StorageResponseDto } from './dto/storage.dto';

/** GET /system/storage: what the service keeps and how much room is left. */
@Injectable()
export class StorageService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly images: ImageStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async stats(): Promise<StorageResponseDto> {
    const [database, events, imagesBytes, disk] = await Promise.all([
      this.dataSource.query<{ bytes: string }[]>('SELECT pg_database_size(current_database()) AS bytes'),
      this.dataSource.query<{ count: string; oldest: Date | null; newest: Date | null }[]>(
        'SELECT count(*) AS count, min("timestamp") AS oldest, max("timestamp") AS newest FROM events',
      ),
      this.images.totalBytes(),
      statfs(this.config.dataDir).catch(() => null),
    ]);
    return {
      database_size_bytes: Number(database[0].bytes),
      images_bytes: imagesBytes,
      event_count: Number(events[0].count),
      oldest_event_at: events[0].oldest ? new Date(events[0].oldest).toISOString() : null,
      newest_event_at: events[0].newest ? new Date(events[0].newest).toISOString() : null,
      data_dir: this.config.dataDir,
      disk_total_bytes: disk ? disk.blocks * disk.bsize : null,
      disk_free_bytes: disk ? disk.bavail * disk.bsize : null,
    };
  }
}
