import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Put,
  Res,
  StreamableFile,
} from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { RequireScope } from '../../common/auth/access.decorators';
import { ApiJpegResponse, ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { CamerasService } from './cameras.service';
import {
  CameraResponseDto,
  CameraTestResponseDto,
  CreateCameraDto,
  TestCameraDto,
  UpdateCameraDto,
} from './dto/camera.dto';

const CAMERA_ID = new UuidParamPipe('Camera');
const CameraIdParam = () => ApiParam({ name: 'id', format: 'uuid', description: 'The camera id.' });

@ApiTags('Cameras')
@Controller('cameras')
export class CamerasController {
  constructor(private readonly cameras: CamerasService) {}

  @Get()
  @RequireScope('read:cameras')
  @ApiOp({ summary: 'List cameras', description: 'A plain array of every camera, by name.' })
  @ApiSuccess({ type: CameraResponseDto, isArray: true, description: 'Every camera (never a password).' })
  listCameras(): Promise<CameraResponseDto[]> {
    return this.cameras.list();
  }

  @Post()
  @RequireScope('write:cameras')
  @ApiOp({
    summary: 'Create a camera',
    description:
      'Each `source_type` needs its own fields (rtsp: rtsp/rtsps `url`; mjpeg: http(s) `url`; usb: `device`; ' +
      'protect: `protect_controller_id` and `protect_camera_id`); fields of other types, and credentials inside ' +
      'the URL, are refused with 422. The password is stored encrypted and never returned. Names are unique ' +
      'regardless of letter case (409). New cameras are `stopped`.',
    errors: [400, 409, 413, 415, 422],
  })
  @ApiSuccess({ status: 201, type: CameraResponseDto, description: 'The camera was created.' })
  createCamera(@Body() dto: CreateCameraDto): Promise<CameraResponseDto> {
    return this.cameras.create(dto);
  }

  @Post('test')
  @RequireScope('write:cameras')
  @HttpCode(200)
  @ApiOp({
    summary: 'Test a camera connection',
    description:
      'Connects to the stream, reads its format and decodes one frame; saves nothing. Answers within 15 s. A ' +
      'camera that cannot be reached is still a 200, with `success: false` and a precise `message` ' +
      '(authentication failed, timed out, connection refused, not a video stream, stream or device not found). ' +
      'At most 4 tests run at once (429 beyond).',
    errors: [400, 413, 415, 422],
  })
  @ApiSuccess({ type: CameraTestResponseDto, description: 'The outcome of the test.' })
  testCamera(@Body() dto: TestCameraDto): Promise<CameraTestResponseDto> {
    return this.cameras.test(dto);
  }

  @Get(':id')
  @RequireScope('read:cameras')
  @CameraIdParam()
  @ApiOp({ summary: 'Get a camera', errors: [404] })
  @ApiSuccess({ type: CameraResponseDto, description: 'The camera.' })
  getCamera(@Param('id', CAMERA_ID) id: string): Promise<CameraResponseDto> {
    return this.cameras.get(id);
  }

  @Put(':id')
  @RequireScope('write:cameras')
  @CameraIdParam()
  @ApiOp({
    summary: 'Update a camera',
    description:
      'Partial update: omitted fields keep their value, `null` clears a nullable field (`password: null` removes ' +
      'the password). The result must be valid for its `source_type`; changing `source_type` clears the old ' +
      "type's fields that the request does not send.",
    errors: [400, 404, 409, 413, 415, 422],
  })
  @ApiSuccess({ type: CameraResponseDto, description: 'The updated camera.' })
  updateCamera(@Param('id', CAMERA_ID) id: string, @Body() dto: UpdateCameraDto): Promise<CameraResponseDto> {
    return this.cameras.update(id, dto);
  }

  @Post(':id/start')
  @RequireScope('write:cameras')
  @CameraIdParam()
  @HttpCode(200)
  @ApiOp({
    summary: 'Start a camera',
    description:
      'Sets `enabled` and starts capture (idempotent). The camera goes `starting`, then `running` at its first ' +
      'frame; enabled cameras resume after a service restart. Protect cameras are only marked enabled here.',
    errors: [404],
  })
  @ApiSuccess({ type: CameraResponseDto, description: 'The camera, with the status it reached.' })
  startCamera(@Param('id', CAMERA_ID) id: string): Promise<CameraResponseDto> {
    return this.cameras.start(id);
  }

  @Post(':id/stop')
  @RequireScope('write:cameras')
  @CameraIdParam()
  @HttpCode(200)
  @ApiOp({
    summary: 'Stop a camera',
    description:
      'Clears `enabled` and ends capture (idempotent); answers once the capture process has ended.',
    errors: [404],
  })
  @ApiSuccess({ type: CameraResponseDto, description: 'The stopped camera.' })
  stopCamera(@Param('id', CAMERA_ID) id: string): Promise<CameraResponseDto> {
    return this.cameras.stop(id);
  }

  @Get(':id/snapshot')
  @RequireScope('read:cameras')
  @CameraIdParam()
  @ApiOp({
    summary: "Get a camera's current picture",
    description: 'The latest frame as JPEG (at most 1280 pixels wide). 409 when the camera is not running.',
    errors: [404, 409],
  })
  @ApiJpegResponse('`no-store`: every request gets the current picture.')
  async getCameraSnapshot(
    @Param('id', CAMERA_ID) id: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    const jpeg = await this.cameras.snapshot(id);
    res.setHeader('Cache-Control', 'no-store');
    return new StreamableFile(jpeg, { type: 'image/jpeg' });
  }

  @Delete(':id')
  @RequireScope('write:cameras')
  @CameraIdParam()
  @HttpCode(204)
  @ApiOp({
    summary: 'Delete a camera',
    description: 'Deletes the camera with all of its events and their images.',
    errors: [404],
  })
  @ApiSuccess({ status: 204, description: 'The camera, its events and their images are deleted.' })
  deleteCamera(@Param('id', CAMERA_ID) id: string): Promise<void> {
    return this.cameras.remove(id);
  }
}
