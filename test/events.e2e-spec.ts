import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { buildEventFilter } from '../src/modules/events/events.repository';
import { EventsService } from '../src/modules/events/events.service';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainMessage } from '../src/modules/realtime/domain-events';
import { binaryBody, startTestApp, TestApp } from './support/test-app';

/**
 * The events resource end to end: list filters (alone, combined, comma lists, time bounds, paging, sort,
 * word search), stats, the CSV export, ingestion with images, thumbnails, delete, scopes and the domain
 * events. Expected results are computed from the seeded rows in the test (an oracle), not copied.
 */

/** A 16x16 red JPEG made by ffmpeg (`-f lavfi -i color=c=red:s=16x16 -frames:v 1`). */
const RED_JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgEBAQEBAUFBQUFBQYGBgYGBgYGBgYGBgYHBwcICAgHBwcGBgcHCAgICAkJCQgICAgJCQoKCgwMCwsODg4RERT/xABMAAEBAAAAAAAAAAAAAAAAAAAABgEBAQAAAAAAAAAAAAAAAAAABgcQAQAAAAAAAAAAAAAAAAAAAAARAQAAAAAAAAAAAAAAAAAAAAD/wAARCAAQABADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLAFF/f//Z',
  'base64',
);
const PNG_1x1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const UNKNOWN_ID = '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5b';
const MALFORMED_IDS = ['not-a-uuid', '12345', '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5'];
const CSV_HEADER =
  'id,timestamp,camera_id,camera_name,detection_type,objects_detected,confidence,description,source_type,provider_used,thumbnail_url,created_at';
const RECORD_FIELDS = [
  'ai_confidence',
  'ai_cost_usd',
  'camera_id',
  'camera_name',
  'confidence',
  'created_at',
  'description',
  'description_status',
  'detection_type',
  'id',
  'model_used',
  'objects_detected',
  'protect_event_id',
  'provider_used',
  'reanalysed_at',
  'reanalysis_count',
  'response_time_ms',
  'source_type',
  'thumbnail_url',
  'timestamp',
  'tokens_used',
];

type CameraKey = 'front' | 'garage' | 'side';
interface Seed {
  key: string;
  camera: CameraKey;
  timestamp: string;
  type: string;
  objects: string[];
  confidence: number | null;
  description: string | null;
  source: string;
}

/** The seeded events. E1 and E2 share a timestamp (tie broken by id). */
// prettier-ignore
const SEEDS: Seed[] = [
  { key: 'E1', camera: 'front', timestamp: '2026-01-05T06:15:00.000Z', type: 'person', objects: ['person'], confidence: 91, description: 'A person walks to the front door', source: 'rtsp' },
  { key: 'E2', camera: 'front', timestamp: '2026-01-05T06:15:00.000Z', type: 'vehicle', objects: ['car'], confidence: 80, description: 'Red car parks in the driveway', source: 'rtsp' },
  { key: 'E3', camera: 'garage', timestamp: '2026-01-06T23:59:59.999Z', type: 'animal', objects: ['cat'], confidence: 45, description: 'A cat crosses the lawn', source: 'mjpeg' },
  { key: 'E4', camera: 'garage', timestamp: '2026-01-07T00:00:00.000Z', type: 'package', objects: ['box', 'person'], confidence: 79, description: 'Courier leaves a PACKAGE at the door', source: 'mjpeg' },
  { key: 'E5', camera: 'side', timestamp: '2026-01-08T12:30:00.000Z', type: 'person', objects: ['car', 'person'], confidence: 100, description: 'Car, then a person; both leave', source: 'usb' },
  { key: 'E6', camera: 'side', timestamp: '2026-01-09T18:00:00.000Z', type: 'vehicle', objects: ['van'], confidence: 60, description: 'Cartoon van drives by', source: 'usb' },
  { key: 'E7', camera: 'front', timestamp: '2026-01-10T10:00:00.000Z', type: 'motion', objects: [], confidence: null, description: null, source: 'protect' },
  { key: 'E8', camera: 'garage', timestamp: '2026-01-11T03:03:03.003Z', type: 'unknown', objects: [], confidence: 0, description: '=HYPERLINK("http://evil.example","click")', source: 'api' },
  { key: 'E9', camera: 'side', timestamp: '2026-01-12T07:45:00.000Z', type: 'ring', objects: [], confidence: 88, description: 'He said "hi", then left', source: 'protect' },
  { key: 'E10', camera: 'front', timestamp: '2026-01-13T21:00:00.000Z', type: 'face', objects: ['face'], confidence: 70, description: 'Line one\nline two\r\nline three', source: 'rtsp' },
  { key: 'E11', camera: 'garage', timestamp: '2026-01-14T14:14:14.140Z', type: 'license_plate', objects: ['plate'], confidence: 95, description: '-5 degrees; plate ABC123', source: 'mjpeg' },
  { key: 'E12', camera: 'front', timestamp: '2026-01-15T00:00:00.000Z', type: 'person', objects: ['person', 'dog'], confidence: 85, description: '@here a person with a dog', source: 'rtsp' },
];

const CAMERA_NAMES: Record<CameraKey, string> = {
  front: 'Front door',
  garage: 'Garage',
  side: '+Side, "gate"',
};
const CAMERA_SOURCES: Record<CameraKey, string> = { front: 'rtsp', garage: 'mjpeg', side: 'usb' };

/** RFC 4180 parser that refuses anything loose (bare CR/LF/quotes, a last record without CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  for (let i = 0; i < text.length;) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
        } else {
          quoted = false;
          i++;
        }
      } else {
        field += ch;
        i++;
      }
      continue;
    }
    if (ch === '"' && field === '' && !wasQuoted) {
      quoted = true;
      wasQuoted = true;
      i++;
    } else if (ch === ',') {
      row.push(field);
      field = '';
      wasQuoted = false;
      i++;
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      wasQuoted = false;
      i += 2;
    } else if (ch === '\r' || ch === '\n' || ch === '"' || wasQuoted) {
      throw new Error(`Malformed CSV at ${i}: ${JSON.stringify(text.slice(Math.max(0, i - 20), i + 20))}`);
    } else {
      field += ch;
      i++;
    }
  }
  if (quoted || field !== '' || row.length > 0) throw new Error('The last CSV record is not CRLF-terminated');
  return rows;
}

/** Words as PostgreSQL's `simple` configuration sees them, for the plain words used in these tests. */
const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

interface Oracle {
  camera?: CameraKey[];
  type?: string[];
  source?: string[];
  start?: string;
  end?: string;
  minConfidence?: number;
  q?: string;
}

describe('events (e2e)', () => {
  let t: TestApp;
  let admin: string;
  let readEventsKey: string;
  let readCamerasKey: string;
  let writeCamerasKey: string;
  const cameraIds = {} as Record<CameraKey, string>;
  /** Seed key -> event id. */
  const ids: Record<string, string> = {};
  const keyOf: Record<string, string> = {};

  const auth = () => ({ Authorization: `Bearer ${admin}` });
  const get = (path: string) => t.http.get(path).set(auth());

  /** Seeds matching the oracle filter, newest first (ties by id, descending). */
  function expected(filter: Oracle, order: 'desc' | 'asc' = 'desc'): string[] {
    const rows = SEEDS.filter((s) => {
      if (filter.camera && !filter.camera.includes(s.camera)) return false;
      if (filter.type && !filter.type.includes(s.type)) return false;
      if (filter.source && !filter.source.includes(s.source)) return false;
      if (filter.start && Date.parse(s.timestamp) < Date.parse(filter.start)) return false;
      if (filter.end && Date.parse(s.timestamp) > Date.parse(filter.end)) return false;
      if (
        filter.minConfidence !== undefined &&
        (s.confidence === null || s.confidence < filter.minConfidence)
      )
        return false;
      if (filter.q !== undefined) {
        const have = new Set(words(s.description ?? ''));
        if (!words(filter.q).every((w) => have.has(w))) return false;
      }
      return true;
    });
    const sorted = rows
      .map((s) => ({ ts: Date.parse(s.timestamp), id: ids[s.key] }))
      .sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => r.id);
    return order === 'desc' ? sorted.reverse() : sorted;
  }

  const list = async (query: string, status = 200) =>
    (await get(`/api/v1/events?${query}`).expect(status)).body;
  const listIds = async (query: string) =>
    (await list(`limit=500&${query}`)).items.map((e: { id: string }) => e.id);
  const keys = (eventIds: string[]) => eventIds.map((id) => keyOf[id] ?? id);

  function nextMessage(
    type: string,
    match: (data: Record<string, unknown>) => boolean,
  ): Promise<DomainMessage> {
    const bus = t.app.get(DomainEventBus);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`No ${type} message within 3 s`));
      }, 3000);
      const off = bus.subscribe((message) => {
        if (message.type === type && match(message.data as Record<string, unknown>)) {
          clearTimeout(timer);
          off();
          resolve(message);
        }
      });
    });
  }

  function imageFiles(): string[] {
    const root = join(t.config.dataDir, 'images');
    if (!existsSync(root)) return [];
    return readdirSync(root).flatMap((shard) => readdirSync(join(root, shard)).map((f) => `${shard}/${f}`));
  }

  const eventCount = async () =>
    Number((await t.sql<{ n: string }>('SELECT count(*) AS n FROM events'))[0].n);

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
    readEventsKey = (await t.createApiKey({ name: 'events reader', scopes: ['read:events'] })).key;
    readCamerasKey = (await t.createApiKey({ name: 'cameras reader', scopes: ['read:cameras'] })).key;
    writeCamerasKey = (await t.createApiKey({ name: 'cameras writer', scopes: ['write:cameras'] })).key;
    for (const key of Object.keys(CAMERA_NAMES) as CameraKey[]) {
      const [row] = await t.sql<{ id: string }>(
        'INSERT INTO cameras (name, source_type, url) VALUES ($1, $2, $3) RETURNING id',
        [CAMERA_NAMES[key], CAMERA_SOURCES[key], key === 'side' ? null : `rtsp://192.0.2.1/${key}`],
      );
      cameraIds[key] = row.id;
    }
    for (const s of SEEDS) {
      const [row] = await t.sql<{ id: string }>(
        `INSERT INTO events (camera_id, timestamp, detection_type, objects_detected, confidence, description,
                             description_status, source_type)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
        [
          cameraIds[s.camera],
          s.timestamp,
          s.type,
          s.objects,
          s.confidence,
          s.description,
          s.description ? 'complete' : 'pending',
          s.source,
        ],
      );
      ids[s.key] = row.id;
      keyOf[row.id] = s.key;
    }
  });
  afterAll(() => t.close());

  describe('GET /events', () => {
    it('returns the page envelope with full records, newest first by default', async () => {
      const body = await list('');
      expect(body).toMatchObject({ total: 12, page: 1, limit: 50, pages: 1 });
      expect(keys(body.items.map((e: { id: string }) => e.id))).toEqual(keys(expected({})));
      const e5 = body.items.find((e: { id: string }) => e.id === ids.E5);
      expect(Object.keys(e5).sort()).toEqual(RECORD_FIELDS);
      expect(e5).toMatchObject({
        camera_id: cameraIds.side,
        camera_name: '+Side, "gate"',
        timestamp: '2026-01-08T12:30:00.000Z',
        detection_type: 'person',
        objects_detected: ['car', 'person'],
        confidence: 100,
        description: 'Car, then a person; both leave',
        description_status: 'complete',
        source_type: 'usb',
        thumbnail_url: null,
        reanalysis_count: 0,
      });
      const e7 = body.items.find((e: { id: string }) => e.id === ids.E7);
      expect(e7).toMatchObject({ confidence: null, description: null, description_status: 'pending' });
    });

    it('sorts both ways and breaks timestamp ties by id', async () => {
      expect(keys(await listIds('sort=-timestamp'))).toEqual(keys(expected({}, 'desc')));
      expect(keys(await listIds('sort=timestamp'))).toEqual(keys(expected({}, 'asc')));
      const asc = await listIds('sort=timestamp');
      const tie = [ids.E1, ids.E2].sort();
      expect(asc.indexOf(tie[0])).toBeLessThan(asc.indexOf(tie[1]));
      await list('sort=camera', 422);
      await list('sort=', 422);
    });

    it('pages: limit 1 and 500, the last page, a page past the end', async () => {
      const all = expected({});
      const one = await list('limit=1&page=3');
      expect(one).toMatchObject({ total: 12, page: 3, limit: 1, pages: 12 });
      expect(one.items.map((e: { id: string }) => e.id)).toEqual([all[2]]);
      expect(await list('limit=500')).toMatchObject({ total: 12, limit: 500, pages: 1 });

      const seen: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const body = await list(`limit=5&page=${page}`);
        expect(body).toMatchObject({ total: 12, page, limit: 5, pages: 3 });
        expect(body.items).toHaveLength(page === 3 ? 2 : 5);
        seen.push(...body.items.map((e: { id: string }) => e.id));
      }
      expect(seen).toEqual(all);
      const past = await list('limit=5&page=4');
      expect(past).toEqual({ items: [], total: 12, page: 4, limit: 5, pages: 3 });
      expect(await list('page=1000')).toMatchObject({ items: [], total: 12, page: 1000 });
    });

    it.each([
      ['limit=0', 'query.limit'],
      ['limit=501', 'query.limit'],
      ['limit=abc', 'query.limit'],
      ['limit=1.5', 'query.limit'],
      ['page=0', 'query.page'],
      ['page=-1', 'query.page'],
      ['page=abc', 'query.page'],
      ['page=1&page=2', 'query.page'],
      ['camera_id=not-a-uuid', 'query.camera_id'],
      ['camera_id=', 'query.camera_id'],
      [`camera_id=${UNKNOWN_ID},nope`, 'query.camera_id'],
      ['detection_type=dragon', 'query.detection_type'],
      ['detection_type=person,,vehicle', 'query.detection_type'],
      ['source_type=ftp', 'query.source_type'],
      ['start_time=yesterday', 'query.start_time'],
      ['start_time=2026-13-01T00:00:00Z', 'query.start_time'],
      ['end_time=1736000000', 'query.end_time'],
      ['end_time=2026-01-05', 'query.end_time'],
      ['start_time=2026-01-10T00:00:00Z&end_time=2026-01-09T00:00:00Z', 'query.end_time'],
      ['min_confidence=101', 'query.min_confidence'],
      ['min_confidence=-1', 'query.min_confidence'],
      ['min_confidence=high', 'query.min_confidence'],
      ['q=', 'query.q'],
      ['q=%2C%2C%2C', 'query.q'],
      [`q=${'a'.repeat(201)}`, 'query.q'],
      ['colour=red', 'query.colour'],
    ])('refuses %s with 422 naming %s', async (query, field) => {
      const body = await list(query, 422);
      expect(body.status_code).toBe(422);
      expect(body.errors.map((e: { field: string }) => e.field)).toContain(field);
    });

    describe('filters', () => {
      const cases: [string, () => string, Oracle][] = [
        ['one camera', () => `camera_id=${cameraIds.garage}`, { camera: ['garage'] }],
        [
          'a comma list of cameras',
          () => `camera_id=${cameraIds.garage},${cameraIds.side}`,
          { camera: ['garage', 'side'] },
        ],
        [
          'a camera id in upper case',
          () => `camera_id=${cameraIds.side.toUpperCase()}`,
          { camera: ['side'] },
        ],
        [
          'repeated camera_id parameters',
          () => `camera_id=${cameraIds.front}&camera_id=${cameraIds.side}`,
          { camera: ['front', 'side'] },
        ],
        ['an unknown camera', () => `camera_id=${UNKNOWN_ID}`, { camera: [] }],
        ['one detection type', () => 'detection_type=person', { type: ['person'] }],
        [
          'a comma list of types',
          () => 'detection_type=vehicle,animal,ring',
          { type: ['vehicle', 'animal', 'ring'] },
        ],
        ['one source type', () => 'source_type=protect', { source: ['protect'] }],
        ['a comma list of sources', () => 'source_type=usb,api', { source: ['usb', 'api'] }],
        [
          'start_time (inclusive)',
          () => 'start_time=2026-01-07T00:00:00.000Z',
          { start: '2026-01-07T00:00:00.000Z' },
        ],
        [
          'end_time (inclusive)',
          () => 'end_time=2026-01-06T23:59:59.999Z',
          { end: '2026-01-06T23:59:59.999Z' },
        ],
        [
          'both bounds, inclusive at both ends',
          () => 'start_time=2026-01-05T06:15:00.000Z&end_time=2026-01-07T00:00:00.000Z',
          { start: '2026-01-05T06:15:00.000Z', end: '2026-01-07T00:00:00.000Z' },
        ],
        [
          'equal bounds (one instant)',
          () => 'start_time=2026-01-08T12:30:00Z&end_time=2026-01-08T12:30:00Z',
          { start: '2026-01-08T12:30:00Z', end: '2026-01-08T12:30:00Z' },
        ],
        [
          'a time with a zone offset',
          () => 'start_time=2026-01-07T01:00:00%2B01:00',
          { start: '2026-01-07T00:00:00.000Z' },
        ],
        [
          'a time without a zone (UTC)',
          () => 'end_time=2026-01-07T00:00:00',
          { end: '2026-01-07T00:00:00.000Z' },
        ],
        ['min_confidence (inclusive, no nulls)', () => 'min_confidence=80', { minConfidence: 80 }],
        ['min_confidence=0 (leaves out events without one)', () => 'min_confidence=0', { minConfidence: 0 }],
        ['a word', () => 'q=door', { q: 'door' }],
        ['a word, not a part of another word', () => 'q=car', { q: 'car' }],
        ['all words must occur, any case', () => 'q=CAR%20person', { q: 'car person' }],
        ['upper-case text matches a lower-case word', () => 'q=package', { q: 'package' }],
        ['words in any order', () => 'q=door%20the', { q: 'door the' }],
        ['no match', () => 'q=zebra', { q: 'zebra' }],
        [
          'camera + type + start',
          () => `camera_id=${cameraIds.front}&detection_type=person&start_time=2026-01-06T00:00:00Z`,
          { camera: ['front'], type: ['person'], start: '2026-01-06T00:00:00Z' },
        ],
        [
          'types + min_confidence + q',
          () => 'detection_type=person,package&min_confidence=80&q=person',
          { type: ['person', 'package'], minConfidence: 80, q: 'person' },
        ],
        [
          'cameras + source + time window',
          () =>
            `camera_id=${cameraIds.garage},${cameraIds.side}&source_type=mjpeg,protect&start_time=2026-01-07T00:00:00Z&end_time=2026-01-14T14:14:14.140Z`,
          {
            camera: ['garage', 'side'],
            source: ['mjpeg', 'protect'],
            start: '2026-01-07T00:00:00Z',
            end: '2026-01-14T14:14:14.140Z',
          },
        ],
        [
          'every filter at once',
          () =>
            `camera_id=${cameraIds.front},${cameraIds.side}&detection_type=person,vehicle&source_type=rtsp,usb&start_time=2026-01-05T06:15:00Z&end_time=2026-01-15T00:00:00Z&min_confidence=85&q=person`,
          {
            camera: ['front', 'side'],
            type: ['person', 'vehicle'],
            source: ['rtsp', 'usb'],
            start: '2026-01-05T06:15:00Z',
            end: '2026-01-15T00:00:00Z',
            minConfidence: 85,
            q: 'person',
          },
        ],
      ];

      it.each(cases)('%s', async (_name, query, oracle) => {
        const want = expected(oracle);
        const body = await list(`limit=500&${query()}`);
        expect(keys(body.items.map((e: { id: string }) => e.id))).toEqual(keys(want));
        expect(body.total).toBe(want.length);
        expect(body.pages).toBe(want.length === 0 ? 0 : 1);
      });

      it('expected results are not trivial (the oracle selects different sets)', () => {
        expect(
          expected({ q: 'car' })
            .map((id) => keyOf[id])
            .sort(),
        ).toEqual(['E2', 'E5']);
        expect(expected({ q: 'car person' }).map((id) => keyOf[id])).toEqual(['E5']);
        expect(expected({ start: '2026-01-05T06:15:00.000Z', end: '2026-01-07T00:00:00.000Z' })).toHaveLength(
          4,
        );
        expect(expected({ minConfidence: 0 })).toHaveLength(11);
      });

      it('counts the total over all pages of a filtered list', async () => {
        const body = await list('detection_type=person&limit=2&page=2');
        expect(body).toMatchObject({ total: 3, page: 2, limit: 2, pages: 2 });
        expect(body.items.map((e: { id: string }) => e.id)).toEqual(expected({ type: ['person'] }).slice(2));
      });

      it('word search uses the GIN expression index', async () => {
        const { where, params } = buildEventFilter({ q: 'red car' });
        const runner = t.app.get(DataSource).createQueryRunner();
        await runner.startTransaction();
        try {
          await runner.query('SET LOCAL enable_seqscan = off');
          const plan = (await runner.query(`EXPLAIN SELECT e.id FROM events e ${where}`, params)) as {
            'QUERY PLAN': string;
          }[];
          expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toContain('events_description_fts_idx');
        } finally {
          await runner.rollbackTransaction();
          await runner.release();
        }
      });
    });
  });

  describe('GET /events/{id}', () => {
    it('returns the record, the same as in the list', async () => {
      const one = (await get(`/api/v1/events/${ids.E9}`).expect(200)).body;
      const fromList = (await list(`limit=500`)).items.find((e: { id: string }) => e.id === ids.E9);
      expect(one).toEqual(fromList);
      expect(one).toMatchObject({
        id: ids.E9,
        camera_name: '+Side, "gate"',
        description: 'He said "hi", then left',
      });
    });

    it('lists every field as the record endpoint gives it (list JSON made in SQL, records by toEventResponse)', async () => {
      const description = 'Line 1\nLine 2\t"quoted" \\ back \u0001 ctrl \u2028 \u00fc \u{1F600}';
      const [row] = await t.sql<{ id: string }>(
        `INSERT INTO events (camera_id, timestamp, detection_type, objects_detected, confidence, description,
                             description_status, source_type, protect_event_id, image_file, provider_used,
                             model_used, ai_confidence, tokens_used, ai_cost_usd, response_time_ms,
                             reanalysis_count, reanalysed_at, created_at)
         VALUES ($1, '2026-02-03T04:05:06.789999Z', 'license_plate', $2, 0, $3, 'complete', 'protect', 'pe-1',
                 $4, 'openai', 'gpt-4o-mini', 87, 1234, 0.000123, 4567, 2, '2026-02-03T04:05:07.000999Z',
                 '1999-12-31T23:59:59.999999Z')
         RETURNING id`,
        [cameraIds.front, ['plate:AB"C\\1', 'ü'], description, 'ab/abababab-0000-4000-8000-000000000000.jpg'],
      );
      try {
        const items = (await list(`camera_id=${cameraIds.front}&limit=500`)).items as { id: string }[];
        expect(items.length).toBeGreaterThan(1);
        for (const item of items)
          expect(item).toEqual((await get(`/api/v1/events/${item.id}`).expect(200)).body);
        expect(items.find((e) => e.id === row.id)).toEqual({
          id: row.id,
          camera_id: cameraIds.front,
          camera_name: CAMERA_NAMES.front,
          timestamp: '2026-02-03T04:05:06.789Z',
          detection_type: 'license_plate',
          objects_detected: ['plate:AB"C\\1', 'ü'],
          confidence: 0,
          description,
          description_status: 'complete',
          source_type: 'protect',
          protect_event_id: 'pe-1',
          thumbnail_url: `/api/v1/events/${row.id}/thumbnail`,
          provider_used: 'openai',
          model_used: 'gpt-4o-mini',
          ai_confidence: 87,
          tokens_used: 1234,
          ai_cost_usd: 0.000123,
          response_time_ms: 4567,
          reanalysis_count: 2,
          reanalysed_at: '2026-02-03T04:05:07.000Z',
          created_at: '1999-12-31T23:59:59.999Z',
        });
      } finally {
        await t.sql('DELETE FROM events WHERE id = $1', [row.id]);
      }
    });

    it.each([UNKNOWN_ID, ...MALFORMED_IDS])('answers 404 for %s', async (id) => {
      const res = await get(`/api/v1/events/${id}`).expect(404);
      expect(res.body).toEqual({ detail: 'Event not found', status_code: 404 });
    });
  });

  describe('GET /events/stats', () => {
    function expectedStats(filter: Oracle) {
      const rows = SEEDS.filter((s) => expected(filter).includes(ids[s.key]));
      const byType: Record<string, number> = {
        person: 0,
        vehicle: 0,
        animal: 0,
        package: 0,
        face: 0,
        license_plate: 0,
        motion: 0,
        ring: 0,
        unknown: 0,
      };
      const byCamera = new Map<CameraKey, number>();
      const byHour = new Array<number>(24).fill(0);
      const byDay = new Map<string, number>();
      for (const s of rows) {
        byType[s.type]++;
        byCamera.set(s.camera, (byCamera.get(s.camera) ?? 0) + 1);
        byHour[new Date(s.timestamp).getUTCHours()]++;
        const day = s.timestamp.slice(0, 10);
        byDay.set(day, (byDay.get(day) ?? 0) + 1);
      }
      const confidences = rows.map((s) => s.confidence).filter((c): c is number => c !== null);
      const times = rows.map((s) => Date.parse(s.timestamp));
      return {
        total: rows.length,
        by_detection_type: byType,
        by_camera: [...byCamera.entries()]
          .map(([camera, count]) => ({
            camera_id: cameraIds[camera],
            camera_name: CAMERA_NAMES[camera],
            count,
          }))
          .sort((a, b) => b.count - a.count || a.camera_name.localeCompare(b.camera_name)),
        by_hour: byHour,
        by_day: [...byDay.entries()].sort().map(([date, count]) => ({ date, count })),
        average_confidence: confidences.length
          ? Math.round((confidences.reduce((a, b) => a + b, 0) / confidences.length) * 10) / 10
          : null,
        first_event_at: times.length ? new Date(Math.min(...times)).toISOString() : null,
        last_event_at: times.length ? new Date(Math.max(...times)).toISOString() : null,
      };
    }

    it('computes every figure over all events', async () => {
      const body = (await get('/api/v1/events/stats').expect(200)).body;
      const want = expectedStats({});
      expect(body).toEqual(want);
      // Spot checks against hand-counted values, so a wrong oracle cannot hide a wrong answer.
      expect(body.total).toBe(12);
      expect(body.by_detection_type.person).toBe(3);
      expect(body.by_hour[6]).toBe(2);
      expect(body.by_hour[0]).toBe(2);
      expect(body.average_confidence).toBe(72.1);
      expect(body.by_camera[0]).toEqual({ camera_id: cameraIds.front, camera_name: 'Front door', count: 5 });
      expect(body.by_day[0]).toEqual({ date: '2026-01-05', count: 2 });
      expect(body.first_event_at).toBe('2026-01-05T06:15:00.000Z');
      expect(body.last_event_at).toBe('2026-01-15T00:00:00.000Z');
    });

    it.each<[string, () => string, Oracle]>([
      ['a camera', () => `camera_id=${cameraIds.garage}`, { camera: ['garage'] }],
      [
        'types and a time window',
        () => 'detection_type=person,vehicle&end_time=2026-01-09T18:00:00Z',
        { type: ['person', 'vehicle'], end: '2026-01-09T18:00:00Z' },
      ],
      ['min_confidence and q', () => 'min_confidence=50&q=person', { minConfidence: 50, q: 'person' }],
      ['sources', () => 'source_type=protect,api', { source: ['protect', 'api'] }],
    ])('applies the filters: %s', async (_name, query, oracle) => {
      const body = (await get(`/api/v1/events/stats?${query()}`).expect(200)).body;
      expect(body).toEqual(expectedStats(oracle));
      expect(body.total).toBeGreaterThan(0);
    });

    it('answers zeros and nulls when nothing matches', async () => {
      const body = (await get('/api/v1/events/stats?q=zebra').expect(200)).body;
      expect(body).toEqual({
        total: 0,
        by_detection_type: expectedStats({ q: 'zebra' }).by_detection_type,
        by_camera: [],
        by_hour: new Array(24).fill(0),
        by_day: [],
        average_confidence: null,
        first_event_at: null,
        last_event_at: null,
      });
    });

    it('refuses bad filters and list-only parameters with 422', async () => {
      await get('/api/v1/events/stats?detection_type=dragon').expect(422);
      await get('/api/v1/events/stats?page=1').expect(422);
      await get('/api/v1/events/stats?sort=timestamp').expect(422);
    });
  });

  describe('GET /events/export', () => {
    async function exportCsv(query = '') {
      const res = await get(`/api/v1/events/export?${query}`).expect(200);
      return { res, text: res.text, rows: parseCsv(res.text) };
    }

    it('is RFC 4180 CSV with the exact header and one row per event', async () => {
      const before = Date.now();
      const { res, text, rows } = await exportCsv();
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      const disposition =
        /^attachment; filename="events-(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})\.csv"$/.exec(
          res.headers['content-disposition'],
        );
      expect(disposition).not.toBeNull();
      const [, y, mo, d, h, mi, s] = disposition!;
      const stamp = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
      expect(stamp).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
      expect(stamp).toBeLessThanOrEqual(Date.now());

      expect(text.startsWith(`${CSV_HEADER}\r\n`)).toBe(true);
      expect(rows[0].join(',')).toBe(CSV_HEADER);
      expect(rows).toHaveLength(13);
      expect(rows.slice(1).map((r) => keyOf[r[0]])).toEqual(keys(expected({})));
      for (const row of rows) expect(row).toHaveLength(12);
    });

    it('writes each field as the record has it', async () => {
      const { rows } = await exportCsv();
      const byKey = new Map(rows.slice(1).map((r) => [keyOf[r[0]], r]));
      const e4 = byKey.get('E4')!;
      expect(e4).toEqual([
        ids.E4,
        '2026-01-07T00:00:00.000Z',
        cameraIds.garage,
        'Garage',
        'package',
        'box;person',
        '79',
        'Courier leaves a PACKAGE at the door',
        'mjpeg',
        '',
        '',
        expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      ]);
      const record = (await get(`/api/v1/events/${ids.E4}`).expect(200)).body;
      expect(e4[11]).toBe(record.created_at);
      // Missing values are empty cells.
      expect(byKey.get('E7')!.slice(5, 8)).toEqual(['', '', '']);
    });

    it('quotes commas, quotes and line breaks, and neutralises formula cells', async () => {
      const { text, rows } = await exportCsv();
      const byKey = new Map(rows.slice(1).map((r) => [keyOf[r[0]], r]));
      expect(byKey.get('E9')![7]).toBe('He said "hi", then left');
      expect(text).toContain(',"He said ""hi"", then left",');
      expect(byKey.get('E10')![7]).toBe('Line one\nline two\r\nline three');
      expect(text).toContain('"Line one\nline two\r\nline three"');
      expect(byKey.get('E5')![7]).toBe('Car, then a person; both leave');
      // Formula cells: = + - @ get a leading apostrophe (then quoting as needed).
      expect(byKey.get('E8')![7]).toBe(`'=HYPERLINK("http://evil.example","click")`);
      expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
      expect(byKey.get('E11')![7]).toBe("'-5 degrees; plate ABC123");
      expect(byKey.get('E12')![7]).toBe("'@here a person with a dog");
      expect(byKey.get('E5')![3]).toBe(`'+Side, "gate"`);
      expect(text).toContain(`,"'+Side, ""gate""",`);
      // Plain cells are not touched.
      expect(byKey.get('E1')![7]).toBe('A person walks to the front door');
      expect(byKey.get('E12')![5]).toBe('person;dog');
    });

    it('takes the list filters and sort', async () => {
      const query = `camera_id=${cameraIds.front},${cameraIds.garage}&min_confidence=70&sort=timestamp`;
      const { rows } = await exportCsv(query);
      expect(rows.slice(1).map((r) => keyOf[r[0]])).toEqual(
        keys(expected({ camera: ['front', 'garage'], minConfidence: 70 }, 'asc')),
      );
      expect(rows.length).toBeGreaterThan(2);
      const none = await exportCsv('q=zebra');
      expect(none.text).toBe(`${CSV_HEADER}\r\n`);
    });

    it('matches text filters with quotes and backslashes literally (COPY takes no parameters)', async () => {
      for (const q of [`it's`, `'); DROP TABLE events; --`, `back\\slash "quoted"`, `E'\\x41'`]) {
        const { text } = await exportCsv(`q=${encodeURIComponent(q)}`);
        expect(text).toBe(`${CSV_HEADER}\r\n`);
      }
      const { rows } = await exportCsv(`q=${encodeURIComponent(`"hi", then`)}`);
      expect(rows.slice(1).map((r) => keyOf[r[0]])).toEqual(['E9']);
      expect((await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM events'))[0].n).toBe(SEEDS.length);
    });

    it('neutralises cells that start with a tab or CR', async () => {
      // Ingestion trims descriptions; such text can still reach the table (another writer, an old row).
      const add = async (description: string) => {
        const res = await t.http
          .post('/api/v1/events')
          .set(auth())
          .send({ camera_id: cameraIds.side, detection_type: 'unknown', description: 'x' })
          .expect(201);
        await t.sql('UPDATE events SET description = $2 WHERE id = $1', [res.body.id, description]);
        return res;
      };
      const tab = await add('\tTAB cell');
      const cr = await add('\rCR cell');
      try {
        const { text, rows } = await exportCsv(`camera_id=${cameraIds.side}&detection_type=unknown`);
        const byId = new Map(rows.slice(1).map((r) => [r[0], r]));
        expect(byId.get(tab.body.id)![7]).toBe(`'\tTAB cell`);
        expect(byId.get(cr.body.id)![7]).toBe(`'\rCR cell`);
        expect(text).toContain(`,"'\rCR cell",`);
      } finally {
        await t.http.delete(`/api/v1/events/${tab.body.id}`).set(auth()).expect(204);
        await t.http.delete(`/api/v1/events/${cr.body.id}`).set(auth()).expect(204);
      }
    });

    it('refuses bad filters with a JSON 422', async () => {
      const res = await get('/api/v1/events/export?detection_type=dragon').expect(422);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.headers['content-disposition']).toBeUndefined();
      await get('/api/v1/events/export?limit=5').expect(422);
    });
  });

  describe('POST /events (ingestion) and the domain events', () => {
    const post = (body: unknown) =>
      t.http
        .post('/api/v1/events')
        .set(auth())
        .send(body as object);

    it('stores an event without an image, returns the record and publishes event.created after commit', async () => {
      const created = nextMessage('event.created', (d) => d.camera_id === cameraIds.garage);
      const before = Date.now();
      const res = await post({
        camera_id: cameraIds.garage,
        detection_type: 'vehicle',
        objects_detected: ['car', 'bicycle'],
        confidence: 77,
        description: 'A car and a bicycle pass the garage',
      }).expect(201);
      expect(Object.keys(res.body).sort()).toEqual(RECORD_FIELDS);
      expect(res.body).toMatchObject({
        camera_id: cameraIds.garage,
        camera_name: 'Garage',
        detection_type: 'vehicle',
        objects_detected: ['car', 'bicycle'],
        confidence: 77,
        description: 'A car and a bicycle pass the garage',
        description_status: 'complete',
        source_type: 'api',
        thumbnail_url: null,
        reanalysis_count: 0,
      });
      expect(Date.parse(res.body.timestamp)).toBeGreaterThanOrEqual(before - 5);
      expect(Date.parse(res.body.timestamp)).toBeLessThanOrEqual(Date.now());
      const record = (await get(`/api/v1/events/${res.body.id}`).expect(200)).body;
      expect(record).toEqual(res.body);
      const message = await created;
      expect(message.data).toEqual(record);
      const [camera] = await t.sql<{ last_event_at: Date }>(
        'SELECT last_event_at FROM cameras WHERE id = $1',
        [cameraIds.garage],
      );
      expect(camera.last_event_at.toISOString()).toBe(res.body.timestamp);
      expect(await listIds(`q=bicycle`)).toEqual([res.body.id]);
    });

    it('is pending without a description, and takes a given timestamp (up to 5 minutes ahead)', async () => {
      const res = await post({
        camera_id: cameraIds.side,
        detection_type: 'motion',
        timestamp: '2026-01-20T08:00:00Z',
      }).expect(201);
      expect(res.body).toMatchObject({
        timestamp: '2026-01-20T08:00:00.000Z',
        description: null,
        description_status: 'pending',
        objects_detected: [],
        confidence: null,
      });
      const soon = new Date(Date.now() + 2 * 60_000).toISOString();
      expect(
        (await post({ camera_id: cameraIds.side, detection_type: 'ring', timestamp: soon }).expect(201)).body
          .timestamp,
      ).toBe(soon);
      // An older event does not move last_event_at back.
      const [camera] = await t.sql<{ last_event_at: Date }>(
        'SELECT last_event_at FROM cameras WHERE id = $1',
        [cameraIds.side],
      );
      expect(camera.last_event_at.toISOString()).toBe(soon);
      await post({
        camera_id: cameraIds.side,
        detection_type: 'ring',
        timestamp: '2026-01-01T00:00:00Z',
      }).expect(201);
      const [after] = await t.sql<{ last_event_at: Date }>(
        'SELECT last_event_at FROM cameras WHERE id = $1',
        [cameraIds.side],
      );
      expect(after.last_event_at.toISOString()).toBe(soon);
    });

    it('stores a JPEG under a service-made name and serves the same bytes as the thumbnail', async () => {
      const filesBefore = imageFiles().length;
      const res = await post({
        camera_id: cameraIds.front,
        detection_type: 'person',
        image_base64: RED_JPEG.toString('base64'),
      }).expect(201);
      expect(res.body.thumbnail_url).toBe(`/api/v1/events/${res.body.id}/thumbnail`);
      expect(imageFiles()).toHaveLength(filesBefore + 1);
      const [row] = await t.sql<{ image_file: string }>('SELECT image_file FROM events WHERE id = $1', [
        res.body.id,
      ]);
      expect(row.image_file).toMatch(/^[0-9a-f]{2}\/[0-9a-f-]{36}\.jpg$/);

      const thumb = await t.http
        .get(res.body.thumbnail_url)
        .set(auth())
        .buffer(true)
        .parse(binaryBody)
        .expect(200);
      expect(thumb.headers['content-type']).toBe('image/jpeg');
      expect(thumb.headers['cache-control']).toBe('private, max-age=86400');
      expect(Buffer.compare(thumb.body as Buffer, RED_JPEG)).toBe(0);

      // The export points at it too.
      const csv = parseCsv(
        (await get(`/api/v1/events/export?camera_id=${cameraIds.front}`).expect(200)).text,
      );
      const line = csv.find((r) => r[0] === res.body.id)!;
      expect(line[10]).toBe(`/api/v1/events/${res.body.id}/thumbnail`);
    });

    it('accepts a data URI with line breaks, and a large image up to the 10 MiB body limit', async () => {
      const wrapped = RED_JPEG.toString('base64').replace(/(.{76})/g, '$1\n');
      const res = await post({
        camera_id: cameraIds.front,
        detection_type: 'person',
        image_base64: `data:image/jpeg;base64,${wrapped}`,
      }).expect(201);
      expect(res.body.thumbnail_url).not.toBeNull();

      // About 6 MiB: the JPEG with comment segments after its start marker (still a valid JPEG).
      const comment = Buffer.alloc(65535 + 2, 0x20);
      comment.writeUInt16BE(0xfffe, 0);
      comment.writeUInt16BE(65535, 2);
      const big = Buffer.concat([
        RED_JPEG.subarray(0, 2),
        ...new Array(96).fill(comment),
        RED_JPEG.subarray(2),
      ]);
      expect(big.length).toBeGreaterThan(6 * 1024 * 1024);
      const large = await post({
        camera_id: cameraIds.front,
        detection_type: 'person',
        image_base64: big.toString('base64'),
      }).expect(201);
      const thumb = await request(t.baseUrl)
        .get(`/api/v1/events/${large.body.id}/thumbnail`)
        .set(auth())
        .buffer(true)
        .parse(binaryBody)
        .expect(200);
      expect(Buffer.compare(thumb.body as Buffer, big)).toBe(0);
    });

    it.each<[string, () => string]>([
      ['a PNG', () => PNG_1x1.toString('base64')],
      ['bytes that are not an image', () => Buffer.from('hello, this is not a picture').toString('base64')],
      ['a JPEG without its end marker', () => RED_JPEG.subarray(0, RED_JPEG.length - 2).toString('base64')],
      [
        'a JPEG cut in half',
        () => Buffer.concat([RED_JPEG.subarray(0, 100), Buffer.from([0xff, 0xd9])]).toString('base64'),
      ],
      ['text that is not base64', () => '@@@ not base64 @@@'],
      ['an empty string', () => ''],
      ['a data URI that is not base64', () => 'data:image/jpeg,abcd'],
    ])('refuses %s with 422 and stores nothing', async (_name, image) => {
      const events = await eventCount();
      const files = imageFiles().length;
      const res = await post({
        camera_id: cameraIds.front,
        detection_type: 'person',
        image_base64: image(),
      }).expect(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['body.image_base64']);
      expect(await eventCount()).toBe(events);
      expect(imageFiles()).toHaveLength(files);
    });

    it('says so for a PNG', async () => {
      const res = await post({
        camera_id: cameraIds.front,
        detection_type: 'person',
        image_base64: PNG_1x1.toString('base64'),
      }).expect(422);
      expect(res.body.detail).toMatch(/PNG/);
    });

    it('answers 413 for a body over 10 MiB and stores nothing', async () => {
      const events = await eventCount();
      const res = await post({
        camera_id: cameraIds.front,
        detection_type: 'person',
        image_base64: 'A'.repeat(10 * 1024 * 1024 + 16),
      }).expect(413);
      expect(res.body).toEqual({ detail: 'Request body too large (limit 10 MiB)', status_code: 413 });
      expect(await eventCount()).toBe(events);
    });

    it('refuses an unknown camera with 422 and leaves no image behind', async () => {
      const files = imageFiles().length;
      const events = await eventCount();
      const res = await post({
        camera_id: UNKNOWN_ID,
        detection_type: 'person',
        image_base64: RED_JPEG.toString('base64'),
      }).expect(422);
      expect(res.body.errors).toEqual([
        { field: 'body.camera_id', message: 'camera_id does not name an existing camera' },
      ]);
      expect(imageFiles()).toHaveLength(files);
      expect(await eventCount()).toBe(events);
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['no camera_id', { detection_type: 'person' }, 'body.camera_id'],
      ['a malformed camera_id', { camera_id: 'cam-1', detection_type: 'person' }, 'body.camera_id'],
      ['no detection_type', { camera_id: UNKNOWN_ID }, 'body.detection_type'],
      [
        'an unknown detection_type',
        { camera_id: UNKNOWN_ID, detection_type: 'dragon' },
        'body.detection_type',
      ],
      [
        'confidence 101',
        { camera_id: UNKNOWN_ID, detection_type: 'person', confidence: 101 },
        'body.confidence',
      ],
      [
        'a fractional confidence',
        { camera_id: UNKNOWN_ID, detection_type: 'person', confidence: 50.5 },
        'body.confidence',
      ],
      [
        'a confidence as text',
        { camera_id: UNKNOWN_ID, detection_type: 'person', confidence: '50' },
        'body.confidence',
      ],
      [
        'a timestamp 10 minutes ahead',
        { camera_id: UNKNOWN_ID, detection_type: 'person', timestamp: 'FUTURE' },
        'body.timestamp',
      ],
      [
        'a timestamp that is not ISO',
        { camera_id: UNKNOWN_ID, detection_type: 'person', timestamp: 'last tuesday' },
        'body.timestamp',
      ],
      [
        'objects that are not strings',
        { camera_id: UNKNOWN_ID, detection_type: 'person', objects_detected: [1] },
        'body.objects_detected',
      ],
      [
        'an empty description',
        { camera_id: UNKNOWN_ID, detection_type: 'person', description: '  ' },
        'body.description',
      ],
      [
        'an image that is not a string',
        { camera_id: UNKNOWN_ID, detection_type: 'person', image_base64: 5 },
        'body.image_base64',
      ],
      [
        'an unknown field',
        { camera_id: UNKNOWN_ID, detection_type: 'person', source_type: 'rtsp' },
        'body.source_type',
      ],
      [
        'a client image path',
        { camera_id: UNKNOWN_ID, detection_type: 'person', image_file: '../../etc/passwd' },
        'body.image_file',
      ],
    ])('refuses %s with 422', async (_name, body, field) => {
      if (body.timestamp === 'FUTURE') body.timestamp = new Date(Date.now() + 10 * 60_000).toISOString();
      const res = await post(body).expect(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    });

    it('answers 415 for a body that is not JSON', async () => {
      await t.http
        .post('/api/v1/events')
        .set(auth())
        .set('Content-Type', 'text/plain')
        .send('hello')
        .expect(415);
    });

    it('updateEvent changes the record and publishes event.updated with it', async () => {
      const service = t.app.get(EventsService);
      const updated = nextMessage('event.updated', (d) => d.id === ids.E7);
      const record = await service.updateEvent(ids.E7, {
        description: 'Leaves move in the wind',
        descriptionStatus: 'complete',
        providerUsed: 'openai',
        modelUsed: 'gpt-4o-mini',
        aiConfidence: 64,
        tokensUsed: 812,
        aiCostUsd: 0.00041,
        responseTimeMs: 1840,
      });
      const got = (await get(`/api/v1/events/${ids.E7}`).expect(200)).body;
      expect(record).toEqual(got);
      expect(got).toMatchObject({
        description: 'Leaves move in the wind',
        description_status: 'complete',
        provider_used: 'openai',
        model_used: 'gpt-4o-mini',
        ai_confidence: 64,
        tokens_used: 812,
        ai_cost_usd: 0.00041,
        response_time_ms: 1840,
      });
      expect((await updated).data).toEqual(got);
      await expect(service.updateEvent(UNKNOWN_ID, { description: 'x' })).rejects.toMatchObject({
        status: 404,
      });
    });

    it('recordEvent refuses an unknown camera without storing anything', async () => {
      const service = t.app.get(EventsService);
      const events = await eventCount();
      await expect(
        service.recordEvent({
          cameraId: UNKNOWN_ID,
          detectionType: 'person',
          sourceType: 'rtsp',
          image: RED_JPEG,
        }),
      ).rejects.toMatchObject({ status: 404, detail: 'Camera not found' });
      expect(await eventCount()).toBe(events);
    });
  });

  describe('GET /events/{id}/thumbnail and DELETE /events/{id}', () => {
    it('answers 404 for an event without an image, an unknown id and a malformed id', async () => {
      expect((await get(`/api/v1/events/${ids.E1}/thumbnail`).expect(404)).body).toEqual({
        detail: 'Thumbnail not found',
        status_code: 404,
      });
      expect((await get(`/api/v1/events/${UNKNOWN_ID}/thumbnail`).expect(404)).body.detail).toBe(
        'Event not found',
      );
      for (const id of MALFORMED_IDS) await get(`/api/v1/events/${id}/thumbnail`).expect(404);
    });

    it('deletes the event and its image file, publishes event.deleted, then answers 404', async () => {
      const created = await t.http
        .post('/api/v1/events')
        .set(auth())
        .send({
          camera_id: cameraIds.side,
          detection_type: 'animal',
          image_base64: RED_JPEG.toString('base64'),
        })
        .expect(201);
      const id = created.body.id as string;
      const [row] = await t.sql<{ image_file: string }>('SELECT image_file FROM events WHERE id = $1', [id]);
      const file = join(t.config.dataDir, 'images', row.image_file);
      expect(existsSync(file)).toBe(true);

      const deleted = nextMessage('event.deleted', (d) => d.id === id);
      await t.http.delete(`/api/v1/events/${id}`).set(auth()).expect(204);
      expect((await deleted).data).toEqual({ id, camera_id: cameraIds.side });
      expect(existsSync(file)).toBe(false);
      await get(`/api/v1/events/${id}`).expect(404);
      await get(`/api/v1/events/${id}/thumbnail`).expect(404);
      await t.http.delete(`/api/v1/events/${id}`).set(auth()).expect(404);
      for (const bad of MALFORMED_IDS) await t.http.delete(`/api/v1/events/${bad}`).set(auth()).expect(404);
    });
  });

  describe('access', () => {
    const readPaths = () => [
      '/api/v1/events',
      '/api/v1/events/stats',
      '/api/v1/events/export',
      `/api/v1/events/${ids.E1}`,
      `/api/v1/events/${ids.E1}/thumbnail`,
    ];

    it('refuses keys without read:events with 403, and callers without credentials with 401', async () => {
      for (const path of readPaths()) {
        for (const key of [readCamerasKey, writeCamerasKey]) {
          const res = await t.http.get(path).set('X-API-Key', key).expect(403);
          expect(res.body.detail).toBe('Insufficient permissions. Required scope: read:events');
        }
        await t.http.get(path).expect(401);
      }
    });

    it('lets a read:events key read, but not ingest or delete', async () => {
      await t.http.get('/api/v1/events').set('X-API-Key', readEventsKey).expect(200);
      await t.http.get('/api/v1/events/stats').set('X-API-Key', readEventsKey).expect(200);
      await t.http.get('/api/v1/events/export').set('X-API-Key', readEventsKey).expect(200);
      await t.http.get(`/api/v1/events/${ids.E1}`).set('X-API-Key', readEventsKey).expect(200);
      const post = await t.http
        .post('/api/v1/events')
        .set('X-API-Key', readEventsKey)
        .send({ camera_id: cameraIds.front, detection_type: 'person' })
        .expect(403);
      expect(post.body.detail).toBe('Insufficient permissions. Required scope: admin');
      await t.http.delete(`/api/v1/events/${ids.E1}`).set('X-API-Key', readEventsKey).expect(403);
      await get(`/api/v1/events/${ids.E1}`).expect(200);
    });

    it('lets an admin key ingest', async () => {
      const adminKey = (await t.createApiKey({ name: 'ingest', scopes: ['admin'] })).key;
      await t.http
        .post('/api/v1/events')
        .set('X-API-Key', adminKey)
        .send({ camera_id: cameraIds.front, detection_type: 'ring' })
        .expect(201);
    });
  });

  describe('ties', () => {
    // Eight events at one instant, inserted in an order unrelated to their ids: list, pages and export must
    // still order them by id (ascending with sort=timestamp, descending by default), so paging is stable.
    let camera: string;
    let tieIds: string[];

    beforeAll(async () => {
      const [row] = await t.sql<{ id: string }>(
        "INSERT INTO cameras (name, source_type, url) VALUES ('Ties', 'rtsp', 'rtsp://192.0.2.8/ties') RETURNING id",
      );
      camera = row.id;
      const rows = await t.sql<{ id: string }>(
        `INSERT INTO events (camera_id, timestamp, detection_type, source_type)
         SELECT $1, '2024-03-03T03:03:03Z', 'motion', 'rtsp' FROM generate_series(1, 8) RETURNING id`,
        [camera],
      );
      tieIds = rows.map((r) => r.id);
      expect([...tieIds].sort()).not.toEqual(tieIds); // insertion order is not id order
    });

    it('orders ties by id in the list, across pages and in the export', async () => {
      const asc = [...tieIds].sort();
      const desc = [...asc].reverse();
      expect(await listIds(`camera_id=${camera}&sort=timestamp`)).toEqual(asc);
      expect(await listIds(`camera_id=${camera}`)).toEqual(desc);
      const paged: string[] = [];
      for (let page = 1; page <= 3; page++)
        paged.push(
          ...(await list(`camera_id=${camera}&limit=3&page=${page}`)).items.map((e: { id: string }) => e.id),
        );
      expect(paged).toEqual(desc);
      const csv = parseCsv(
        (await get(`/api/v1/events/export?camera_id=${camera}&sort=timestamp`).expect(200)).text,
      );
      expect(csv.slice(1).map((r) => r[0])).toEqual(asc);
    });
  });

  describe('export streaming', () => {
    const N = 30_000;
    /** Rows with confidence 100 (g % 101 === 100). */
    const AT_100 = Array.from({ length: N }, (_, i) => i + 1).filter((g) => g % 101 === 100).length;
    let camera: string;

    beforeAll(async () => {
      const [row] = await t.sql<{ id: string }>(
        "INSERT INTO cameras (name, source_type, url) VALUES ('Bulk', 'rtsp', 'rtsp://192.0.2.9/bulk') RETURNING id",
      );
      camera = row.id;
      await t.sql(
        `INSERT INTO events (camera_id, timestamp, detection_type, objects_detected, confidence, description, source_type)
         SELECT $1, timestamp '2025-06-01' + g * interval '1 second', 'motion', ARRAY['thing'], g % 101,
                'bulk row ' || g, 'rtsp'
         FROM generate_series(1, $2::int) g`,
        [camera, N],
      );
    });

    const exportQueries = () =>
      t.sql<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity
         WHERE datname = current_database() AND state <> 'idle'
           AND query LIKE '%array_to_string(e.objects_detected%' AND pid <> pg_backend_pid()`,
      );

    it('streams every row and gives the connection back', async () => {
      const res = await request(t.baseUrl)
        .get(`/api/v1/events/export?camera_id=${camera}&sort=timestamp`)
        .set(auth())
        .expect(200);
      expect(res.headers['transfer-encoding']).toBe('chunked');
      const rows = parseCsv(res.text);
      expect(rows).toHaveLength(N + 1);
      expect(rows[1][7]).toBe('bulk row 1');
      expect(rows[N][7]).toBe(`bulk row ${N}`);
      // Released to the pool: more exports than the pool has connections all complete.
      for (let i = 0; i < 25; i++) {
        const small = await get(`/api/v1/events/export?camera_id=${camera}&min_confidence=100&q=bulk`).expect(
          200,
        );
        expect(parseCsv(small.text).length - 1).toBe(AT_100);
      }
      const pool = (
        t.app.get(DataSource).driver as unknown as { master: { totalCount: number; idleCount: number } }
      ).master;
      expect(pool.totalCount - pool.idleCount).toBeLessThanOrEqual(1);
    });

    it('cuts the download short (never a clean end) when the database fails mid-export', async () => {
      const url = new URL(`/api/v1/events/export?camera_id=${camera}`, t.baseUrl);
      const outcome = await new Promise<{ complete: boolean; bytes: number }>((resolve, reject) => {
        const req = http.get(url, { headers: auth() }, (res) => {
          let bytes = 0;
          let killed = false;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (killed) return;
            killed = true;
            res.pause(); // backpressure holds the cursor open while its backend is terminated
            t.sql(
              `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE datname = current_database() AND query LIKE '%array_to_string(e.objects_detected%'
                 AND pid <> pg_backend_pid()`,
            ).then(
              () => res.resume(),
              (error: Error) => reject(error),
            );
          });
          res.on('close', () => resolve({ complete: res.complete, bytes }));
        });
        req.on('error', () => undefined);
      });
      expect(outcome.bytes).toBeGreaterThan(0);
      expect(outcome.complete).toBe(false);
      // The service carries on.
      const again = await get(`/api/v1/events/export?camera_id=${camera}&min_confidence=100`).expect(200);
      expect(parseCsv(again.text).length - 1).toBe(AT_100);
    });

    it('closes the cursor and frees the connection when the client goes away mid-download', async () => {
      const url = new URL(`/api/v1/events/export?camera_id=${camera}`, t.baseUrl);
      await new Promise<void>((resolve, reject) => {
        const req = http.get(url, { headers: auth() }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', (error) =>
          (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(error),
        );
      });
      // The cursor is gone and the connection is no longer checked out of the pool.
      const pool = (
        t.app.get(DataSource).driver as unknown as { master: { totalCount: number; idleCount: number } }
      ).master;
      const checkedOut = () => pool.totalCount - pool.idleCount;
      const deadline = Date.now() + 5000;
      let open = Number((await exportQueries())[0].n);
      while ((open > 0 || checkedOut() > 0) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        open = Number((await exportQueries())[0].n);
      }
      expect(open).toBe(0);
      expect(checkedOut()).toBe(0);
      // And the service still answers exports afterwards.
      const again = await get(`/api/v1/events/export?camera_id=${camera}&min_confidence=100`).expect(200);
      expect(parseCsv(again.text).length - 1).toBe(AT_100);
    });
  });
});
