import { ApiProperty } from '@nestjs/swagger';

export class StorageResponseDto {
  @ApiProperty({
    description: 'Size of the database, `pg_database_size(current_database())`.',
    example: 48_312_320,
  })
  database_size_bytes: number;

  @ApiProperty({
    description: 'Bytes of all stored event images under DATA_DIR/images.',
    example: 734_003_200,
  })
  images_bytes: number;

  @ApiProperty({ description: 'Number of stored events.', example: 12873 })
  event_count: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Timestamp of the oldest event; null when there are none.',
    example: '2026-10-01T06:12:44.000Z',
  })
  oldest_event_at: string | null;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Timestamp of the newest event; null when there are none.',
    example: '2026-11-22T03:14:15.123Z',
  })
  newest_event_at: string | null;

  @ApiProperty({ description: 'The data directory (DATA_DIR), absolute.', example: '/var/lib/vigil' })
  data_dir: string;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Size of the file system that holds DATA_DIR; null when it cannot be read.',
    example: 256_060_514_304,
  })
  disk_total_bytes: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Bytes of that file system available to the service; null when it cannot be read.',
    example: 83_517_632_512,
  })
  disk_free_bytes: number | null;
}
