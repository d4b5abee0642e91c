import { Controller, Get, Res } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../common/auth/access.decorators';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { HealthResponseDto } from './dto/health.dto';
import { HealthService } from './health.service';

@ApiTags('System')
@Controller('system')
export class SystemController {
  constructor(private readonly health: HealthService) {}

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
}
