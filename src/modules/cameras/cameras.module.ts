import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CamerasController } from './cameras.controller';
import { EventsModule } from '../events/events.module';
import { CamerasService } from './cameras.service';
import { CaptureService } from './capture/capture.service';
import { CameraEntity } from './entities/camera.entity';

/** Camera records (CamerasService) and the live capture of rtsp/mjpeg/usb cameras (CaptureService). */
@Module({
  imports: [TypeOrmModule.forFeature([CameraEntity]), EventsModule],
  controllers: [CamerasController],
  providers: [CamerasService, CaptureService],
  exports: [CamerasService, CaptureService],
})
export class CamerasModule {}
