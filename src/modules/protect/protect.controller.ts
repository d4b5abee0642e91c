import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorators';
import { ErrorResponseDto } from '../../common/errors/error-response.dto';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import {
  CreateProtectControllerDto,
  ProtectCameraDto,
  ProtectControllerResponseDto,
  ProtectTestResponseDto,
  TestProtectControllerDto,
  UpdateProtectControllerDto,
} from './dto/protect.dto';
import { ProtectService } from './protect.service';

const CONTROLLER_ID = new UuidParamPipe('Protect controller');
const ControllerIdParam = () => ApiParam({ name: 'id', format: 'uuid', description: 'The controller id.' });

@ApiTags('Protect')
@Controller('protect/controllers')
export class ProtectController {
  constructor(private readonly protect: ProtectService) {}

  @Get()
  @RequireScope('admin')
  @ApiOp({ summary: 'List Protect controllers', description: 'A plain array of every controller, by name.' })
  @ApiSuccess({
    type: ProtectControllerResponseDto,
    isArray: true,
    description: 'Every controller (never a password).',
  })
  listControllers(): Promise<ProtectControllerResponseDto[]> {
    return this.protect.list();
  }

  @Post()
  @RequireScope('admin')
  @ApiOp({
    summary: 'Add a Protect controller',
    description:
      'Saves a UniFi Protect console (a local user with view rights) and, when enabled, connects to it before ' +
      'answering: the answer shows the first connection attempt (`connected`, or `error` with the reason; it is ' +
      'retried with backoff). The password is stored encrypted and never returned. Names are unique regardless ' +
      'of letter case (409).',
    errors: [400, 409, 413, 415, 422],
  })
  @ApiSuccess({ status: 201, type: ProtectControllerResponseDto, description: 'The controller was added.' })
  createController(@Body() dto: CreateProtectControllerDto): Promise<ProtectControllerResponseDto> {
    return this.protect.create(dto);
  }

  @Post('test')
  @RequireScope('admin')
  @HttpCode(200)
  @ApiOp({
    summary: 'Test a Protect console connection',
    description:
      'Checks TLS, logs in and loads the Protect bootstrap; saves nothing. Answers within 15 s. A console that ' +
      'cannot be used is still a 200, with `success: false` and a precise `message`: authentication failed, TLS ' +
      'verification failed, host unreachable, timed out, not a Protect console. Leave `password` out and give ' +
      "`controller_id` to test with a saved controller's password.",
    errors: [400, 413, 415, 422],
  })
  @ApiSuccess({ type: ProtectTestResponseDto, description: 'The outcome of the test.' })
  testController(@Body() dto: TestProtectControllerDto): Promise<ProtectTestResponseDto> {
    return this.protect.test(dto);
  }

  @Get(':id')
  @RequireScope('admin')
  @ControllerIdParam()
  @ApiOp({ summary: 'Get a Protect controller', errors: [404] })
  @ApiSuccess({ type: ProtectControllerResponseDto, description: 'The controller.' })
  getController(@Param('id', CONTROLLER_ID) id: string): Promise<ProtectControllerResponseDto> {
    return this.protect.get(id);
  }

  @Put(':id')
  @RequireScope('admin')
  @ControllerIdParam()
  @ApiOp({
    summary: 'Update a Protect controller',
    description:
      'Partial update: only the fields sent change. A new host, port, user, password or TLS setting reconnects; ' +
      '`enabled: false` closes the connection (its cameras go offline).',
    errors: [400, 404, 409, 413, 415, 422],
  })
  @ApiSuccess({ type: ProtectControllerResponseDto, description: 'The updated controller.' })
  updateController(
    @Param('id', CONTROLLER_ID) id: string,
    @Body() dto: UpdateProtectControllerDto,
  ): Promise<ProtectControllerResponseDto> {
    return this.protect.update(id, dto);
  }

  @Delete(':id')
  @RequireScope('admin')
  @HttpCode(204)
  @ControllerIdParam()
  @ApiOp({
    summary: 'Delete a Protect controller',
    description: 'Closes its connection and marks its cameras offline; the cameras and their events stay.',
    errors: [404],
  })
  @ApiSuccess({ status: 204, description: 'The controller was deleted.' })
  deleteController(@Param('id', CONTROLLER_ID) id: string): Promise<void> {
    return this.protect.remove(id);
  }

  @Get(':id/cameras')
  @RequireScope('admin')
  @ControllerIdParam()
  @ApiOp({
    summary: "List the console's cameras",
    description:
      "The console's cameras from its live bootstrap, with `camera_id` when a Vigil camera adopts one. Adopt a " +
      'camera with `POST /cameras` (`source_type: protect`, `protect_controller_id`, `protect_camera_id`); its ' +
      '`detection_types` choose which detections become events.',
    errors: [404],
  })
  @ApiResponse({
    status: 502,
    description: 'The console could not be reached or refused the login (the message says why).',
    type: ErrorResponseDto,
  })
  @ApiSuccess({ type: ProtectCameraDto, isArray: true, description: "The console's cameras." })
  listControllerCameras(@Param('id', CONTROLLER_ID) id: string): Promise<ProtectCameraDto[]> {
    return this.protect.listCameras(id);
  }
}
