import { Module } from '@nestjs/common';
import { HealthService } from './health.service';
import { SystemController } from './system.controller';

@Module({
  controllers: [SystemController],
  providers: [HealthService],
})
export class SystemModule {}
