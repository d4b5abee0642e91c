import { ApiProperty } from '@nestjs/swagger';
import { CAMERA_STATUSES, type CameraStatus } from '../../cameras/entities/camera.entity';

/** One camera this instance captures, as GET /system/capture reports it. */
export class CaptureStatsDto {
  @ApiProperty({ format: 'uuid' })
  camera_id: string;

  @ApiProperty({ example: 'Front door' })
  camera_name: string;

  @ApiProperty({ enum: CAMERA_STATUSES, example: 'running' })
  status: CameraStatus;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Process id of the ffmpeg child, while one runs.',
  })
  pid: number | null;

  @ApiProperty({ description: 'Frames analysed per second (the camera setting).', example: 5 })
  frame_rate: number;

  @ApiProperty({ description: 'Analysis frames received from ffmpeg since capture started.', example: 1500 })
  frames_received: number;

  @ApiProperty({ description: 'Analysis frames run through motion detection.', example: 1500 })
  frames_analysed: number;

  @ApiProperty({
    description:
      'Frames capture fell behind real time (expected at `frame_rate` while running, but not received).',
    example: 0,
  })
  frames_dropped: number;

  @ApiProperty({ description: 'How often the ffmpeg process was restarted (failures and setting changes).' })
  restarts: number;

  @ApiProperty({ description: 'Motion events this capture has made.' })
  motion_events: number;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  last_frame_at: string | null;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When the current run began.',
  })
  running_since: string | null;
}

export class CaptureResponseDto {
  @ApiProperty({ type: [CaptureStatsDto], description: 'The cameras this instance captures, by name.' })
  cameras: CaptureStatsDto[];
}
