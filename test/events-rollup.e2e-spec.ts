import { startTestApp, TestApp } from './support/test-app';

/**
 * GET /events/stats and the GET /events total read whole UTC days from the event_counts rollup (kept by
 * triggers) and partial days from the events. These tests seed several hundred events over ten days and
 * compare both answers with figures computed here from the seeded rows, for filters whose time bounds
 * fall inside days, on midnights and nowhere, before and after the events change (delete, re-typed by AI,
 * bulk delete, camera deleted, concurrent ingestion). The rollup must also equal a fresh count.
 */

const TYPES = ['person', 'vehicle', 'animal', 'package', 'motion', 'ring'];
const SOURCES = ['rtsp', 'protect', 'api'];
const DAY0 = Date.parse('2026-03-01T00:00:00.000Z');
const HOUR = 3_600_000;

interface Row {
  id: string;
  camera: number;
  ts: number;
  type: string;
  source: string;
  confidence: number | null;
}

interface Filter {
  camera?: number[];
  type?: string[];
  source?: string[];
  start?: number;
  end?: number;
}

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('events rollup (e2e)', () => {
  let t: TestApp;
  let admin: string;
  const cameraIds: string[] = [];
  const cameraNames = ['Porch', 'Yard', 'Garage'];
  let rows: Row[] = [];

  const auth = () => ({ Authorization: `Bearer ${admin}` });

  function query(f: Filter): string {
    const parts: string[] = [];
    if (f.camera) parts.push(`camera_id=${f.camera.map((c) => cameraIds[c]).join(',')}`);
    if (f.type) parts.push(`detection_type=${f.type.join(',')}`);
    if (f.source) parts.push(`source_type=${f.source.join(',')}`);
    if (f.start !== undefined) parts.push(`start_time=${new Date(f.start).toISOString()}`);
    if (f.end !== undefined) parts.push(`end_time=${new Date(f.end).toISOString()}`);
    return parts.join('&');
  }

  function expectedStats(f: Filter) {
    const match = rows.filter(
      (r) =>
        (!f.camera || f.camera.includes(r.camera)) &&
        (!f.type || f.type.includes(r.type)) &&
        (!f.source || f.source.includes(r.source)) &&
        (f.start === undefined || r.ts >= f.start) &&
        (f.end === undefined || r.ts <= f.end),
    );
    const byType: Record<string, number> = Object.fromEntries(
      ['person', 'vehicle', 'animal', 'package', 'face', 'license_plate', 'motion', 'ring', 'unknown'].map(
        (x) => [x, 0],
      ),
    );
    const byCamera = new Map<number, number>();
    const byHour = new Array<number>(24).fill(0);
    const byDay = new Map<string, number>();
    for (const r of match) {
      byType[r.type]++;
      byCamera.set(r.camera, (byCamera.get(r.camera) ?? 0) + 1);
      byHour[new Date(r.ts).getUTCHours()]++;
      const day = new Date(r.ts).toISOString().slice(0, 10);
      byDay.set(day, (byDay.get(day) ?? 0) + 1);
    }
    const confidences = match.map((r) => r.confidence).filter((c): c is number => c !== null);
    return {
      total: match.length,
      by_detection_type: byType,
      by_camera: [...byCamera.entries()]
        .map(([camera, count]) => ({ camera_id: cameraIds[camera], camera_name: cameraNames[camera], count }))
        .sort((a, b) => b.count - a.count || a.camera_name.localeCompare(b.camera_name)),
      by_hour: byHour,
      by_day: [...byDay.entries()].sort().map(([date, count]) => ({ date, count })),
      average_confidence: confidences.length
        ? Math.round((confidences.reduce((a, b) => a + b, 0) / confidences.length) * 10) / 10
        : null,
      first_event_at: match.length ? new Date(Math.min(...match.map((r) => r.ts))).toISOString() : null,
      last_event_at: match.length ? new Date(Math.max(...match.map((r) => r.ts))).toISOString() : null,
    };
  }

  /** Filters with bounds inside days, on midnights, a few hours apart and open-ended. */
  function filters(): Filter[] {
    const next = random(7);
    const list: Filter[] = [
      {},
      { camera: [0] },
      { camera: [1, 2], type: ['person', 'ring'] },
      { source: ['protect'] },
      { start: DAY0 + 2 * 24 * HOUR + 5 * HOUR + 1234 },
      { end: DAY0 + 7 * 24 * HOUR + 13 * HOUR },
      { start: DAY0 + 24 * HOUR, end: DAY0 + 4 * 24 * HOUR },
      { start: DAY0 + 24 * HOUR - 1, end: DAY0 + 4 * 24 * HOUR + 1 },
      { start: DAY0 + 3 * 24 * HOUR + 2 * HOUR, end: DAY0 + 3 * 24 * HOUR + 9 * HOUR },
      { camera: [2], type: ['vehicle'], start: DAY0 + 30 * HOUR, end: DAY0 + 200 * HOUR },
    ];
    for (let i = 0; i < 12; i++) {
      const a = DAY0 + Math.floor(next() * 11 * 24 * HOUR);
      const b = DAY0 + Math.floor(next() * 11 * 24 * HOUR);
      const f: Filter = { start: Math.min(a, b), end: Math.max(a, b) };
      if (next() < 0.5) f.camera = [Math.floor(next() * 3)];
      if (next() < 0.5) f.type = [TYPES[Math.floor(next() * TYPES.length)], 'motion'];
      if (next() < 0.3) f.source = [SOURCES[Math.floor(next() * SOURCES.length)]];
      list.push(f);
    }
    return list;
  }

  async function expectAllMatch(): Promise<void> {
    for (const f of filters()) {
      const q = query(f);
      const stats = (await t.http.get(`/api/v1/events/stats?${q}`).set(auth()).expect(200)).body;
      expect({ filter: q, stats }).toEqual({ filter: q, stats: expectedStats(f) });
      const page = (await t.http.get(`/api/v1/events?limit=1&${q}`).set(auth()).expect(200)).body;
      expect({ filter: q, total: page.total }).toEqual({ filter: q, total: expectedStats(f).total });
    }
    // The rollup equals a fresh count of the events, row for row.
    const fresh = `SELECT (timestamp AT TIME ZONE 'UTC')::date AS day, camera_id, detection_type, source_type,
                          count(*)::int AS n, count(confidence)::int AS conf_n, coalesce(sum(confidence), 0)::bigint AS conf_sum,
                          count(*) FILTER (WHERE extract(hour FROM timestamp AT TIME ZONE 'UTC') = 13)::int AS h13
                   FROM events GROUP BY 1, 2, 3, 4`;
    const kept =
      'SELECT day, camera_id, detection_type, source_type, n, conf_n, conf_sum, h13 FROM event_counts';
    expect(await t.sql(`(${fresh}) EXCEPT (${kept})`)).toEqual([]);
    expect(await t.sql(`(${kept}) EXCEPT (${fresh})`)).toEqual([]);
  }

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
    for (const name of cameraNames) {
      const res = await t.http
        .post('/api/v1/cameras')
        .set(auth())
        .send({ name, source_type: 'rtsp', url: `rtsp://127.0.0.1:8554/${name}` })
        .expect(201);
      cameraIds.push(res.body.id);
    }
    const next = random(42);
    const seeds = Array.from({ length: 600 }, () => ({
      camera: Math.floor(next() * 3),
      ts: DAY0 + Math.floor(next() * 10 * 24 * HOUR),
      type: TYPES[Math.floor(next() * TYPES.length)],
      source: SOURCES[Math.floor(next() * SOURCES.length)],
      confidence: next() < 0.2 ? null : Math.floor(next() * 101),
    }));
    // Some events exactly on midnights, where whole and partial days meet.
    seeds.push({ camera: 0, ts: DAY0 + 24 * HOUR, type: 'person', source: 'rtsp', confidence: 50 });
    seeds.push({ camera: 1, ts: DAY0 + 4 * 24 * HOUR, type: 'ring', source: 'protect', confidence: null });
    const inserted = await t.sql<{ id: string; i: number }>(
      `INSERT INTO events (camera_id, timestamp, detection_type, source_type, confidence, description_status)
       SELECT c, ts, ty::detection_type, so::event_source_type, co, 'complete'
       FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::int[]) AS s(c, ts, ty, so, co)
       RETURNING id`,
      [
        seeds.map((s) => cameraIds[s.camera]),
        seeds.map((s) => new Date(s.ts)),
        seeds.map((s) => s.type),
        seeds.map((s) => s.source),
        seeds.map((s) => s.confidence),
      ],
    );
    rows = seeds.map((s, i) => ({ ...s, id: inserted[i].id }));
  });

  afterAll(async () => {
    await t?.close();
  });

  it('answers stats and totals exactly as counting the events does', async () => {
    expect(rows).toHaveLength(602);
    await expectAllMatch();
  });

  it('stays exact after deletes, re-typing, a bulk delete and concurrent ingestion', async () => {
    for (const row of rows.slice(0, 5)) {
      await t.http.delete(`/api/v1/events/${row.id}`).set(auth()).expect(204);
    }
    rows = rows.slice(5);

    // The AI re-types events and changes their confidence (several rows in one statement).
    const retyped = rows.slice(0, 40);
    await t.sql(`UPDATE events SET detection_type = 'package', confidence = 77 WHERE id = ANY($1::uuid[])`, [
      retyped.map((r) => r.id),
    ]);
    for (const r of retyped) Object.assign(r, { type: 'package', confidence: 77 });
    // A description update changes no count.
    await t.sql(`UPDATE events SET description = 'A person' WHERE id = ANY($1::uuid[])`, [
      rows.slice(40, 80).map((r) => r.id),
    ]);

    // Retention-style bulk delete of the first day.
    await t.sql('DELETE FROM events WHERE timestamp < $1', [new Date(DAY0 + 24 * HOUR)]);
    rows = rows.filter((r) => r.ts >= DAY0 + 24 * HOUR);

    // Concurrent ingestion into the same camera, type and hour.
    const ts = new Date(DAY0 + 5 * 24 * HOUR + 13 * HOUR).toISOString();
    const created = await Promise.all(
      Array.from({ length: 20 }, () =>
        t.http
          .post('/api/v1/events')
          .set(auth())
          .send({
            camera_id: cameraIds[1],
            timestamp: ts,
            detection_type: 'person',
            confidence: 60,
            description: 'x',
          })
          .expect(201),
      ),
    );
    for (const res of created) {
      rows.push({
        id: res.body.id,
        camera: 1,
        ts: Date.parse(ts),
        type: 'person',
        source: 'api',
        confidence: 60,
      });
    }
    await expectAllMatch();
  });

  it('forgets a deleted camera', async () => {
    await t.http.delete(`/api/v1/cameras/${cameraIds[2]}`).set(auth()).expect(204);
    rows = rows.filter((r) => r.camera !== 2);
    expect(await t.sql('SELECT 1 FROM event_counts WHERE camera_id = $1', [cameraIds[2]])).toEqual([]);
    await expectAllMatch();
  });
});
