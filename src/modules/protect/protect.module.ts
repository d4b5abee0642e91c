import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CamerasModule } from '../cameras/cameras.module';
import { CameraEntity } from '../cameras/entities/camera.entity';
import { EventsModule } from '../events/events.module';
import { ProtectControllerEntity } from './entities/protect-controller.entity';
import { ProtectConnections } from './protect-connections.service';
import { ProtectController } from './protect.controller';
import { ProtectService } from './protect.service';

/**
 * UniFi Protect consoles: controller records (ProtectService) and one realtime connection per enabled
 * controller (ProtectConnections), whose detections become events through EventsService.recordEvent.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ProtectControllerEntity, CameraEntity]), CamerasModule, EventsModule],
  controllers: [ProtectController],
  providers: [ProtectService, ProtectConnections],
  exports: [ProtectConnections],
})
export class ProtectModule {}
