import { Injectable } from '@nestjs/common';
import { isoOrNull } from '../../common/http/transforms';
import { readFile } from 'node:fs/promises';
import { pipeline, Readable } from 'node:stream';
import { Batcher } from '../../common/batching/batcher';
import {
  AppError,
  ConflictError,
  NotFoundError,
  ValidationFailedError,
} from '../../common/errors/app-errors';
import { MIB } from '../../common/http/request-pipeline';
import { ImageStore } from '../../common/storage/image-store';
import { DomainEventBus } from '../realtime/domain-event-bus';
import {
  CreateEventDto,
  EventFilterQueryDto,
  eventPageJson,
  EventResponseDto,
  EventStatsDto,
  ExportEventsQueryDto,
  ListEventsQueryDto,
  toEventResponse,
} from './dto/event.dto';
import { DescriptionStatus, DETECTION_TYPES, DetectionType, EventSourceType } from './entities/event.entity';
import { CsvRecords } from './events-export';
import { EventFilter, EventPatch, EventsRepository, InsertOutcome, NewEventRow } from './events.repository';
import { checkJpeg } from './jpeg';

/** Largest event image (decoded). */
export const MAX_IMAGE_BYTES = 10 * MIB;

/** An event from any source: ingestion (POST /events) now; capture, Protect and AI later. */
export interface RecordEventInput {
  cameraId: string;
  /** Default: now. */
  timestamp?: Date;
  detectionType: DetectionType;
  objectsDetected?: string[];
  /** 0..100 */
  confidence?: number | null;
  description?: string | null;
  /** Default: `complete` with a description, else `pending` (an AI provider describes it later). */
  descriptionStatus?: DescriptionStatus;
  sourceType: EventSourceType;
  protectEventId?: string | null;
  /** A JPEG (already checked); stored under DATA_DIR/images with a name the service makes. */
  image?: Buffer | null;
  providerUsed?: string | null;
  modelUsed?: string | null;
  aiConfidence?: number | null;
  tokensUsed?: number | null;
  aiCostUsd?: number | null;
  responseTimeMs?: number | null;
}

/** A change to an event (AI description, re-analysis, ...). `image` replaces the stored image. */
export type EventUpdate = Omit<EventPatch, 'imageFile'> & { image?: Buffer };

/** recordEvent was given a camera that does not exist (nothing was stored). */
export class CameraNotFoundError extends NotFoundError {
  constructor(readonly cameraId: string) {
    super('Camera');
  }
}

/** recordEvent was given a `protectEventId` that an event has already (nothing was stored). */
export class DuplicateEventError extends ConflictError {
  constructor(readonly protectEventId: string) {
    super(`An event for Protect event ${protectEventId} exists already`);
  }
}

@Injectable()
export class EventsService {
  /** Events recorded at the same moment (a burst) are inserted together: one statement, one commit. */
  private readonly inserts: Batcher<NewEventRow, InsertOutcome>;

  constructor(
    private readonly events: EventsRepository,
    private readonly images: ImageStore,
    private readonly bus: DomainEventBus,
  ) {
    this.inserts = new Batcher((rows) => this.events.insertMany(rows));
  }

  /** One page (an `EventPageDto`) as JSON text: the records come from PostgreSQL as JSON already. */
  async list(query: ListEventsQueryDto): Promise<string> {
    const page = query.page ?? 1;
    const limit = query.limit ?? 50;
    const { records, total } = await this.events.list(
      filterOf(query),
      query.sort ?? '-timestamp',
      limit,
      (page - 1) * limit,
    );
    return eventPageJson(records, { total, page, limit, pages: Math.ceil(total / limit) });
  }

  async get(id: string): Promise<EventResponseDto> {
    const event = await this.events.findById(id);
    if (!event) throw new NotFoundError('Event');
    return toEventResponse(event);
  }

  /** The event a Protect console event became, or null. */
  async findByProtectEventId(protectEventId: string): Promise<EventResponseDto | null> {
    const event = await this.events.findByProtectEventId(protectEventId);
    return event ? toEventResponse(event) : null;
  }

  async stats(query: EventFilterQueryDto): Promise<EventStatsDto> {
    const { groups, times } = await this.events.stats(filterOf(query));
    const byType = Object.fromEntries(DETECTION_TYPES.map((t) => [t, 0])) as Record<DetectionType, number>;
    const stats: EventStatsDto = {
      total: 0,
      by_detection_type: byType,
      by_camera: [],
      by_hour: new Array<number>(24).fill(0),
      by_day: [],
      average_confidence: null,
      first_event_at: null,
      last_event_at: null,
    };
    for (const g of groups) {
      if (g.grouping === 3) {
        stats.total = g.n ?? 0;
        stats.average_confidence = g.average_confidence;
        stats.first_event_at = isoOrNull(g.first_at);
        stats.last_event_at = isoOrNull(g.last_at);
      } else if (g.grouping === 1 && g.detection_type) {
        byType[g.detection_type] = g.n;
      } else if (g.grouping === 2 && g.camera_id) {
        stats.by_camera.push({ camera_id: g.camera_id, camera_name: g.camera_name ?? '', count: g.n });
      }
    }
    stats.by_camera.sort((a, b) => b.count - a.count || a.camera_name.localeCompare(b.camera_name));
    // Rows of the same day or hour (whole days from the rollup, partial days from the events) add up.
    const byDay = new Map<string, number>();
    for (const t of times) {
      if (t.by_day === 1 && t.day) byDay.set(t.day, (byDay.get(t.day) ?? 0) + t.n);
      else if (t.hour !== null) stats.by_hour[t.hour] += t.n;
    }
    stats.by_day = [...byDay].map(([date, count]) => ({ date, count }));
    stats.by_day.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
    return stats;
  }

  /**
   * The CSV export as a byte stream, streamed by the database as the consumer reads (see
   * EventsRepository.openExportCopy). Destroying the returned stream (client gone) ends the COPY and frees
   * the connection.
   */
  async openExport(query: ExportEventsQueryDto): Promise<Readable> {
    const records = await this.events.openExportCopy(filterOf(query), query.sort ?? '-timestamp');
    const csv = new CsvRecords();
    // A database error destroys `csv` with it, so the consumer (the HTTP response) sees and reports it.
    pipeline(records, csv, () => undefined);
    return csv;
  }

  /** POST /events: external ingestion (source `api`). */
  async ingest(dto: CreateEventDto): Promise<EventResponseDto> {
    const image = dto.image_base64 == null ? null : decodeJpeg(dto.image_base64);
    try {
      return await this.recordEvent({
        cameraId: dto.camera_id,
        timestamp: dto.timestamp,
        detectionType: dto.detection_type,
        objectsDetected: dto.objects_detected,
        confidence: dto.confidence,
        description: dto.description,
        sourceType: 'api',
        image,
      });
    } catch (error) {
      if (error instanceof CameraNotFoundError)
        throw new ValidationFailedError([
          { field: 'body.camera_id', message: 'camera_id does not name an existing camera' },
        ]);
      throw error;
    }
  }

  /**
   * The one way an event comes into being. Stores the image, inserts the event (and moves the camera's
   * `last_event_at`) in one transaction (shared with the events recorded at the same moment), and after it commits publishes `event.created` with the record
   * GET /events/{id} returns, which it also returns. A pending event with an image is due for the AI
   * description queue at once (see EventsRepository.insertMany). Throws CameraNotFoundError for an unknown
   * camera and DuplicateEventError for a Protect event recorded before.
   */
  async recordEvent(input: RecordEventInput): Promise<EventResponseDto> {
    const description = input.description ?? null;
    const imageFile = input.image ? await this.images.save(input.image) : null;
    let row;
    try {
      row = await this.inserts.add({
        cameraId: input.cameraId,
        timestamp: input.timestamp ?? new Date(),
        detectionType: input.detectionType,
        objectsDetected: input.objectsDetected ?? [],
        confidence: input.confidence ?? null,
        description,
        descriptionStatus: input.descriptionStatus ?? (description !== null ? 'complete' : 'pending'),
        sourceType: input.sourceType,
        protectEventId: input.protectEventId ?? null,
        imageFile,
        providerUsed: input.providerUsed ?? null,
        modelUsed: input.modelUsed ?? null,
        aiConfidence: input.aiConfidence ?? null,
        tokensUsed: input.tokensUsed ?? null,
        aiCostUsd: input.aiCostUsd ?? null,
        responseTimeMs: input.responseTimeMs ?? null,
      });
    } catch (error) {
      await this.images.remove([imageFile]);
      throw error;
    }
    if (typeof row === 'string') {
      await this.images.remove([imageFile]);
      if (row === 'duplicate') throw new DuplicateEventError(input.protectEventId ?? '');
      throw new CameraNotFoundError(input.cameraId);
    }
    const record = toEventResponse(row);
    this.bus.publish('event.created', { ...record });
    return record;
  }

  /**
   * Changes an event (one statement) and after it commits publishes `event.updated` with the new record.
   * A new `image` replaces the stored one (the old file is removed). NotFoundError for an unknown event.
   */
  async updateEvent(id: string, update: EventUpdate): Promise<EventResponseDto> {
    const { image, ...columns } = update;
    const newImageFile = image ? await this.images.save(image) : undefined;
    const patch: EventPatch = newImageFile ? { ...columns, imageFile: newImageFile } : columns;
    let result;
    try {
      result = await this.events.update(id, patch);
    } catch (error) {
      await this.images.remove([newImageFile]);
      throw error;
    }
    if (!result) {
      await this.images.remove([newImageFile]);
      throw new NotFoundError('Event');
    }
    if (newImageFile && result.previousImageFile && result.previousImageFile !== newImageFile)
      await this.images.remove([result.previousImageFile]);
    const record = toEventResponse(result.event);
    if (Object.values(patch).some((v) => v !== undefined)) this.bus.publish('event.updated', { ...record });
    return record;
  }

  /** Deletes an event and its image; publishes `event.deleted`. */
  async delete(id: string): Promise<void> {
    const deleted = await this.events.delete(id);
    if (!deleted) throw new NotFoundError('Event');
    await this.images.remove([deleted.imageFile]);
    this.bus.publish('event.deleted', { id, camera_id: deleted.cameraId });
  }

  /** The stored JPEG of an event. */
  async thumbnail(id: string): Promise<Buffer> {
    const event = await this.events.findImage(id);
    if (!event) throw new NotFoundError('Event');
    if (!event.imageFile) throw new NotFoundError('Thumbnail');
    try {
      return await readFile(this.images.path(event.imageFile));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError('Thumbnail');
      throw error;
    }
  }
}

function filterOf(query: EventFilterQueryDto): EventFilter {
  return {
    cameraIds: query.camera_id,
    detectionTypes: query.detection_type,
    sourceTypes: query.source_type,
    start: query.start_time,
    end: query.end_time,
    minConfidence: query.min_confidence,
    q: query.q,
  };
}

const imageError = (message: string) =>
  new ValidationFailedError([{ field: 'body.image_base64', message: `image_base64 ${message}` }]);

/**
 * Decodes `image_base64` (optionally a `data:image/jpeg;base64,` URI, line breaks allowed) and checks it
 * is a JPEG: 422 otherwise, 413 past 10 MiB.
 */
export function decodeJpeg(text: string): Buffer {
  let data = text.trim();
  const dataUri = /^data:([^;,]*)((?:;[^;,]*)*),/i.exec(data);
  if (dataUri) {
    if (!/;base64$/i.test(dataUri[2])) throw imageError('must be base64-encoded');
    data = data.slice(dataUri[0].length);
  }
  data = data.replace(/\s+/g, '');
  if (data.length === 0) throw imageError('must not be empty');
  // One negated-class search (no backtracking: a 10 MiB string must not exhaust the regexp stack).
  if (/[^A-Za-z0-9+/_-]/.test(data.replace(/={1,2}$/, '')) || data.length % 4 === 1)
    throw imageError('must be base64-encoded');
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  if (Math.floor((data.length * 3) / 4) - padding > MAX_IMAGE_BYTES)
    throw new AppError(413, 'Image too large (limit 10 MiB)');
  const jpeg = Buffer.from(data, 'base64');
  const check = checkJpeg(jpeg);
  if (!check.ok) throw imageError(check.reason);
  return jpeg;
}
