/**
 * npm run bench:events
 *
 * Seeds 1,000,000 events over 50 cameras (in SQL) and measures, in one run, the events API against the
 * same SQL run directly through `pg` (the floor for this stack):
 * - the first page of GET /events for each single filter and a three-filter combination, and page 1000;
 * - GET /events/stats unfiltered and filtered;
 * - GET /events/export of all rows (rows/s and the service's peak RSS growth) against the raw
 *   `COPY (same SELECT) TO STDOUT` of the same rows, alternating, 3 rounds (medians).
 * Targets: list and stats within 2x of their raw SQL and under 100 ms median; export at no less than half
 * the rate of COPY with peak RSS growth under 100 MB. Requests are measured in steady state: after 3,000
 * warm-up requests to the service, then 30 unmeasured rounds of each case.
 *
 * The database: a scratch database on DATABASE_URL's server when set, else an embedded PostgreSQL started
 * by this benchmark; the service runs as a child process on it.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent as HttpAgent, get as httpGet, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Pool } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import {
  buildEventFilter,
  countSql,
  FEW_MATCHES,
  EventFilter,
  listSql,
  type SqlStatement,
  statsSql,
  totalSql,
} from '../src/modules/events/events.repository';
import {
  API,
  intFromEnv,
  login,
  median,
  onCleanup,
  benchDatabase,
  runBenchmark,
  startInstance,
  type Instance,
} from './support';

const EVENTS = intFromEnv('BENCH_EVENTS', 1_000_000);
const CAMERAS = 50;
const SAMPLES = intFromEnv('BENCH_SAMPLES', 31);
const WARMUP = intFromEnv('BENCH_WARMUP', 30);
const SERVICE_WARMUP = intFromEnv('BENCH_SERVICE_WARMUP', 3000);
const RATIO_TARGET = 2;
const LATENCY_TARGET_MS = 100;
const EXPORT_RATE_TARGET = 0.5;
const EXPORT_ROUNDS = intFromEnv('BENCH_EXPORT_ROUNDS', 3);
const RSS_TARGET_MB = 100;

const WORDS = [
  'person',
  'walking',
  'car',
  'parked',
  'dog',
  'running',
  'package',
  'delivered',
  'front',
  'door',
  'driveway',
  'garden',
  'cat',
  'bicycle',
  'truck',
  'night',
  'rain',
  'courier',
  'gate',
  'porch',
];

interface Case {
  name: string;
  query: string;
  filter: EventFilter;
  page?: number;
}

/** The request of a case on an endpoint (`/events` or `/events/stats`). */
const pathOf = (endpoint: string, c: Case) => `${endpoint}${c.query ? `?${c.query}` : ''}`;

async function seed(pool: Pool): Promise<number> {
  const started = Date.now();
  const client = await pool.connect();
  try {
    await client.query(
      `INSERT INTO cameras (name, source_type, url)
       SELECT 'Camera ' || lpad(i::text, 2, '0'), 'rtsp', 'rtsp://127.0.0.1:8554/cam' || i FROM generate_series(1, $1) i`,
      [CAMERAS],
    );
    // Bulk load without the secondary indexes, then build them once (the same definitions as the migration).
    const { rows: indexes } = await client.query<{ indexdef: string; indexname: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' AND indexname NOT LIKE 'PK_%'`,
    );
    for (const index of indexes) await client.query(`DROP INDEX "${index.indexname}"`);
    await client.query(
      `INSERT INTO events (camera_id, timestamp, detection_type, objects_detected, confidence, description,
                           description_status, source_type, provider_used, created_at)
       SELECT c.ids[1 + (i % $2)],
              now() - (i * interval '7.77 seconds'),
              (ARRAY['person','vehicle','animal','package','face','license_plate','motion','ring','unknown']::detection_type[])[1 + (i * 7 % 9)],
              ARRAY[(ARRAY['person','car','dog','box'])[1 + (i % 4)]],
              (i * 37) % 101,
              initcap((ARRAY[${WORDS.map((w) => `'${w}'`).join(',')}])[1 + (i % ${WORDS.length})]) || ' ' ||
                (ARRAY[${WORDS.map((w) => `'${w}'`).join(',')}])[1 + (i * 13 % ${WORDS.length})] || ' near the ' ||
                (ARRAY[${WORDS.map((w) => `'${w}'`).join(',')}])[1 + (i * 17 % ${WORDS.length})] || ', "quoted", ok',
              'complete',
              (ARRAY['rtsp','rtsp','rtsp','mjpeg','protect','api']::event_source_type[])[1 + (i % 6)],
              'openai',
              now() - (i * interval '7.77 seconds')
       FROM generate_series(1, $1) i, (SELECT array_agg(id ORDER BY name) AS ids FROM cameras) c`,
      [EVENTS, CAMERAS],
    );
    for (const index of indexes) await client.query(index.indexdef);
    await client.query('VACUUM ANALYZE events');
    await client.query('ANALYZE cameras');
  } finally {
    client.release();
  }
  return (Date.now() - started) / 1000;
}

/** One GET through node:http on a kept-alive connection (fetch adds about half a millisecond per request). */
const keepAlive = new HttpAgent({ keepAlive: true, maxSockets: 1 });
function apiGet(instance: Instance, token: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) =>
    httpGet(
      `${instance.baseUrl}${API}${path}`,
      { agent: keepAlive, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    ).on('error', reject),
  );
}

/** Runs the steps one after another, each step's statements concurrently on pooled connections, as the service does. */
async function runSql(pool: Pool, steps: SqlStatement[][]): Promise<void> {
  for (const statements of steps) await Promise.all(statements.map((s) => pool.query(s.text, s.values)));
}

/**
 * Times the API request and its SQL alternately (so a slower moment of the machine falls on both), after
 * WARMUP unmeasured rounds (the service's code paths compiled and the pages cached, as in a running service).
 */
async function timePair(
  instance: Instance,
  token: string,
  path: string,
  pool: Pool,
  steps: SqlStatement[][],
): Promise<{ api: number[]; sql: number[] }> {
  const api: number[] = [];
  const sql: number[] = [];
  for (let i = 0; i < WARMUP + SAMPLES; i += 1) {
    let started = process.hrtime.bigint();
    const res = await apiGet(instance, token, path);
    const apiMs = Number(process.hrtime.bigint() - started) / 1e6;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.body.slice(0, 300)}`);
    started = process.hrtime.bigint();
    await runSql(pool, steps);
    const sqlMs = Number(process.hrtime.bigint() - started) / 1e6;
    if (i < WARMUP) continue;
    api.push(apiMs);
    sql.push(sqlMs);
  }
  return { api, sql };
}

function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/** LF bytes in a chunk (native search: both exports are read the same way). */
function countLines(chunk: Buffer): number {
  let lines = 0;
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  return lines;
}

async function exportViaApi(
  instance: Instance,
  token: string,
): Promise<{ rows: number; seconds: number; rssGrowthMb: number }> {
  const pid = instance.child.pid!;
  const baseline = rssOf(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 25);
  const started = process.hrtime.bigint();
  // node:http (Buffers), not fetch (web streams): the client must not be the slower end of the pipe.
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    httpGet(
      `${instance.baseUrl}${API}/events/export`,
      { headers: { authorization: `Bearer ${token}` } },
      resolve,
    ).on('error', reject),
  );
  if (res.statusCode !== 200) throw new Error(`export: ${res.statusCode}`);
  let lines = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) lines += countLines(chunk);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearInterval(sampler);
  peak = Math.max(peak, rssOf(pid));
  return { rows: lines - 1, seconds, rssGrowthMb: (peak - baseline) / 1024 / 1024 };
}

/**
 * The floor: COPY of the same rows' raw columns (no formatting, no neutralising), ordered as the export.
 * The API's export is itself a COPY with the cells formatted in SQL, turned into CRLF records by the service.
 */
const RAW_EXPORT_SQL = `COPY (SELECT e.id, e.timestamp, e.camera_id, c.name, e.detection_type, e.objects_detected,
  e.confidence, e.description, e.source_type, e.provider_used, e.image_file, e.created_at
  FROM events e JOIN cameras c ON c.id = e.camera_id ORDER BY e.timestamp DESC, e.id DESC) TO STDOUT WITH (FORMAT csv)`;

async function exportViaCopy(url: string): Promise<{ rows: number; seconds: number }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const started = process.hrtime.bigint();
    const stream = client.query(copyTo(RAW_EXPORT_SQL));
    let lines = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) lines += countLines(chunk);
    return { rows: lines, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  } finally {
    await client.end();
  }
}

async function main(): Promise<number> {
  const started = Date.now();
  const pgDir = mkdtempSync(join(tmpdir(), 'vigil-bench-pg-'));
  chmodSync(pgDir, 0o755); // as root, the embedded PostgreSQL runs as "postgres" and must reach it
  onCleanup(`remove ${pgDir}`, async () => rmSync(pgDir, { recursive: true, force: true }));
  const database = await benchDatabase(pgDir);
  const url = database.url;
  console.log(`Vigil events benchmark: ${database.description}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-events-'));
  onCleanup('remove data dir', async () => rmSync(dataDir, { recursive: true, force: true }));
  const instance = await startInstance('service', dataDir, { DATABASE_URL: url });
  const token = await login(instance);

  const pool = new Pool({ connectionString: url, max: 4 });
  onCleanup('close pool', () => pool.end());
  const seedSeconds = await seed(pool);
  console.log(
    `Seeded ${EVENTS.toLocaleString('en')} events over ${CAMERAS} cameras in ${seedSeconds.toFixed(1)} s`,
  );

  const { rows: cams } = await pool.query<{ id: string }>('SELECT id FROM cameras ORDER BY name LIMIT 3');
  const { rows: bounds } = await pool.query<{ lo: Date; hi: Date }>(
    `SELECT now() - interval '30 days' AS lo, now() - interval '20 days' AS hi`,
  );
  const lo = bounds[0].lo.toISOString();
  const hi = bounds[0].hi.toISOString();
  const cases: Case[] = [
    { name: 'no filter', query: '', filter: {} },
    { name: 'camera_id', query: `camera_id=${cams[0].id}`, filter: { cameraIds: [cams[0].id] } },
    {
      name: 'camera_id (3, comma list)',
      query: `camera_id=${cams.map((c) => c.id).join(',')}`,
      filter: { cameraIds: cams.map((c) => c.id) },
    },
    { name: 'detection_type', query: 'detection_type=person', filter: { detectionTypes: ['person'] } },
    {
      name: 'start_time..end_time',
      query: `start_time=${lo}&end_time=${hi}`,
      filter: { start: new Date(lo), end: new Date(hi) },
    },
    { name: 'min_confidence', query: 'min_confidence=90', filter: { minConfidence: 90 } },
    { name: 'source_type', query: 'source_type=protect', filter: { sourceTypes: ['protect'] } },
    { name: 'q (two words never together)', query: 'q=dog%20garden', filter: { q: 'dog garden' } },
    { name: 'q (one word, ~15% of events)', query: 'q=dog', filter: { q: 'dog' } },
    {
      name: 'camera_id + detection_type + time',
      query: `camera_id=${cams[0].id}&detection_type=person&start_time=${lo}&end_time=${hi}`,
      filter: { cameraIds: [cams[0].id], detectionTypes: ['person'], start: new Date(lo), end: new Date(hi) },
    },
    { name: 'page 1000 (limit 50)', query: 'page=1000&limit=50', filter: {}, page: 1000 },
  ];

  const statsCases = [
    'no filter',
    'detection_type',
    'start_time..end_time',
    'camera_id + detection_type + time',
  ];
  // A long-running service has its request path optimised by V8, which takes a few thousand calls (the
  // validation pipe alone: 450 µs a call after 10 calls, 140 after 1,000, 35 after 7,000). Measure that
  // steady state: cycle through the cases' requests first (all but word searches, whose code is the same).
  const warmPaths = [
    ...cases.filter((c) => c.filter.q === undefined).map((c) => pathOf('/events', c)),
    ...cases.filter((c) => statsCases.includes(c.name)).map((c) => pathOf('/events/stats', c)),
  ];
  const warmStarted = Date.now();
  let warmed = 0;
  while (warmed < SERVICE_WARMUP && Date.now() - warmStarted < 60_000) {
    const res = await apiGet(instance, token, warmPaths[warmed % warmPaths.length]);
    if (res.status !== 200) throw new Error(`warm-up: ${res.status} ${res.body.slice(0, 300)}`);
    warmed += 1;
  }
  console.log(
    `Warmed the service up with ${warmed} requests in ${((Date.now() - warmStarted) / 1000).toFixed(1)} s`,
  );

  type Row = { name: string; api: number; sql: number; ratio: number; pass: boolean };
  const results: Row[] = [];
  const measure = async (name: string, path: string, steps: SqlStatement[][]) => {
    const times = await timePair(instance, token, path, pool, steps);
    const api = median(times.api);
    const sql = median(times.sql);
    const ratio = api / sql;
    const row = { name, api, sql, ratio, pass: ratio <= RATIO_TARGET && api < LATENCY_TARGET_MS };
    results.push(row);
    console.log(
      `  ${name.padEnd(40)} API ${api.toFixed(1).padStart(7)} ms   SQL ${sql.toFixed(1).padStart(7)} ms   ratio ${ratio.toFixed(2).padStart(5)}   ${row.pass ? 'PASS' : 'FAIL'}`,
    );
  };

  console.log(
    `\nGET /events (first page, limit 50; medians of ${SAMPLES} after ${WARMUP} warm-up rounds, API and SQL alternating)`,
  );
  for (const c of cases) {
    const filter = buildEventFilter(c.filter);
    const offset = ((c.page ?? 1) - 1) * 50;
    const path = pathOf('/events', c);
    if (c.filter.q === undefined) {
      await measure(`list: ${c.name}`, path, [
        [listSql(filter, '-timestamp', 50, offset), totalSql(c.filter)],
      ]);
      continue;
    }
    // Word search runs as the service does: the count, then the list that suits it (none when empty).
    const { rows } = await pool.query<{ total: number }>(countSql(filter).text, countSql(filter).values);
    const total = rows[0].total;
    const steps = [[countSql(filter)]];
    if (total > offset) steps.push([listSql(filter, '-timestamp', 50, offset, total <= FEW_MATCHES)]);
    console.log(`  (q matches ${total} events)`);
    await measure(`list: ${c.name}`, path, steps);
  }
  console.log(`\nGET /events/stats (medians of ${SAMPLES} after ${WARMUP} warm-up rounds)`);
  for (const c of cases.filter((x) => statsCases.includes(x.name))) {
    const { groups, times, bounds } = statsSql(c.filter);
    await measure(`stats: ${c.name}`, pathOf('/events/stats', c), [
      [groups, times, ...(bounds ? [bounds] : [])],
    ]);
  }

  console.log(
    `\nGET /events/export (all rows) vs COPY (same SELECT) TO STDOUT (${EXPORT_ROUNDS} rounds, alternating; medians)`,
  );
  const copies: { rows: number; seconds: number }[] = [];
  const exports: { rows: number; seconds: number; rssGrowthMb: number }[] = [];
  for (let round = 1; round <= EXPORT_ROUNDS; round += 1) {
    const copy = await exportViaCopy(url);
    const api = await exportViaApi(instance, token);
    copies.push(copy);
    exports.push(api);
    console.log(
      `  round ${round}: COPY ${copy.rows} rows in ${copy.seconds.toFixed(2)} s, API ${api.rows} rows in ${api.seconds.toFixed(2)} s (ratio ${(copy.seconds / api.seconds).toFixed(2)}), peak RSS growth ${api.rssGrowthMb.toFixed(1)} MB`,
    );
  }
  const copySeconds = median(copies.map((c) => c.seconds));
  const apiSeconds = median(exports.map((e) => e.seconds));
  const copyRate = EVENTS / copySeconds;
  const apiRate = EVENTS / apiSeconds;
  const rssGrowthMb = Math.max(...exports.map((e) => e.rssGrowthMb));
  const allRows = [...copies, ...exports].every((r) => r.rows === EVENTS);
  const exportPass = allRows && apiRate / copyRate >= EXPORT_RATE_TARGET && rssGrowthMb < RSS_TARGET_MB;
  console.log(`  COPY   median ${copySeconds.toFixed(2)} s = ${Math.round(copyRate)} rows/s`);
  console.log(
    `  API    median ${apiSeconds.toFixed(2)} s = ${Math.round(apiRate)} rows/s; ratio ${(apiRate / copyRate).toFixed(2)} (target ≥ ${EXPORT_RATE_TARGET}); peak RSS growth ${rssGrowthMb.toFixed(1)} MB (target < ${RSS_TARGET_MB}); every row in every round: ${allRows}  ${exportPass ? 'PASS' : 'FAIL'}`,
  );

  const failed = results.filter((r) => !r.pass).length + (exportPass ? 0 : 1);
  console.log(
    `\nSummary (${Math.round((Date.now() - started) / 1000)} s): ${results.length + 1 - failed}/${results.length + 1} targets met`,
  );
  return 0;
}

runBenchmark('bench:events', main);
