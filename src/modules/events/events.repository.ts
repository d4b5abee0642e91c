/*
 * SQL of the events API (for benchmarks comparing the API with the same SQL run directly through `pg`).
 * The exported builders return exactly the statements the service runs, as `{text, values}`:
 * listSql + countSql (GET /events), statsGroupsSql + statsTimesSql (GET /events/stats), exportSql (GET
 * /events/export), each given `buildEventFilter(filter)`.
 *
 * `<where>` is built by buildEventFilter from the query parameters, each present filter ANDed, numbered
 * parameters in this order:
 *
 *   e.camera_id = ANY($n::uuid[])                           camera_id (comma list)
 *   e.detection_type = ANY($n::detection_type[])            detection_type (comma list)
 *   e.source_type = ANY($n::event_source_type[])            source_type (comma list)
 *   e.timestamp >= $n                                       start_time (inclusive)
 *   e.timestamp <= $n                                       end_time (inclusive)
 *   e.confidence >= $n                                      min_confidence
 *   e.description_tsv @@ plainto_tsquery('simple', $n)      q (GIN index on the stored tsvector, which a trigger
 *                                                           keeps = to_tsvector('simple', coalesce(description, '')))
 *
 * GET /events (two statements, run concurrently on two pooled connections):
 *   SELECT <record columns>, c.name AS "cameraName" FROM events e JOIN cameras c ON c.id = e.camera_id
 *     <where> ORDER BY e.timestamp DESC, e.id DESC LIMIT $limit OFFSET $offset      (sort=timestamp: ASC, ASC)
 *   SELECT count(*)::int AS total FROM events e <where>
 *
 * GET /events/stats (two statements, run concurrently):
 *   SELECT g.detection_type, g.camera_id, min(c.name) AS camera_name, sum(g.n)::int AS n,
 *          round((sum(g.conf_sum) / nullif(sum(g.conf_n), 0))::numeric, 1)::float8 AS average_confidence,
 *          min(g.first_at) AS first_at, max(g.last_at) AS last_at,
 *          GROUPING(g.detection_type, g.camera_id) AS grouping
 *   FROM (SELECT e.detection_type, e.camera_id, count(*) AS n, count(e.confidence) AS conf_n,
 *                sum(e.confidence)::float8 AS conf_sum, min(e.timestamp) AS first_at, max(e.timestamp) AS last_at
 *         FROM events e <where> GROUP BY e.detection_type, e.camera_id) g
 *   JOIN cameras c ON c.id = g.camera_id
 *   GROUP BY GROUPING SETS ((), (g.detection_type), (g.camera_id))
 *
 *   SELECT extract(hour FROM h.hour_start)::int AS hour, to_char(h.hour_start, 'YYYY-MM-DD') AS day,
 *          sum(h.n)::int AS n, GROUPING(extract(hour FROM h.hour_start)::int) AS by_day
 *   FROM (SELECT date_trunc('hour', e.timestamp AT TIME ZONE 'UTC') AS hour_start, count(*) AS n
 *         FROM events e <where> GROUP BY 1) h
 *   GROUP BY GROUPING SETS ((extract(hour FROM h.hour_start)::int), (to_char(h.hour_start, 'YYYY-MM-DD')))
 *
 * GET /events/export (one statement, read through a cursor with pg-query-stream, rowMode 'array'):
 *   SELECT e.id, (e.timestamp AT TIME ZONE 'UTC')::text, e.camera_id, c.name, e.detection_type,
 *          array_to_string(e.objects_detected, ';'), e.confidence, e.description, e.source_type, e.provider_used,
 *          e.image_file IS NOT NULL, (e.created_at AT TIME ZONE 'UTC')::text
 *   FROM events e JOIN cameras c ON c.id = e.camera_id <where> ORDER BY e.timestamp DESC, e.id DESC
 *   (timestamps as text are ~25% cheaper than to_char(); events-export.ts turns them into ISO 8601)
 */
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Readable } from 'node:stream';
import type { Pool, PoolClient } from 'pg';
import QueryStream from 'pg-query-stream';
import { DataSource } from 'typeorm';
import type { EventSort, EventWithCamera } from './dto/event.dto';
import type { DescriptionStatus, DetectionType, EventSourceType } from './entities/event.entity';

/** The filters of GET /events, /events/stats and /events/export. */
export interface EventFilter {
  cameraIds?: string[];
  detectionTypes?: DetectionType[];
  sourceTypes?: EventSourceType[];
  start?: Date;
  end?: Date;
  minConfidence?: number;
  q?: string;
}

/** A WHERE clause (`''` when there is no filter) and its parameters, numbered from `$1`. */
export interface SqlFilter {
  where: string;
  params: unknown[];
}

/** Builds the WHERE clause of the events queries (table alias `e`); see the comment at the top. */
export function buildEventFilter(filter: EventFilter): SqlFilter {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.cameraIds?.length) conditions.push(`e.camera_id = ANY(${param(filter.cameraIds)}::uuid[])`);
  if (filter.detectionTypes?.length)
    conditions.push(`e.detection_type = ANY(${param(filter.detectionTypes)}::detection_type[])`);
  if (filter.sourceTypes?.length)
    conditions.push(`e.source_type = ANY(${param(filter.sourceTypes)}::event_source_type[])`);
  if (filter.start) conditions.push(`e.timestamp >= ${param(filter.start)}`);
  if (filter.end) conditions.push(`e.timestamp <= ${param(filter.end)}`);
  if (filter.minConfidence !== undefined) conditions.push(`e.confidence >= ${param(filter.minConfidence)}`);
  if (filter.q !== undefined)
    conditions.push(`e.description_tsv @@ plainto_tsquery('simple', ${param(filter.q)})`);
  return { where: conditions.length ? `WHERE ${conditions.join(' AND ')}` : '', params };
}

export function orderBy(sort: EventSort): string {
  return sort === 'timestamp' ? 'ORDER BY e.timestamp ASC, e.id ASC' : 'ORDER BY e.timestamp DESC, e.id DESC';
}

/** The columns of an event record (entity property names), from event alias `e` and camera alias `c`. */
function recordColumns(e: string, c: string): string {
  return [
    `${e}.id`,
    `${e}.camera_id AS "cameraId"`,
    `${c}.name AS "cameraName"`,
    `${e}.timestamp`,
    `${e}.detection_type AS "detectionType"`,
    `${e}.objects_detected AS "objectsDetected"`,
    `${e}.confidence`,
    `${e}.description`,
    `${e}.description_status AS "descriptionStatus"`,
    `${e}.source_type AS "sourceType"`,
    `${e}.protect_event_id AS "protectEventId"`,
    `${e}.image_file AS "imageFile"`,
    `${e}.provider_used AS "providerUsed"`,
    `${e}.model_used AS "modelUsed"`,
    `${e}.ai_confidence AS "aiConfidence"`,
    `${e}.tokens_used AS "tokensUsed"`,
    `${e}.ai_cost_usd AS "aiCostUsd"`,
    `${e}.response_time_ms AS "responseTimeMs"`,
    `${e}.reanalysis_count AS "reanalysisCount"`,
    `${e}.reanalysed_at AS "reanalysedAt"`,
    `${e}.created_at AS "createdAt"`,
  ].join(', ');
}

/**
 * Export columns in CSV order (see ExportRow in events-export.ts), as text where that saves parsing rows
 * into objects (timestamps: `YYYY-MM-DD HH:MM:SS[.ffffff]` in UTC, not Dates).
 */
const EXPORT_COLUMNS = [
  'e.id',
  `(e.timestamp AT TIME ZONE 'UTC')::text`,
  'e.camera_id',
  'c.name',
  'e.detection_type',
  `array_to_string(e.objects_detected, ';')`,
  'e.confidence',
  'e.description',
  'e.source_type',
  'e.provider_used',
  'e.image_file IS NOT NULL',
  `(e.created_at AT TIME ZONE 'UTC')::text`,
].join(', ');

/** A statement and its parameters (pg's QueryConfig shape), so benchmarks can run exactly the same SQL. */
export interface SqlStatement {
  text: string;
  values: unknown[];
}

/**
 * A word search (`q`) matching at most this many events lists them from the GIN index's matches
 * (`fewMatches`) instead of walking the timestamp index.
 */
export const FEW_MATCHES = 20_000;

/**
 * GET /events items: one page with camera names (one join, no N+1). With `fewMatches`, the matching ids
 * are collected first (bitmap scan of the indexes) and only they are sorted: the planner assumes the words
 * of `q` are independent, so for words that rarely occur together it would otherwise walk the timestamp
 * index through every event looking for 50 matches that do not exist.
 */
export function listSql(
  filter: SqlFilter,
  sort: EventSort,
  limit: number,
  offset: number,
  fewMatches = false,
): SqlStatement {
  const n = filter.params.length;
  const page = `${orderBy(sort)} LIMIT $${n + 1} OFFSET $${n + 2}`;
  const text = fewMatches
    ? `WITH m AS MATERIALIZED (SELECT e.id FROM events e ${filter.where}) ` +
      `SELECT ${recordColumns('e', 'c')} FROM m JOIN events e ON e.id = m.id JOIN cameras c ON c.id = e.camera_id ${page}`
    : `SELECT ${recordColumns('e', 'c')} FROM events e JOIN cameras c ON c.id = e.camera_id ${filter.where} ${page}`;
  return { text, values: [...filter.params, limit, offset] };
}

/** GET /events total. */
export function countSql(filter: SqlFilter): SqlStatement {
  return { text: `SELECT count(*)::int AS total FROM events e ${filter.where}`, values: filter.params };
}

/** GET /events/stats: totals, per type and per camera (one scan, then GROUPING SETS over the groups). */
export function statsGroupsSql(filter: SqlFilter): SqlStatement {
  return {
    text: `SELECT g.detection_type, g.camera_id, min(c.name) AS camera_name, sum(g.n)::int AS n,
       round((sum(g.conf_sum) / nullif(sum(g.conf_n), 0))::numeric, 1)::float8 AS average_confidence,
       min(g.first_at) AS first_at, max(g.last_at) AS last_at,
       GROUPING(g.detection_type, g.camera_id) AS grouping
FROM (SELECT e.detection_type, e.camera_id, count(*) AS n, count(e.confidence) AS conf_n,
             sum(e.confidence)::float8 AS conf_sum, min(e.timestamp) AS first_at, max(e.timestamp) AS last_at
      FROM events e ${filter.where} GROUP BY e.detection_type, e.camera_id) g
JOIN cameras c ON c.id = g.camera_id
GROUP BY GROUPING SETS ((), (g.detection_type), (g.camera_id))`,
    values: filter.params,
  };
}

/** GET /events/stats: per UTC hour of day and per UTC day (one scan into hourly buckets). */
export function statsTimesSql(filter: SqlFilter): SqlStatement {
  return {
    text: `SELECT extract(hour FROM h.hour_start)::int AS hour, to_char(h.hour_start, 'YYYY-MM-DD') AS day,
       sum(h.n)::int AS n, GROUPING(extract(hour FROM h.hour_start)::int) AS by_day
FROM (SELECT date_trunc('hour', e.timestamp AT TIME ZONE 'UTC') AS hour_start, count(*) AS n
      FROM events e ${filter.where} GROUP BY 1) h
GROUP BY GROUPING SETS ((extract(hour FROM h.hour_start)::int), (to_char(h.hour_start, 'YYYY-MM-DD')))`,
    values: filter.params,
  };
}

/** GET /events/export: every matching row in CSV column order (read through a cursor, rowMode 'array'). */
export function exportSql(filter: SqlFilter, sort: EventSort = '-timestamp'): SqlStatement {
  return {
    text: `SELECT ${EXPORT_COLUMNS} FROM events e JOIN cameras c ON c.id = e.camera_id ${filter.where} ${orderBy(sort)}`,
    values: filter.params,
  };
}

/** Columns an insert may set (beyond camera, timestamp and the defaults). */
export interface NewEventRow {
  cameraId: string;
  timestamp: Date;
  detectionType: DetectionType;
  objectsDetected: string[];
  confidence: number | null;
  description: string | null;
  descriptionStatus: DescriptionStatus;
  sourceType: EventSourceType;
  protectEventId: string | null;
  imageFile: string | null;
  providerUsed: string | null;
  modelUsed: string | null;
  aiConfidence: number | null;
  tokensUsed: number | null;
  aiCostUsd: number | null;
  responseTimeMs: number | null;
}

/** Columns an update may change. */
export interface EventPatch {
  detectionType?: DetectionType;
  objectsDetected?: string[];
  confidence?: number | null;
  description?: string | null;
  descriptionStatus?: DescriptionStatus;
  imageFile?: string | null;
  providerUsed?: string | null;
  modelUsed?: string | null;
  aiConfidence?: number | null;
  tokensUsed?: number | null;
  aiCostUsd?: number | null;
  responseTimeMs?: number | null;
  reanalysisCount?: number;
  reanalysedAt?: Date | null;
  /** When the AI queue may describe the event next (null: not queued); internal, not in the record. */
  descriptionDueAt?: Date | null;
  /** Failed description attempts since the last success or request (the queue's backoff); internal. */
  descriptionAttempts?: number;
}

const PATCH_COLUMNS: Record<keyof EventPatch, string> = {
  detectionType: 'detection_type = $?::detection_type',
  objectsDetected: 'objects_detected = $?::text[]',
  confidence: 'confidence = $?',
  description: 'description = $?',
  descriptionStatus: 'description_status = $?::description_status',
  imageFile: 'image_file = $?',
  providerUsed: 'provider_used = $?',
  modelUsed: 'model_used = $?',
  aiConfidence: 'ai_confidence = $?',
  tokensUsed: 'tokens_used = $?',
  aiCostUsd: 'ai_cost_usd = $?',
  responseTimeMs: 'response_time_ms = $?',
  reanalysisCount: 'reanalysis_count = $?',
  reanalysedAt: 'reanalysed_at = $?',
  descriptionDueAt: 'description_due_at = $?',
  descriptionAttempts: 'description_attempts = $?',
};

export interface StatsGroupRow {
  detection_type: DetectionType | null;
  camera_id: string | null;
  camera_name: string | null;
  n: number;
  average_confidence: number | null;
  first_at: Date | null;
  last_at: Date | null;
  /** GROUPING(detection_type, camera_id): 3 = the total, 1 = per type, 2 = per camera. */
  grouping: number;
}

export interface StatsTimeRow {
  hour: number | null;
  day: string | null;
  n: number;
  /** 1 for the per-day rows, 0 for the per-hour rows. */
  by_day: number;
}

/**
 * pg-query-stream whose destroy does not wait for the cursor to close: pg-cursor's close waits for the
 * server's ReadyForQuery, which never comes on a broken connection, so the stream would never close and
 * its connection never return. Export connections whose cursor did not run to its end are discarded
 * instead (see openExportCursor), which closes the cursor with them.
 */
class ExportQueryStream extends QueryStream {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- the signature of QueryStream
  override _destroy(error: Error, callback: Function): void {
    (callback as (error?: Error | null) => void)(error);
  }
}

/** Queries of the events resource (raw SQL: the filters, aggregates and cursor need it). */
@Injectable()
export class EventsRepository {
  private readonly logger = new Logger('EventsRepository');

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async list(
    filter: EventFilter,
    sort: EventSort,
    limit: number,
    offset: number,
  ): Promise<{ rows: EventWithCamera[]; total: number }> {
    const sql = buildEventFilter(filter);
    const count = countSql(sql);
    if (filter.q !== undefined) {
      // Word search: count first (fast through the GIN index), then list the way that suits the count.
      const total = (await this.dataSource.query<{ total: number }[]>(count.text, count.values))[0].total;
      if (total === 0 || offset >= total) return { rows: [], total };
      const list = listSql(sql, sort, limit, offset, total <= FEW_MATCHES);
      return { rows: await this.dataSource.query<EventWithCamera[]>(list.text, list.values), total };
    }
    const list = listSql(sql, sort, limit, offset);
    const [rows, totals] = await Promise.all([
      this.dataSource.query<EventWithCamera[]>(list.text, list.values),
      this.dataSource.query<{ total: number }[]>(count.text, count.values),
    ]);
    return { rows, total: totals[0].total };
  }

  async findById(id: string): Promise<EventWithCamera | null> {
    const rows = await this.dataSource.query<EventWithCamera[]>(
      `SELECT ${recordColumns('e', 'c')} FROM events e JOIN cameras c ON c.id = e.camera_id WHERE e.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Whether the event exists, and its image file name. */
  async findImage(id: string): Promise<{ imageFile: string | null } | null> {
    const rows = await this.dataSource.query<{ imageFile: string | null }[]>(
      'SELECT image_file AS "imageFile" FROM events WHERE id = $1',
      [id],
    );
    return rows[0] ?? null;
  }

  async stats(filter: EventFilter): Promise<{ groups: StatsGroupRow[]; times: StatsTimeRow[] }> {
    const sql = buildEventFilter(filter);
    const groupsSql = statsGroupsSql(sql);
    const timesSql = statsTimesSql(sql);
    const [groups, times] = await Promise.all([
      this.dataSource.query<StatsGroupRow[]>(groupsSql.text, groupsSql.values),
      this.dataSource.query<StatsTimeRow[]>(timesSql.text, timesSql.values),
    ]);
    return { groups, times };
  }

  /**
   * Inserts an event and moves its camera's `last_event_at` forward, in one statement (one transaction).
   * A pending event with an image is due for the AI queue at once (`description_due_at` = its timestamp, or
   * now for one stamped in the future; older events sort first). Returns null when the camera does not exist
   * (nothing is written then).
   */
  async insert(row: NewEventRow): Promise<EventWithCamera | null> {
    const rows = await this.dataSource.query<EventWithCamera[]>(
      `WITH cam AS (
         UPDATE cameras SET last_event_at = GREATEST(last_event_at, $2::timestamptz) WHERE id = $1 RETURNING id, name
       ), ins AS (
         INSERT INTO events (camera_id, timestamp, detection_type, objects_detected, confidence, description,
                             description_status, source_type, protect_event_id, image_file, provider_used,
                             model_used, ai_confidence, tokens_used, ai_cost_usd, response_time_ms,
                             description_due_at)
         SELECT cam.id, $2, $3::detection_type, $4::text[], $5, $6, $7::description_status,
                $8::event_source_type, $9, $10, $11, $12, $13, $14, $15, $16,
                CASE WHEN $7::description_status = 'pending' AND $10::varchar IS NOT NULL
                     THEN LEAST($2::timestamptz, now()) END
         FROM cam
         RETURNING *
       )
       SELECT ${recordColumns('ins', 'cam')} FROM ins JOIN cam ON cam.id = ins.camera_id`,
      [
        row.cameraId,
        row.timestamp,
        row.detectionType,
        row.objectsDetected,
        row.confidence,
        row.description,
        row.descriptionStatus,
        row.sourceType,
        row.protectEventId,
        row.imageFile,
        row.providerUsed,
        row.modelUsed,
        row.aiConfidence,
        row.tokensUsed,
        row.aiCostUsd,
        row.responseTimeMs,
      ],
    );
    return rows[0] ?? null;
  }

  /**
   * Applies a patch in one statement. Returns the updated record and the image file the event had
   * before (to remove it when the patch replaced it), or null when the event does not exist.
   */
  async update(
    id: string,
    patch: EventPatch,
  ): Promise<{ event: EventWithCamera; previousImageFile: string | null } | null> {
    const params: unknown[] = [id];
    const sets: string[] = [];
    for (const key of Object.keys(PATCH_COLUMNS) as (keyof EventPatch)[]) {
      if (patch[key] === undefined) continue;
      params.push(patch[key]);
      sets.push(PATCH_COLUMNS[key].replace('$?', `$${params.length}`));
    }
    if (sets.length === 0) {
      const event = await this.findById(id);
      return event ? { event, previousImageFile: event.imageFile } : null;
    }
    const rows = await this.dataSource.query<(EventWithCamera & { previousImageFile: string | null })[]>(
      `WITH old AS (SELECT id, image_file FROM events WHERE id = $1 FOR UPDATE),
       u AS (UPDATE events e SET ${sets.join(', ')} FROM old WHERE e.id = old.id RETURNING e.*)
       SELECT ${recordColumns('u', 'c')}, old.image_file AS "previousImageFile"
       FROM u JOIN cameras c ON c.id = u.camera_id JOIN old ON old.id = u.id`,
      params,
    );
    if (!rows[0]) return null;
    const { previousImageFile, ...event } = rows[0];
    return { event, previousImageFile };
  }

  /** Deletes an event; returns its camera and image file, or null when it did not exist. */
  async delete(id: string): Promise<{ cameraId: string; imageFile: string | null } | null> {
    // TypeORM answers a DELETE ... RETURNING with [rows, affected].
    const [rows] = await this.dataSource.query<[{ cameraId: string; imageFile: string | null }[], number]>(
      'DELETE FROM events WHERE id = $1 RETURNING camera_id AS "cameraId", image_file AS "imageFile"',
      [id],
    );
    return rows[0] ?? null;
  }

  /**
   * The export rows (ExportRow, in CSV order), read through a server-side cursor on a connection of its
   * own from TypeORM's pool: rows are fetched in batches as the consumer reads (backpressure), so memory
   * does not grow with the number of rows. The connection goes back to the pool when the stream ends;
   * when the stream fails or is destroyed early (client gone) the connection is discarded, cursor and all.
   * A connection that breaks mid-export (database restart) fails the stream at once, even while the
   * consumer is paused.
   */
  async openExportCursor(filter: EventFilter, sort: EventSort): Promise<Readable> {
    const { text, values } = exportSql(buildEventFilter(filter), sort);
    const pool = (this.dataSource.driver as unknown as { master: Pool }).master;
    const client: PoolClient = await pool.connect();
    const rows = client.query(new ExportQueryStream(text, values, { batchSize: 1000, rowMode: 'array' }));
    const onClientError = (error: Error) => {
      this.logger.warn({ msg: 'Export connection failed', error: error.message });
      rows.destroy(error);
    };
    const onClientEnd = () => rows.destroy(new Error('The database connection closed during the export'));
    client.on('error', onClientError);
    client.once('end', onClientEnd);
    let released = false;
    rows.once('close', () => {
      if (released) return;
      released = true;
      client.off('end', onClientEnd);
      client.off('error', onClientError);
      if (rows.readableEnded) {
        client.release();
        return;
      }
      // A cursor that did not run to its end may still be open on the connection: discard it. It may
      // still report its socket's failure; that must not become an unhandled 'error'.
      client.on('error', () => undefined);
      client.release(true);
    });
    return rows;
  }
}
