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
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';

const ROOT = resolve(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const API = '/api/v1';

const CONNECTIONS = intFromEnv('BENCH_CONNECTIONS', 20);
const RUN_SECONDS = intFromEnv('BENCH_DURATION', 8);
const WARMUP_SECONDS = intFromEnv('BENCH_WARMUP', 2);
const RUNS_PER_KIND = intFromEnv('BENCH_ROUNDS', 3);
const BENCH_KEY_LIMIT = 10_000;
const BURST_REQUESTS = 300;
const BURST_LIMIT = 100;
const RATIO_TARGET = 0.85;
const STARTUP_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 20_000;
const REDIS_URL = process.env.BENCH_REDIS_URL || process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Every variable of decisions.md §6: the children get only the values this benchmark sets. */
const SERVICE_VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'REDIS_URL',
  'DATA_DIR',
  'JWT_SECRET',
  'JWT_EXPIRES_IN',
  'ENCRYPTION_KEY',
  'ADMIN_PASSWORD',
  'TRUSTED_PROXIES',
  'SSL_CERT_FILE',
  'SSL_KEY_FILE',
  'LOG_LEVEL',
  'CORS_ORIGINS',
];

function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// Clean-up: everything started is registered here and undone in reverse order, also on Ctrl-C.

const cleanups: { label: string; fn: () => Promise<void> }[] = [];
let cleaningUp: Promise<number> | undefined;

function onCleanup(label: string, fn: () => Promise<void>): void {
  cleanups.push({ label, fn });
}

/** Runs every clean-up step once; returns how many failed. */
function cleanupAll(): Promise<number> {
  cleaningUp ??= (async () => {
    let failures = 0;
    while (cleanups.length > 0) {
      const step = cleanups.pop()!;
      try {
        await step.fn();
      } catch (error) {
        failures++;
        console.error(`clean-up failed (${step.label}): ${message(error)}`);
      }
    }
    return failures;
  })();
  return cleaningUp;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function freePort(): Promise<number> {
  return new Promise((done, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Service instances

interface Instance {
  name: string;
  baseUrl: string;
  child: ChildProcess;
  exited: Promise<number | string>;
  output: string[];
}

const shared = {
  adminPassword: randomBytes(12).toString('base64url'),
  // The same secrets for every instance, as in a real multi-instance deployment.
  jwtSecret: randomBytes(48).toString('base64url'),
  encryptionKey: randomBytes(32).toString('hex'),
};

async function startInstance(
  name: string,
  dataDir: string,
  extra: { DATABASE_URL?: string; REDIS_URL?: string },
): Promise<Instance> {
  mkdirSync(dataDir, { recursive: true });
  chmodSync(dataDir, 0o755);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const variable of SERVICE_VARIABLES) delete env[variable];
  Object.assign(env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ADMIN_PASSWORD: shared.adminPassword,
    JWT_SECRET: shared.jwtSecret,
    ENCRYPTION_KEY: shared.encryptionKey,
  });
  if (extra.DATABASE_URL) env.DATABASE_URL = extra.DATABASE_URL;
  if (extra.REDIS_URL) env.REDIS_URL = extra.REDIS_URL;

  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      output.push(line);
      if (output.length > 200) output.shift();
      process.stderr.write(`  [${name}] ${line}\n`);
    }
  };
  child.stdout.on('data', forward);
  child.stderr.on('data', forward);
  const exited = new Promise<number | string>((done) => {
    child.once('exit', (code, signal) => done(code ?? signal ?? 'unknown'));
  });
  const instance: Instance = { name, baseUrl: `http://127.0.0.1:${port}`, child, exited, output };
  onCleanup(`stop ${name}`, () => stopInstance(instance));

  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let early: number | string | undefined;
  void exited.then((code) => (early = code));
  for (;;) {
    if (early !== undefined) throw new Error(`${name} exited during start-up (${early})`);
    try {
      const res = await fetch(`${instance.baseUrl}${API}/system/health`, {
        signal: AbortSignal.timeout(2000),
      });
      await res.arrayBuffer();
      if (res.status === 200) return instance;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} was not healthy within ${STARTUP_TIMEOUT_MS} ms`);
    await sleep(200);
  }
}

async function stopInstance(instance: Instance): Promise<void> {
  const { child } = instance;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const result = await Promise.race([instance.exited, sleep(STOP_TIMEOUT_MS).then(() => 'timeout' as const)]);
  if (result === 'timeout') {
    child.kill('SIGKILL');
    await instance.exited;
    throw new Error(`${instance.name} did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM (killed)`);
  }
  if (result !== 0) throw new Error(`${instance.name} exited with ${result} after SIGTERM`);
}

// ---------------------------------------------------------------------------------------------------------
// HTTP helpers

interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

async function call(
  instance: Instance,
  method: string,
  path: string,
  options: { token?: string; apiKey?: string; body?: unknown } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${instance.baseUrl}${API}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // keep the text
  }
  return { status: res.status, headers: res.headers, body };
}

function expectStatus(what: string, res: ApiResponse, status: number): void {
  if (res.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  }
}

async function login(instance: Instance): Promise<string> {
  const res = await call(instance, 'POST', '/auth/login', {
    body: { username: 'admin', password: shared.adminPassword },
  });
  expectStatus('login', res, 200);
  return String((res.body as { access_token: string }).access_token);
}

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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
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

async function redisReachable(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Database

interface Database {
  /** Passed to the children as DATABASE_URL; undefined: the first instance uses its embedded default. */
  url: string | undefined;
  description: string;
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const url = new URL(serverUrl);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function prepareDatabase(): Promise<Database> {
  const serverUrl = process.env.DATABASE_URL?.trim();
  if (!serverUrl) return { url: undefined, description: 'embedded PostgreSQL (DATABASE_URL unset)' };
  const name = `vigil_bench_${process.pid}`;
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  onCleanup(`drop database ${name}`, () =>
    adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  );
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), description: `scratch database ${name} on DATABASE_URL's server` };
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

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    console.error(`\n${signal}: cleaning up`);
    void cleanupAll().then(() => process.exit(130));
  });
}

main()
  .then(
    (errors) => errors,
    (error: unknown) => {
      console.error(
        `\nbench:auth failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      return 1;
    },
  )
  .then(async (errors) => {
    const failures = await cleanupAll();
    if (!interrupted) process.exit(errors + failures > 0 ? 1 : 0);
  })
  .catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
