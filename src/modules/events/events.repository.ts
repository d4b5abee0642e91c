/*
 * SQL of the events API (for benchmarks comparing the API with the same SQL run directly through `pg`).
 * The exported builders return exactly the statements the service runs, as `{text, values}`:
 * listSql + totalSql (GET /events), statsSql (GET /events/stats), exportSql + copyCsvSql (GET
 * /events/export).
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
 * The rollup: table event_counts holds, per UTC day, camera, detection type and source, the number of
 * events, the count and sum of their confidences and the number per UTC hour of the day (h00..h23). It is
 * kept exact by statement-level triggers on events (insert, update, delete; migration EventCountsRollup).
 * Totals and stats whose filters it holds (camera_id, detection_type, source_type, time bounds; not
 * min_confidence or q) read the whole days from it and the partial days at the time bounds from events
 * (planRollup); the others count the events.
 *
 * GET /events (two statements, run concurrently on two pooled connections):
 *   SELECT <record columns> FROM (SELECT e.id, e.timestamp FROM events e <where>
 *       ORDER BY e.timestamp DESC, e.id DESC LIMIT $limit OFFSET $offset) p        (sort=timestamp: ASC, ASC)
 *     JOIN events e ON e.id = p.id JOIN cameras c ON c.id = e.camera_id ORDER BY p.timestamp DESC, p.id DESC
 *     (the page's ids first, from the index alone where it can, then 50 rows: deep pages stay cheap)
 *   SELECT sum(n) FROM event_counts r <whole days> + SELECT count(*) FROM events e <where> AND <partial days>
 *     (or SELECT count(*) FROM events e <where> when the rollup does not hold the filter)
 *   Word search (q) counts first, then lists the way that suits the count (see listSql).
 *
 * GET /events/stats (three statements from the rollup, two without it, run concurrently): totals, per type
 * and per camera (GROUPING SETS over the rollup's groups and the partial days' events), per UTC day and
 * hour of day, and the first and last event (index lookups); without the rollup, the same figures from
 * one scan of the events for the groups and one for the hours (statsGroupsSql, statsTimesSql).
 *
 * GET /events/export (one statement): COPY (SELECT <cells formatted in SQL: ISO timestamps, formula cells
 * neutralised, thumbnail path> FROM events e JOIN cameras c ... <where> ORDER BY ...) TO STDOUT (FORMAT csv),
 * with the filter values inlined as literals (COPY takes no parameters); events-export.ts adds the header
 * and turns the LF record ends into CRLF.
 */
import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InjectDataSource } from '@nestjs/typeorm';
import { Readable } from 'node:stream';
import { escapeLiteral, type Pool, type PoolClient } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { DataSource } from 'typeorm';
import { EVENTS_URL, type EventSort, type EventWithCamera } from './dto/event.dto';
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

/** Adds a value to a statement's parameters; returns its placeholder. */
function addParam(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}

/**
 * Builds the WHERE clause of the events queries (table alias `e`); see the comment at the top. `params`
 * continues the parameters of a statement that already has some (the clause's are appended to it).
 */
export function buildEventFilter(filter: EventFilter, params: unknown[] = []): SqlFilter {
  const conditions: string[] = [];
  const param = (value: unknown) => addParam(params, value);
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

export function orderBy(sort: EventSort, alias = 'e'): string {
  const direction = sort === 'timestamp' ? 'ASC' : 'DESC';
  return `ORDER BY ${alias}.timestamp ${direction}, ${alias}.id ${direction}`;
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
 * ISO 8601 UTC with milliseconds, truncated as JavaScript's Date truncates PostgreSQL's microseconds: the
 * same text as `Date.toISOString()` of the value pg parses.
 */
const isoTime = (expression: string) =>
  `to_char(${expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Where an event's stored image is served (`thumbnailUrl` in the DTOs); NULL without an image. */
const thumbnailPath = (e: string) =>
  `CASE WHEN ${e}.image_file IS NOT NULL THEN '${EVENTS_URL}/' || ${e}.id || '/thumbnail' END`;

/**
 * One event record as JSON text, built by PostgreSQL (compact, like JSON.stringify): the same fields, order
 * and values as `toEventResponse` (event.dto.ts) gives for the row; a test compares them. Lists send these
 * texts as they are, so a page costs the service no row parsing, mapping or serialising.
 */
function recordJson(e: string, c: string): string {
  const fields = [
    `${e}.id`,
    `${e}.camera_id`,
    `${c}.name AS camera_name`,
    `${isoTime(`${e}.timestamp`)} AS timestamp`,
    `${e}.detection_type`,
    `${e}.objects_detected`,
    `${e}.confidence`,
    `${e}.description`,
    `${e}.description_status`,
    `${e}.source_type`,
    `${e}.protect_event_id`,
    `${thumbnailPath(e)} AS thumbnail_url`,
    `${e}.provider_used`,
    `${e}.model_used`,
    `${e}.ai_confidence`,
    `${e}.tokens_used`,
    `${e}.ai_cost_usd::float8 AS ai_cost_usd`,
    `${e}.response_time_ms`,
    `${e}.reanalysis_count`,
    `${isoTime(`${e}.reanalysed_at`)} AS reanalysed_at`,
    `${isoTime(`${e}.created_at`)} AS created_at`,
  ];
  return `(SELECT row_to_json(r) FROM (SELECT ${fields.join(', ')}) r)::text AS record`;
}

/**
 * A text cell of the export: a value a spreadsheet would run as a formula (starting with `= + - @`, tab or
 * CR) gets a leading `'` (CSV injection); an empty text is NULL, an empty cell.
 */
function exportText(expression: string): string {
  return (
    // = + - @ tab CR, by code: ascii() is cheaper than left() on every row
    `CASE WHEN ascii(${expression}) IN (61, 43, 45, 64, 9, 13) ` +
    `THEN '''' || ${expression} ELSE nullif(${expression}, '') END`
  );
}

/**
 * The export's cells in CSV order (events-export.ts, CSV_COLUMNS), made by PostgreSQL: COPY ... (FORMAT
 * csv) quotes them (RFC 4180) and the service only turns its LF record ends into CRLF. `provider_used`
 * holds the service's own provider names (openai, anthropic, ...), which cannot start with a formula
 * character. Cameras are joined directly (not through a CTE of neutralised names), so the planner can walk
 * the timestamp index in order instead of sorting every exported row (which spills to disk).
 */
const EXPORT_COLUMNS = [
  'e.id',
  isoTime('e.timestamp'),
  'e.camera_id',
  exportText('c.name'),
  'e.detection_type',
  exportText(`array_to_string(e.objects_detected, ';')`),
  'e.confidence',
  exportText('e.description'),
  'e.source_type',
  'e.provider_used',
  thumbnailPath('e'),
  isoTime('e.created_at'),
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
      `SELECT ${recordJson('e', 'c')} FROM m JOIN events e ON e.id = m.id JOIN cameras c ON c.id = e.camera_id ${page}`
    : `SELECT ${recordJson('e', 'c')} FROM (SELECT e.id, e.timestamp FROM events e ${filter.where} ${page}) p ` +
      `JOIN events e ON e.id = p.id JOIN cameras c ON c.id = e.camera_id ${orderBy(sort, 'p')}`;
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

const DAY_MS = 86_400_000;
const HOURS = Array.from({ length: 24 }, (_, h) => `h${String(h).padStart(2, '0')}`);

/**
 * How a filter is answered from the daily rollup (table event_counts, kept by triggers on events): the
 * whole UTC days inside the time bounds come from the rollup, the partial days at the bounds (`before` /
 * `from`) from the events themselves. Null when the rollup cannot answer: filters it does not hold
 * (`min_confidence`, `q`) or bounds with no whole day between them.
 */
export interface RollupPlan {
  filter: EventFilter;
  /** First whole day (UTC midnight), when start_time is set. */
  firstDay?: Date;
  /** End of the last whole day (UTC midnight, exclusive), when end_time is set. */
  endDay?: Date;
}

export function planRollup(filter: EventFilter): RollupPlan | null {
  if (filter.minConfidence !== undefined || filter.q !== undefined) return null;
  const firstDay = filter.start ? new Date(Math.ceil(filter.start.getTime() / DAY_MS) * DAY_MS) : undefined;
  const endDay = filter.end ? new Date(Math.floor(filter.end.getTime() / DAY_MS) * DAY_MS) : undefined;
  if (firstDay && endDay && firstDay >= endDay) return null;
  return { filter, firstDay, endDay };
}

/** The rollup rows of the plan's whole days (alias `r`) and the events of its partial days (alias `e`; null: none). */
function rollupParts(plan: RollupPlan, params: unknown[]): { rollupWhere: string; edgeWhere: string | null } {
  const { filter, firstDay, endDay } = plan;
  const conditions: string[] = [];
  if (filter.cameraIds?.length)
    conditions.push(`r.camera_id = ANY(${addParam(params, filter.cameraIds)}::uuid[])`);
  if (filter.detectionTypes?.length)
    conditions.push(`r.detection_type = ANY(${addParam(params, filter.detectionTypes)}::detection_type[])`);
  if (filter.sourceTypes?.length)
    conditions.push(`r.source_type = ANY(${addParam(params, filter.sourceTypes)}::event_source_type[])`);
  const day = (d: Date) => `${addParam(params, d.toISOString().slice(0, 10))}::date`;
  if (firstDay) conditions.push(`r.day >= ${day(firstDay)}`);
  if (endDay) conditions.push(`r.day < ${day(endDay)}`);
  const rollupWhere = conditions.length ? `WHERE ${conditions.join(' AND ')}` : '';
  if (!firstDay && !endDay) return { rollupWhere, edgeWhere: null };
  const events = buildEventFilter(filter, params);
  const edges: string[] = [];
  if (firstDay) edges.push(`e.timestamp < ${addParam(params, firstDay)}`);
  if (endDay) edges.push(`e.timestamp >= ${addParam(params, endDay)}`);
  return { rollupWhere, edgeWhere: `${events.where} AND (${edges.join(' OR ')})` };
}

/** GET /events total from the rollup. */
export function countRollupSql(plan: RollupPlan): SqlStatement {
  const values: unknown[] = [];
  const { rollupWhere, edgeWhere } = rollupParts(plan, values);
  const edges = edgeWhere ? ` + (SELECT count(*) FROM events e ${edgeWhere})` : '';
  return {
    text: `SELECT ((SELECT coalesce(sum(r.n), 0) FROM event_counts r ${rollupWhere})${edges})::int AS total`,
    values,
  };
}

/**
 * GET /events/stats from the rollup: totals, per type and per camera, as statsGroupsSql returns them but
 * without first_at/last_at (firstLastSql).
 */
export function statsGroupsRollupSql(plan: RollupPlan): SqlStatement {
  const values: unknown[] = [];
  const { rollupWhere, edgeWhere } = rollupParts(plan, values);
  const edges = edgeWhere
    ? `UNION ALL SELECT e.detection_type, e.camera_id, count(*), count(e.confidence), sum(e.confidence)::float8
       FROM events e ${edgeWhere} GROUP BY 1, 2`
    : '';
  return {
    text: `SELECT g.detection_type, g.camera_id, min(c.name) AS camera_name, sum(g.n)::int AS n,
       round((sum(g.conf_sum) / nullif(sum(g.conf_n), 0))::numeric, 1)::float8 AS average_confidence,
       NULL::timestamptz AS first_at, NULL::timestamptz AS last_at,
       GROUPING(g.detection_type, g.camera_id) AS grouping
FROM (SELECT r.detection_type, r.camera_id, sum(r.n) AS n, sum(r.conf_n) AS conf_n, sum(r.conf_sum)::float8 AS conf_sum
      FROM event_counts r ${rollupWhere} GROUP BY 1, 2 ${edges}) g
JOIN cameras c ON c.id = g.camera_id
GROUP BY GROUPING SETS ((), (g.detection_type), (g.camera_id))`,
    values,
  };
}

/** GET /events/stats from the rollup: per UTC day and per UTC hour of day, as statsTimesSql returns them. */
export function statsTimesRollupSql(plan: RollupPlan): SqlStatement {
  const values: unknown[] = [];
  const { rollupWhere, edgeWhere } = rollupParts(plan, values);
  const edges = edgeWhere
    ? `, x AS (SELECT date_trunc('hour', e.timestamp AT TIME ZONE 'UTC') AS hour_start, count(*) AS n
               FROM events e ${edgeWhere} GROUP BY 1)`
    : '';
  const edgeRows = edgeWhere
    ? `UNION ALL SELECT NULL, to_char(x.hour_start, 'YYYY-MM-DD'), sum(x.n)::int, 1 FROM x GROUP BY 2
UNION ALL SELECT extract(hour FROM x.hour_start)::int, NULL, sum(x.n)::int, 0 FROM x GROUP BY 1`
    : '';
  return {
    text: `WITH d AS (SELECT r.day, sum(r.n) AS n, ${HOURS.map((h) => `sum(r.${h}) AS ${h}`).join(', ')}
           FROM event_counts r ${rollupWhere} GROUP BY r.day)${edges}
SELECT NULL::int AS hour, to_char(d.day, 'YYYY-MM-DD') AS day, d.n::int AS n, 1 AS by_day FROM d
UNION ALL SELECT v.hour, NULL, v.n::int, 0
  FROM (SELECT ${HOURS.map((h) => `sum(d.${h}) AS ${h}`).join(', ')} FROM d) s
  CROSS JOIN LATERAL (VALUES ${HOURS.map((h, i) => `(${i}, s.${h})`).join(', ')}) v(hour, n) WHERE v.n > 0
${edgeRows}`,
    values,
  };
}

/** GET /events/stats from the rollup: the first and last matching event (index lookups). */
export function firstLastSql(filter: SqlFilter): SqlStatement {
  return {
    text: `SELECT (SELECT min(e.timestamp) FROM events e ${filter.where}) AS first_at,
       (SELECT max(e.timestamp) FROM events e ${filter.where}) AS last_at`,
    values: filter.params,
  };
}

/** GET /events total: from the rollup where it holds the filter, else by counting the events. */
export function totalSql(filter: EventFilter): SqlStatement {
  const plan = planRollup(filter);
  return plan ? countRollupSql(plan) : countSql(buildEventFilter(filter));
}

/**
 * GET /events/stats (statements run concurrently): from the rollup where it holds the filter, with the
 * first/last event from index lookups (`bounds`, filling the total row), else from the events.
 */
export function statsSql(filter: EventFilter): {
  groups: SqlStatement;
  times: SqlStatement;
  bounds?: SqlStatement;
} {
  const plan = planRollup(filter);
  const sql = buildEventFilter(filter);
  if (!plan) return { groups: statsGroupsSql(sql), times: statsTimesSql(sql) };
  return { groups: statsGroupsRollupSql(plan), times: statsTimesRollupSql(plan), bounds: firstLastSql(sql) };
}

/** GET /events/export: every matching row's CSV cells, in CSV column order. */
export function exportSql(filter: SqlFilter, sort: EventSort = '-timestamp'): SqlStatement {
  return {
    text: `SELECT ${EXPORT_COLUMNS} FROM events e JOIN cameras c ON c.id = e.camera_id ${filter.where} ${orderBy(sort)}`,
    values: filter.params,
  };
}

/** A filter value as an SQL literal: text and timestamps quoted by pg's escapeLiteral, arrays as ARRAY[...]. */
function sqlLiteral(value: unknown): string {
  if (Array.isArray(value)) return `ARRAY[${value.map(sqlLiteral).join(', ')}]`;
  if (value instanceof Date) return escapeLiteral(value.toISOString());
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string') return escapeLiteral(value);
  throw new Error(`No SQL literal for ${typeof value}`);
}

/** `COPY (statement) TO STDOUT (FORMAT csv)`; COPY takes no parameters, so each `$n` becomes its literal. */
export function copyCsvSql(statement: SqlStatement): string {
  const text = statement.text.replace(/\$(\d+)/g, (_, n: string) =>
    sqlLiteral(statement.values[Number(n) - 1]),
  );
  return `COPY (${text}) TO STDOUT WITH (FORMAT csv)`;
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

/** What inserting one event came to: its record, or why it was not written. */
export type InsertOutcome = EventWithCamera | 'camera-missing' | 'duplicate';

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

/** Queries of the events resource (raw SQL: the filters, aggregates and cursor need it). */
@Injectable()
export class EventsRepository {
  private readonly logger = new Logger('EventsRepository');

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** One page of events as JSON record texts (`recordJson`), and the total matching the filter. */
  async list(
    filter: EventFilter,
    sort: EventSort,
    limit: number,
    offset: number,
  ): Promise<{ records: string[]; total: number }> {
    const sql = buildEventFilter(filter);
    const records = async (list: SqlStatement) =>
      (await this.dataSource.query<{ record: string }[]>(list.text, list.values)).map((r) => r.record);
    if (filter.q !== undefined) {
      const count = countSql(sql);
      // Word search: count first (fast through the GIN index), then list the way that suits the count.
      const total = (await this.dataSource.query<{ total: number }[]>(count.text, count.values))[0].total;
      if (total === 0 || offset >= total) return { records: [], total };
      return { records: await records(listSql(sql, sort, limit, offset, total <= FEW_MATCHES)), total };
    }
    const count = totalSql(filter);
    const [page, totals] = await Promise.all([
      records(listSql(sql, sort, limit, offset)),
      this.dataSource.query<{ total: number }[]>(count.text, count.values),
    ]);
    return { records: page, total: totals[0].total };
  }

  async findById(id: string): Promise<EventWithCamera | null> {
    const rows = await this.dataSource.query<EventWithCamera[]>(
      `SELECT ${recordColumns('e', 'c')} FROM events e JOIN cameras c ON c.id = e.camera_id WHERE e.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** The event a Protect console event became, if any. */
  async findByProtectEventId(protectEventId: string): Promise<EventWithCamera | null> {
    const rows = await this.dataSource.query<EventWithCamera[]>(
      `SELECT ${recordColumns('e', 'c')} FROM events e JOIN cameras c ON c.id = e.camera_id WHERE e.protect_event_id = $1`,
      [protectEventId],
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
    const statements = statsSql(filter);
    const query = <T>(statement: SqlStatement) => this.dataSource.query<T>(statement.text, statement.values);
    const [groups, times, bounds] = await Promise.all([
      query<StatsGroupRow[]>(statements.groups),
      query<StatsTimeRow[]>(statements.times),
      statements.bounds && query<{ first_at: Date | null; last_at: Date | null }[]>(statements.bounds),
    ]);
    const total = groups.find((g) => g.grouping === 3);
    if (total && bounds) Object.assign(total, bounds[0]);
    return { groups, times };
  }

  /**
   * Inserts events and moves their cameras' `last_event_at` forward, in one statement (one transaction,
   * one round trip for the whole batch). A pending event with an image is due for the AI queue at once
   * (`description_due_at` = its timestamp, or now for one stamped in the future; older events sort first).
   * Answers per row, in order: the record; `camera-missing` when its camera does not exist; `duplicate` when
   * an event with its `protect_event_id` exists already. Such rows are not written; the others are.
   */
  async insertMany(rows: NewEventRow[]): Promise<InsertOutcome[]> {
    const column = <T>(pick: (row: NewEventRow) => T) => rows.map(pick);
    // Ids made here, so each answer row finds its input row (ordinal) whatever else they share.
    const ids = rows.map(() => randomUUID());
    const result = await this.dataSource.query<
      (EventWithCamera & { ordinal: string; cameraFound: boolean; inserted: boolean })[]
    >(
      `WITH input AS (
         SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::detection_type[], $4::jsonb[], $5::smallint[],
                              $6::text[], $7::description_status[], $8::event_source_type[], $9::varchar[],
                              $10::varchar[], $11::varchar[], $12::varchar[], $13::smallint[], $14::integer[],
                              $15::numeric[], $16::integer[], $17::uuid[])
           WITH ORDINALITY AS i(camera_id, ts, detection_type, objects, confidence, description, description_status,
                                source_type, protect_event_id, image_file, provider_used, model_used, ai_confidence,
                                tokens_used, ai_cost_usd, response_time_ms, id, ordinal)
       ), cam AS (
         UPDATE cameras c SET last_event_at = GREATEST(c.last_event_at, m.ts)
         FROM (SELECT camera_id, max(ts) AS ts FROM input GROUP BY camera_id) m
         WHERE c.id = m.camera_id RETURNING c.id, c.name
       ), ins AS (
         INSERT INTO events (id, camera_id, timestamp, detection_type, objects_detected, confidence, description,
                             description_status, source_type, protect_event_id, image_file, provider_used,
                             model_used, ai_confidence, tokens_used, ai_cost_usd, response_time_ms,
                             description_due_at)
         SELECT i.id, i.camera_id, i.ts, i.detection_type, ARRAY(SELECT jsonb_array_elements_text(i.objects)), i.confidence,
                i.description, i.description_status, i.source_type, i.protect_event_id, i.image_file,
                i.provider_used, i.model_used, i.ai_confidence, i.tokens_used, i.ai_cost_usd, i.response_time_ms,
                CASE WHEN i.description_status = 'pending' AND i.image_file IS NOT NULL THEN LEAST(i.ts, now()) END
         FROM input i JOIN cam ON cam.id = i.camera_id
         ORDER BY i.ordinal
         ON CONFLICT (protect_event_id) WHERE protect_event_id IS NOT NULL DO NOTHING
         RETURNING *
       )
       SELECT i.ordinal, cam.id IS NOT NULL AS "cameraFound", ins.id IS NOT NULL AS inserted, ${recordColumns('ins', 'cam')}
       FROM input i
       LEFT JOIN cam ON cam.id = i.camera_id
       LEFT JOIN ins ON ins.id = i.id
       ORDER BY i.ordinal`,
      [
        column((r) => r.cameraId),
        column((r) => r.timestamp),
        column((r) => r.detectionType),
        column((r) => JSON.stringify(r.objectsDetected)),
        column((r) => r.confidence),
        column((r) => r.description),
        column((r) => r.descriptionStatus),
        column((r) => r.sourceType),
        column((r) => r.protectEventId),
        column((r) => r.imageFile),
        column((r) => r.providerUsed),
        column((r) => r.modelUsed),
        column((r) => r.aiConfidence),
        column((r) => r.tokensUsed),
        column((r) => r.aiCostUsd),
        column((r) => r.responseTimeMs),
        ids,
      ],
    );
    return result.map(({ ordinal: _ordinal, cameraFound, inserted, ...event }) =>
      inserted ? event : cameraFound ? 'duplicate' : 'camera-missing',
    );
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
   * The export's CSV records (LF-ended, in CSV_COLUMNS order), streamed by COPY on a connection of its own
   * from TypeORM's pool: the server sends rows as the consumer reads (backpressure through the socket), so
   * memory does not grow with the number of rows. The connection goes back to the pool when the stream
   * ends; when the stream fails or is destroyed early (client gone) the connection is discarded, COPY and
   * all. A connection that breaks mid-export (database restart) fails the stream at once, even while the
   * consumer is paused.
   */
  async openExportCopy(filter: EventFilter, sort: EventSort): Promise<Readable> {
    const copy = copyCsvSql(exportSql(buildEventFilter(filter), sort));
    const pool = (this.dataSource.driver as unknown as { master: Pool }).master;
    const client: PoolClient = await pool.connect();
    const records = client.query(copyTo(copy));
    const onClientError = (error: Error) => {
      this.logger.warn({ msg: 'Export connection failed', error: error.message });
      records.destroy(error);
    };
    const onClientEnd = () => records.destroy(new Error('The database connection closed during the export'));
    client.on('error', onClientError);
    client.once('end', onClientEnd);
    let released = false;
    records.once('close', () => {
      if (released) return;
      released = true;
      client.off('end', onClientEnd);
      client.off('error', onClientError);
      if (records.readableEnded) {
        client.release();
        return;
      }
      // A COPY that did not run to its end may still be sending: discard the connection. It may still
      // report its socket's failure; that must not become an unhandled 'error'.
      client.on('error', () => undefined);
      client.release(true);
    });
    return records;
  }
}
