import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SERVICE_VERSION } from '../../common/version';
import { HealthResponseDto } from './dto/health.dto';

const DATABASE_TIMEOUT_MS = 2000;

@Injectable()
export class HealthService {
  private readonly startedAt = Date.now();

  constructor(private readonly dataSource: DataSource) {}

  async check(): Promise<HealthResponseDto> {
    const started = process.hrtime.bigint();
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.dataSource.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`timeout after ${DATABASE_TIMEOUT_MS} ms`)),
            DATABASE_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (e) {
      error = (e as Error).message.split('\n')[0];
    } finally {
      clearTimeout(timer);
    }
    const latency = Number(process.hrtime.bigint() - started) / 1e6;
    const health: HealthResponseDto = {
      status: error ? 'unhealthy' : 'ok',
      version: SERVICE_VERSION,
      uptime_seconds: Math.floor((Date.now() - this.startedAt) / 1000),
      database: error
        ? { status: 'down', latency_ms: null, error }
        : { status: 'up', latency_ms: Math.round(latency * 100) / 100 },
    };
    if (error) Object.assign(health, { detail: 'Database unreachable', status_code: 503 });
    return health;
  }
}
