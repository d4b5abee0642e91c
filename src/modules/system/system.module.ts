import { Module } from '@nestjs/common';
import { CamerasModule } from '../cameras/cameras.module';
import { EventRetentionService } from './event-retention.service';
import { HealthService } from './health.service';
import { SslStatusService } from './ssl-status.service';
import { StorageService } from './storage.service';
import { SystemController } from './system.controller';

@Module({
  imports: [CamerasModule],
  controllers: [SystemController],
  providers: [HealthService, StorageService, SslStatusService, EventRetentionService],
})
export class SystemModule {}
