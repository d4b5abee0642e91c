import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CamerasController } from './cameras.controller';
import { EventsModule } from '../events/events.module';
import { CamerasService } from './cameras.service';
import { CaptureService } from './capture/capture.service';
import { CameraStatusWriter } from './camera-status.writer';
import { CameraEntity } from './entities/camera.entity';
import { ProtectCameraLink } from './protect-camera.link';

/**
 * Camera records (CamerasService), the live capture of rtsp/mjpeg/usb cameras (CaptureService) and camera
 * statuses (CameraStatusWriter); Protect cameras are run by the Protect module through ProtectCameraLink.
 */
@Module({
  imports: [TypeOrmModule.forFeature([CameraEntity]), EventsModule],
  controllers: [CamerasController],
  providers: [CamerasService, CaptureService, CameraStatusWriter, ProtectCameraLink],
  exports: [CamerasService, CaptureService, CameraStatusWriter, ProtectCameraLink],
})
export class CamerasModule {}
