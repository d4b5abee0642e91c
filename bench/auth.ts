/**
 * Authentication benchmark (`npm run bench:auth`).
 *
 * 1. Starts the built service (dist/src/main.js) as a child process on a free port, with its own temporary
 *    DATA_DIR and either a scratch database on DATABASE_URL's server or, when DATABASE_URL is unset, the
 *    service's embedded PostgreSQL.
 * 2. Measures requests/s of GET /api/v1/api-keys/{id} with a JWT (Authorization: Bearer) and with admin API
 *    keys (X-API-Key), alternating JWT/key runs, and compares the medians (target: key/JWT >= 0.85).
 * 3. Fires 300 simultaneous requests with one fresh key limited to 100/minute at the single in-memory
 *    instance, then (when Redis answers) at two instances sharing one Redis and one database, 150 each:
 *    exactly 100 must pass.
 *
 * Exits non-zero only on errors (a child that does not start, an unexpected response, a measured run that
 * was throttled); missed targets are printed as FAIL. Tunables: BENCH_CONNECTIONS (20), BENCH_ROUNDS of
 * JWT/key runs (3), BENCH_DURATION seconds per measured run (8), BENCH_WARMUP seconds per kind (2),
 * BENCH_REDIS_URL (else REDIS_URL, else redis://127.0.0.1:6379).
 */
import autocannon from 'autocannon';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import {
  API,
  call,
  expectStatus,
  type Instance,
  intFromEnv,
  login,
  median,
  onCleanup,
  prepareDatabase,
  redisReachable,
  runBenchmark,
  startInstance,
  stopInstance,
} from './support';

const CONNECTIONS = intFromEnv('BENCH_CONNECTIONS', 20);
const RUN_SECONDS = intFromEnv('BENCH_DURATION', 8);
const WARMUP_SECONDS = intFromEnv('BENCH_WARMUP', 2);
const RUNS_PER_KIND = intFromEnv('BENCH_ROUNDS', 3);
const BENCH_KEY_LIMIT = 10_000;
const BURST_REQUESTS = 300;
const BURST_LIMIT = 100;
const RATIO_TARGET = 0.85;
const REDIS_URL = process.env.BENCH_REDIS_URL || process.env.REDIS_URL || 'redis://127.0.0.1:6379';

async function createKey(
  instance: Instance,
  token: string,
  name: string,
  limit: number,
): Promise<{ id: string; key: string }> {
  const res = await call(instance, 'POST', '/api-keys', {
    token,
    body: { name, scopes: ['admin'], rate_limit_per_minute: limit },
  });
  expectStatus('create API key', res, 201);
  const body = res.body as { id: string; key: string };
  return { id: String(body.id), key: String(body.key) };
}

// ---------------------------------------------------------------------------------------------------------
// Throughput

interface RunResult {
  kind: 'JWT' | 'key';
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
}

async function measure(
  url: string,
  kind: 'JWT' | 'key',
  seconds: number,
  token: string,
  keys: string[],
): Promise<RunResult> {
  let connection = 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${token}` },
    // One key per connection, so no key sees more than its share of the requests.
    setupClient:
      kind === 'key'
        ? (client) => client.setHeaders({ 'x-api-key': keys[connection++ % keys.length] })
        : undefined,
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
    statusCodes[code] = stats?.count ?? 0;
  }
  return {
    kind,
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes,
  };
}

function formatRun(run: RunResult, label: string): string {
  const codes = Object.entries(run.statusCodes)
    .map(([code, count]) => `${code}:${count}`)
    .join(' ');
  return (
    `  ${label.padEnd(8)} ${run.rps.toFixed(0).padStart(6)} req/s  p50 ${String(run.p50).padStart(3)} ms` +
    `  p99 ${String(run.p99).padStart(3)} ms  (${run.total} requests; ${codes || 'no responses'}; ` +
    `non-2xx ${run.non2xx}, errors ${run.errors})`
  );
}

// ---------------------------------------------------------------------------------------------------------
// Bursts against the rate limit

interface BurstResult {
  passed: number;
  limited: number;
  other: Record<string, number>;
}

/** Starts every request before any answer arrives (one socket each), then counts the statuses. */
async function burst(
  targets: Instance[],
  total: number,
  apiKey: string,
  keyId: string,
): Promise<BurstResult> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: total });
  const requests: Promise<string>[] = [];
  for (let i = 0; i < total; i++) {
    const target = targets[i % targets.length];
    requests.push(
      new Promise<string>((done) => {
        const req = http.request(
          `${target.baseUrl}${API}/api-keys/${keyId}`,
          { agent, headers: { 'x-api-key': apiKey } },
          (res) => {
            res.resume();
            res.on('end', () => done(String(res.statusCode)));
            res.on('error', (error) => done(`error:${error.message}`));
          },
        );
        req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
        req.on('error', (error) => done(`error:${error.message}`));
        req.end();
      }),
    );
  }
  const statuses = await Promise.all(requests);
  agent.destroy();
  const result: BurstResult = { passed: 0, limited: 0, other: {} };
  for (const status of statuses) {
    if (status === '200') result.passed++;
    else if (status === '429') result.limited++;
    else result.other[status] = (result.other[status] ?? 0) + 1;
  }
  return result;
}

function formatBurst(result: BurstResult): string {
  const other = Object.entries(result.other)
    .map(([status, count]) => `${status}:${count}`)
    .join(' ');
  return `200: ${result.passed}, 429: ${result.limited}${other ? `, other: ${other}` : ''}`;
}

// ---------------------------------------------------------------------------------------------------------

interface Row {
  metric: string;
  value: string;
  target: string;
  verdict: string;
}

async function main(): Promise<number> {
  const started = Date.now();
  const rows: Row[] = [];
  let errors = 0;

  const workDir = mkdtempSync(join(tmpdir(), 'vigil-bench-'));
  chmodSync(workDir, 0o755); // as root, the embedded PostgreSQL runs as "postgres" and must reach it
  onCleanup(`remove ${workDir}`, async () => rmSync(workDir, { recursive: true, force: true }));

  const database = await prepareDatabase();
  console.log(`Vigil auth benchmark: ${database.description}; temp dir ${workDir}`);

  // ---- a) single instance, in-memory rate limits --------------------------------------------------
  const singleDir = join(workDir, 'single');
  const single = await startInstance('vigil', singleDir, { DATABASE_URL: database.url });
  console.log(`Service up at ${single.baseUrl} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

  // ---- b) credentials -----------------------------------------------------------------------------
  const token = await login(single);
  // A fresh set of keys for every API-key run (warm-up included), one per connection: a key then serves
  // at most RUN_SECONDS of one connection's share, so even 25,000 req/s stays under its 10,000/minute.
  const keySets: string[][] = [];
  const keys: { id: string; key: string }[] = [];
  for (let set = 0; set <= RUNS_PER_KIND; set++) {
    const created = await Promise.all(
      Array.from({ length: CONNECTIONS }, (_, i) =>
        createKey(single, token, `bench-${set}-${i}`, BENCH_KEY_LIMIT),
      ),
    );
    keys.push(...created);
    keySets.push(created.map((k) => k.key));
  }
  const target = `${single.baseUrl}${API}/api-keys/${keys[0].id}`;
  const probe = await call(single, 'GET', `/api-keys/${keys[0].id}`, { apiKey: keys[1].key });
  expectStatus('GET with an API key', probe, 200);
  const limitHeader = probe.headers.get('x-ratelimit-limit');
  if (limitHeader !== String(BENCH_KEY_LIMIT) || probe.headers.get('x-ratelimit-remaining') === null) {
    throw new Error(`API-key response lacks the X-RateLimit-* headers (X-RateLimit-Limit: ${limitHeader})`);
  }
  expectStatus('GET with the JWT', await call(single, 'GET', `/api-keys/${keys[0].id}`, { token }), 200);
  console.log(
    `Created ${keys.length} admin keys of ${BENCH_KEY_LIMIT}/min (${CONNECTIONS} per key run, one per ` +
      `connection); X-RateLimit-Limit: ${limitHeader}`,
  );

  // ---- c) throughput ------------------------------------------------------------------------------
  console.log(
    `\nThroughput of GET ${API}/api-keys/{id}: ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up ` +
      `per kind (discarded), then ${RUNS_PER_KIND}x JWT/key alternating, ${RUN_SECONDS} s each`,
  );
  for (const kind of ['JWT', 'key'] as const) {
    const warm = await measure(target, kind, WARMUP_SECONDS, token, keySets[0]);
    console.log(formatRun(warm, `warm ${kind}`));
  }
  const runs: RunResult[] = [];
  for (let i = 1; i <= RUNS_PER_KIND; i++) {
    for (const kind of ['JWT', 'key'] as const) {
      const run = await measure(target, kind, RUN_SECONDS, token, keySets[i]);
      runs.push(run);
      console.log(formatRun(run, `${kind} #${i}`));
    }
  }
  const of = (kind: string) => runs.filter((r) => r.kind === kind);
  const summary = (kind: string) => ({
    rps: median(of(kind).map((r) => r.rps)),
    p50: median(of(kind).map((r) => r.p50)),
    p99: median(of(kind).map((r) => r.p99)),
  });
  const jwt = summary('JWT');
  const key = summary('key');
  const ratio = key.rps / jwt.rps;
  const bad = runs.reduce((n, r) => n + r.non2xx + r.errors, 0);
  const throttled = runs.reduce((n, r) => n + (r.statusCodes['429'] ?? 0), 0);
  const ratioVerdict = ratio >= RATIO_TARGET ? 'PASS' : 'FAIL';
  console.log(
    `  medians: JWT ${jwt.rps.toFixed(0)} req/s (p50 ${jwt.p50} ms, p99 ${jwt.p99} ms), ` +
      `key ${key.rps.toFixed(0)} req/s (p50 ${key.p50} ms, p99 ${key.p99} ms)`,
  );
  console.log(`  ratio key/JWT = ${ratio.toFixed(3)}  (target ≥ ${RATIO_TARGET})  ${ratioVerdict}`);
  if (bad > 0) {
    errors++;
    console.error(
      `  ERROR: ${bad} measured requests were not 2xx or failed (${throttled} were 429): the figures are invalid`,
    );
  }
  rows.push(
    { metric: 'JWT req/s (median)', value: jwt.rps.toFixed(0), target: '', verdict: '' },
    { metric: 'API key req/s (median)', value: key.rps.toFixed(0), target: '', verdict: '' },
    { metric: 'ratio key/JWT', value: ratio.toFixed(3), target: `≥ ${RATIO_TARGET}`, verdict: ratioVerdict },
    { metric: 'JWT latency p50 / p99', value: `${jwt.p50} / ${jwt.p99} ms`, target: '', verdict: '' },
    { metric: 'key latency p50 / p99', value: `${key.p50} / ${key.p99} ms`, target: '', verdict: '' },
    {
      metric: 'non-2xx/errors in runs',
      value: `${bad} (429: ${throttled})`,
      target: '0',
      verdict: bad === 0 ? 'PASS' : 'ERROR',
    },
  );

  // ---- d) bursts ----------------------------------------------------------------------------------
  console.log(
    `\nBurst: ${BURST_REQUESTS} simultaneous requests with one fresh key limited to ${BURST_LIMIT}/min`,
  );
  const burstKey = await createKey(single, token, 'bench-burst-memory', BURST_LIMIT);
  const memory = await burst([single], BURST_REQUESTS, burstKey.key, burstKey.id);
  const memoryVerdict = memory.passed === BURST_LIMIT ? 'PASS' : 'FAIL';
  console.log(`  1 instance, in-memory counters: ${formatBurst(memory)}  ${memoryVerdict}`);
  rows.push({
    metric: 'burst, 1 instance (memory)',
    value: `${memory.passed} passed, ${memory.limited} x 429`,
    target: `${BURST_LIMIT} passed`,
    verdict: memoryVerdict,
  });
  if (Object.keys(memory.other).length > 0) {
    errors++;
    console.error(`  ERROR: unexpected statuses in the burst: ${JSON.stringify(memory.other)}`);
  }

  await stopInstance(single);

  if (!(await redisReachable(REDIS_URL))) {
    console.log(`  2 instances + Redis: SKIPPED (no Redis answers at ${REDIS_URL})`);
    rows.push({ metric: 'burst, 2 instances (Redis)', value: 'skipped', target: '', verdict: 'SKIP' });
  } else {
    // The two instances share one database: the scratch database, or the first instance's embedded
    // cluster, now served by this process.
    let sharedUrl = database.url;
    if (!sharedUrl) {
      const embedded = await startEmbeddedPostgres(singleDir, (m) => console.error(`  [postgres] ${m}`));
      onCleanup('stop the embedded PostgreSQL', () => embedded.stop());
      sharedUrl = embedded.url;
    }
    const a = await startInstance('vigil-a', join(workDir, 'a'), { DATABASE_URL: sharedUrl, REDIS_URL });
    const b = await startInstance('vigil-b', join(workDir, 'b'), { DATABASE_URL: sharedUrl, REDIS_URL });
    const pairToken = await login(a);
    const pairKey = await createKey(a, pairToken, 'bench-burst-redis', BURST_LIMIT);
    const pair = await burst([a, b], BURST_REQUESTS, pairKey.key, pairKey.id);
    const pairVerdict = pair.passed === BURST_LIMIT ? 'PASS' : 'FAIL';
    console.log(
      `  2 instances, Redis counters (${BURST_REQUESTS / 2} each): ${formatBurst(pair)}  ${pairVerdict}`,
    );
    rows.push({
      metric: 'burst, 2 instances (Redis)',
      value: `${pair.passed} passed, ${pair.limited} x 429`,
      target: `${BURST_LIMIT} passed`,
      verdict: pairVerdict,
    });
    if (Object.keys(pair.other).length > 0) {
      errors++;
      console.error(`  ERROR: unexpected statuses in the burst: ${JSON.stringify(pair.other)}`);
    }
    await stopInstance(b);
    await stopInstance(a);
  }

  // ---- summary ------------------------------------------------------------------------------------
  const widths = [26, 22, 12, 7];
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  console.log(`\nSummary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  console.log(line(['metric', 'value', 'target', 'result']));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line([row.metric, row.value, row.target, row.verdict]));
  const missed = rows.filter((r) => r.verdict === 'FAIL').map((r) => r.metric);
  if (missed.length > 0) console.log(`\nMISSED TARGETS: ${missed.join('; ')}`);
  return errors;
}

runBenchmark('bench:auth', main);
