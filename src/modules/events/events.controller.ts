import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Logger,
  Param,
  Post,
  Query,
  Res,
  StreamableFile,
} from '@nestjs/common';
import { ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { RATE_LIMIT_HEADERS, RequireScope } from '../../common/auth/access.decorators';
import { toErrorBody } from '../../common/errors/http-error.filter';
import { ErrorResponseDto } from '../../common/errors/error-response.dto';
import { ApiJpegResponse, ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import {
  CreateEventDto,
  EventFilterQueryDto,
  EventPageDto,
  EventResponseDto,
  EventStatsDto,
  ExportEventsQueryDto,
  ListEventsQueryDto,
} from './dto/event.dto';
import { CSV_HEADER, exportFileName } from './events-export';
import { EventsService } from './events.service';

const EVENT_ID = new UuidParamPipe('Event');
const EventIdParam = () => ApiParam({ name: 'id', format: 'uuid', description: 'The event id.' });

const Body413 = () =>
  ApiResponse({
    status: 413,
    description: 'Request body (or the decoded image) larger than 10 MiB.',
    type: ErrorResponseDto,
    example: { detail: 'Request body too large (limit 10 MiB)', status_code: 413 },
  });

@ApiTags('Events')
@Controller('events')
export class EventsController {
  private readonly logger = new Logger('EventsController');

  constructor(private readonly events: EventsService) {}

  @Get()
  @RequireScope('read:events')
  @ApiOp({
    summary: 'List events',
    description:
      'Newest first by default. Filters combine with AND; `camera_id`, `detection_type` and `source_type` take ' +
      'comma lists (any of the values). Unknown parameters are refused (422).',
    errors: [422],
  })
  @ApiSuccess({ type: EventPageDto, description: 'One page of matching events.' })
  @Header('Content-Type', 'application/json; charset=utf-8') // the page is JSON text already
  listEvents(@Query() query: ListEventsQueryDto): Promise<string> {
    return this.events.list(query);
  }

  @Get('stats')
  @RequireScope('read:events')
  @ApiOp({
    summary: 'Event statistics',
    description: 'Counts over the events matching the same filters as the list (hours and days in UTC).',
    errors: [422],
  })
  @ApiSuccess({ type: EventStatsDto, description: 'Statistics of the matching events.' })
  getEventStats(@Query() query: EventFilterQueryDto): Promise<EventStatsDto> {
    return this.events.stats(query);
  }

  @Get('export')
  @RequireScope('read:events')
  @ApiOp({
    summary: 'Export events as CSV',
    description:
      'The events matching the same filters as the list, as RFC 4180 CSV (UTF-8, CRLF line ends), streamed. ' +
      `Header row: \`${CSV_HEADER.trim()}\`. \`objects_detected\` is joined with \`;\`; cells starting with ` +
      "`=`, `+`, `-`, `@`, tab or CR are prefixed with `'` so spreadsheets do not run them as formulas.",
    errors: [422],
  })
  @ApiResponse({
    status: 200,
    description: 'The CSV file.',
    content: {
      'text/csv': {
        schema: { type: 'string' },
        example: `${CSV_HEADER}7a1d6a3e-2f0b-4f7e-8a9c-1b2c3d4e5f60,2026-11-22T03:14:15.123Z,3f1c0a52-6a7b-4c8e-9d10-2b3c4d5e6f70,Front door,person,person;backpack,87,"A person, then a dog",rtsp,openai,/api/v1/events/7a1d6a3e-2f0b-4f7e-8a9c-1b2c3d4e5f60/thumbnail,2026-11-22T03:14:15.456Z\r\n`,
      },
    },
    headers: {
      ...RATE_LIMIT_HEADERS,
      'Content-Disposition': {
        description: 'attachment; filename="events-<UTC yyyymmdd-hhmmss>.csv"',
        schema: { type: 'string' },
      },
    },
  })
  async exportEvents(@Query() query: ExportEventsQueryDto): Promise<StreamableFile> {
    const csv = await this.events.openExport(query);
    return new StreamableFile(csv, {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="${exportFileName(new Date())}"`,
    }).setErrorHandler((error, response) => {
      const res = response as unknown as Response;
      this.logger.error({ msg: 'Event export failed', error: error.message });
      if (res.headersSent) {
        // Cut the chunked transfer short, so the client sees an incomplete download, not a short CSV.
        res.destroy();
        return;
      }
      const { body } = toErrorBody(error);
      res.removeHeader('Content-Disposition');
      res.status(body.status_code).json(body);
    });
  }

  @Get(':id')
  @RequireScope('read:events')
  @EventIdParam()
  @ApiOp({ summary: 'Get an event', errors: [404] })
  @ApiSuccess({ type: EventResponseDto, description: 'The event.' })
  getEvent(@Param('id', EVENT_ID) id: string): Promise<EventResponseDto> {
    return this.events.get(id);
  }

  @Get(':id/thumbnail')
  @RequireScope('read:events')
  @EventIdParam()
  @ApiOp({
    summary: "Get an event's image",
    description: 'The stored JPEG. 404 when the event has none.',
    errors: [404],
  })
  @ApiJpegResponse('`private, max-age=86400`')
  async getEventThumbnail(
    @Param('id', EVENT_ID) id: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    const jpeg = await this.events.thumbnail(id);
    // Only on success: a 404 must not be cached.
    res.setHeader('Cache-Control', 'private, max-age=86400');
    return new StreamableFile(jpeg, { type: 'image/jpeg' });
  }

  @Post()
  @RequireScope('admin')
  @ApiOp({
    summary: 'Ingest an event',
    description:
      'For external systems. Source type `api`; `description_status` is `complete` with a description, else ' +
      '`pending`. `image_base64` must be a JPEG (422 otherwise). An unknown `camera_id` is 422. Subscribers ' +
      '(WebSocket `event.created`) receive the new record.',
    errors: [400, 415, 422],
  })
  @Body413()
  @ApiSuccess({ status: 201, type: EventResponseDto, description: 'The event was stored.' })
  createEvent(@Body() dto: CreateEventDto): Promise<EventResponseDto> {
    return this.events.ingest(dto);
  }

  @Delete(':id')
  @RequireScope('admin')
  @EventIdParam()
  @HttpCode(204)
  @ApiOp({ summary: 'Delete an event', description: 'Its image is removed too.', errors: [404] })
  @ApiSuccess({ status: 204, description: 'The event is deleted.' })
  deleteEvent(@Param('id', EVENT_ID) id: string): Promise<void> {
    return this.events.delete(id);
  }
}
