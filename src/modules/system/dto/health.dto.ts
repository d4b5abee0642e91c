import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class DatabaseHealthDto {
  @ApiProperty({ enum: ['up', 'down'], example: 'up' })
  status: 'up' | 'down';

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Round trip of `SELECT 1`, in milliseconds.',
    example: 0.8,
  })
  latency_ms: number | null;

  @ApiPropertyOptional({ description: 'Why the database is down.', example: 'timeout after 2000 ms' })
  error?: string;
}

export class HealthResponseDto {
  @ApiProperty({ enum: ['ok', 'unhealthy'], example: 'ok' })
  status: 'ok' | 'unhealthy';

  @ApiProperty({ example: '0.1.0' })
  version: string;

  @ApiProperty({ description: 'Seconds since the service started.', example: 3600 })
  uptime_seconds: number;

  @ApiProperty({ type: DatabaseHealthDto })
  database: DatabaseHealthDto;

  @ApiPropertyOptional({
    description: 'Present when unhealthy (503), as in the error envelope.',
    example: 'Database unreachable',
  })
  detail?: string;

  @ApiPropertyOptional({
    description: 'Present when unhealthy (503), as in the error envelope.',
    example: 503,
  })
  status_code?: number;
}
