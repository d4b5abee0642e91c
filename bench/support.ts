/**
 * What the benchmarks share: starting the built service as a child process (own DATA_DIR, a scratch
 * database or the embedded one), HTTP helpers, clean-up on exit and Ctrl-C, and the run wrapper.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import WebSocket from 'ws';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { adminQuery, databaseUrl } from '../src/database/server-admin';

const ROOT = resolve(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
export const API = '/api/v1';

const STARTUP_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 20_000;

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

export function intFromEnv(name: string, fallback: number): number {
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

export function onCleanup(label: string, fn: () => Promise<void>): void {
  cleanups.push({ label, fn });
}

/** Runs every clean-up step once; returns how many failed. */
export function cleanupAll(): Promise<number> {
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

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export function freePort(): Promise<number> {
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

export interface Instance {
  name: string;
  baseUrl: string;
  child: ChildProcess;
  exited: Promise<number | string>;
  output: string[];
}

export const shared = {
  adminPassword: randomBytes(12).toString('base64url'),
  // The same secrets for every instance, as in a real multi-instance deployment.
  jwtSecret: randomBytes(48).toString('base64url'),
  encryptionKey: randomBytes(32).toString('hex'),
};

export async function startInstance(
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

  // BENCH_SERVICE_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the service.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, MAIN], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

export async function stopInstance(instance: Instance): Promise<void> {
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

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function call(
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

export function expectStatus(what: string, res: ApiResponse, status: number): void {
  if (res.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  }
}

export async function login(instance: Instance): Promise<string> {
  const res = await call(instance, 'POST', '/auth/login', {
    body: { username: 'admin', password: shared.adminPassword },
  });
  expectStatus('login', res, 200);
  return String((res.body as { access_token: string }).access_token);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The value at fraction `p` (0..1) of ascending `sorted` values (nearest rank); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1))];
}

export async function redisReachable(url: string): Promise<boolean> {
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
// Processes (Linux /proc): CPU time of a process and its children

/** One process as /proc/<pid>/stat describes it; times in clock ticks (see `clockTicksPerSecond`). */
export interface ProcessStat {
  pid: number;
  comm: string;
  /** R, S, D, Z (zombie: exited, not yet reaped), ... */
  state: string;
  ppid: number;
  /** User + system time of all its threads. */
  cpu: number;
  /** User + system time of its children that exited and were reaped (waited for). */
  reapedChildrenCpu: number;
}

/** The process's figures, or null when it does not exist (any more). */
export function processStat(pid: number): ProcessStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is field 3 of proc(5): state; ppid 4, utime 14, stime 15, cutime 16, cstime 17.
  return {
    pid,
    comm: text.slice(text.indexOf('(') + 1, close),
    state: fields[0],
    ppid: Number(fields[1]),
    cpu: Number(fields[11]) + Number(fields[12]),
    reapedChildrenCpu: Number(fields[13]) + Number(fields[14]),
  };
}

/** Every process whose parent is `pid` (a scan of /proc, so nothing is missed). */
export function childProcesses(pid: number): ProcessStat[] {
  const children: ProcessStat[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(Number(entry));
    if (stat?.ppid === pid) children.push(stat);
  }
  return children;
}

let ticksPerSecond: number | undefined;

/** The unit of /proc CPU times (`getconf CLK_TCK`, 100 on Linux). */
export function clockTicksPerSecond(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticksPerSecond;
}

// ---------------------------------------------------------------------------------------------------------
// Database

export interface Database {
  /** Passed to the children as DATABASE_URL; undefined: the first instance uses its embedded default. */
  url: string | undefined;
  description: string;
}

export async function prepareDatabase(): Promise<Database> {
  const serverUrl = process.env.DATABASE_URL?.trim();
  if (!serverUrl) return { url: undefined, description: 'embedded PostgreSQL (DATABASE_URL unset)' };
  const name = `vigil_bench_${process.pid}`;
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  onCleanup(`drop database ${name}`, async () => {
    await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  return {
    url: databaseUrl(serverUrl, name),
    description: `scratch database ${name} on DATABASE_URL's server`,
  };
}

/**
 * The database a benchmark's service runs on: a scratch database on DATABASE_URL's server, or (unset) an
 * embedded PostgreSQL started under `workDir` (which must be reachable by the postgres user when run as root).
 * Both are removed by the clean-up.
 */
export async function benchDatabase(workDir: string): Promise<{ url: string; description: string }> {
  const database = await prepareDatabase();
  if (database.url) return { url: database.url, description: database.description };
  const embedded = await startEmbeddedPostgres(join(workDir, 'pg'), (m) =>
    console.error(`  [postgres] ${m}`),
  );
  onCleanup('stop the embedded PostgreSQL', () => embedded.stop());
  return {
    url: embedded.url,
    description: 'embedded PostgreSQL started by the benchmark (DATABASE_URL unset)',
  };
}

/** Opens a WebSocket client (no compression); rejects when the upgrade is refused. */
export function connectWebSocket(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`/ws refused: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** Closes a WebSocket client (terminating it after 2 s without a close handshake). */
export function closeWebSocket(ws: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve();
    ws.removeAllListeners('close');
    ws.once('close', () => resolve());
    ws.close();
    setTimeout(() => {
      ws.terminate();
      resolve();
    }, 2000).unref();
  });
}

// ---------------------------------------------------------------------------------------------------------
// Running

/**
 * Runs a benchmark's main (which returns its error count), cleans up (also on Ctrl-C) and exits non-zero
 * on errors or failed clean-up steps.
 */
export function runBenchmark(name: string, main: () => Promise<number>): void {
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
          `\n${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
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
}
