import { Controller, Get, Res } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public, RequireScope } from '../../common/auth/access.decorators';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { CaptureService } from '../cameras/capture/capture.service';
import { CaptureResponseDto } from './dto/capture.dto';
import { HealthResponseDto } from './dto/health.dto';
import { SslStatusResponseDto } from './dto/ssl-status.dto';
import { StorageResponseDto } from './dto/storage.dto';
import { HealthService } from './health.service';
import { SslStatusService } from './ssl-status.service';
import { StorageService } from './storage.service';

@ApiTags('System')
@Controller('system')
export class SystemController {
  constructor(
    private readonly health: HealthService,
    private readonly storage: StorageService,
    private readonly ssl: SslStatusService,
    private readonly capture: CaptureService,
  ) {}

  @Get('health')
  @Public()
  @ApiOp({
    summary: 'Health check',
    description: 'Public. 503 when the database does not answer within 2 s.',
  })
  @ApiSuccess({ type: HealthResponseDto, description: 'The service and its database are up.' })
  @ApiResponse({ status: 503, type: HealthResponseDto, description: 'The database is unreachable.' })
  async getHealth(@Res({ passthrough: true }) res: Response): Promise<HealthResponseDto> {
    const health = await this.health.check();
    res.status(health.status === 'ok' ? 200 : 503);
    return health;
  }

  @Get('storage')
  @RequireScope('admin')
  @ApiOp({
    summary: 'Storage statistics',
    description:
      'Database size, bytes of stored event images, the number and time span of events, and the size and ' +
      'free space of the file system that holds DATA_DIR.',
  })
  @ApiSuccess({ type: StorageResponseDto, description: 'Storage statistics.' })
  getStorage(): Promise<StorageResponseDto> {
    return this.storage.stats();
  }

  @Get('ssl-status')
  @RequireScope('admin')
  @ApiOp({
    summary: 'SSL status',
    description:
      'Whether the service serves https (SSL_CERT_FILE and SSL_KEY_FILE set) and what its certificate says: ' +
      'subject, issuer, validity window, days left, key type, whether it is self-signed. When https is off ' +
      'the certificate fields are null; `error` says why a configured certificate or key cannot be used.',
  })
  @ApiSuccess({ type: SslStatusResponseDto, description: 'The SSL configuration.' })
  getSslStatus(): Promise<SslStatusResponseDto> {
    return this.ssl.status();
  }

  @Get('capture')
  @RequireScope('admin')
  @ApiOp({
    summary: 'Capture statistics',
    description:
      'The cameras this instance captures: status, ffmpeg process id, frames received, analysed and dropped, ' +
      'restarts and motion events since capture started. With several instances, each reports its own cameras.',
  })
  @ApiSuccess({ type: CaptureResponseDto, description: 'Capture statistics of this instance.' })
  getCaptureStats(): CaptureResponseDto {
    return { cameras: this.capture.stats() };
  }
}
