/**
 * WebSocket fan-out benchmark (`npm run bench:ws`).
 *
 * 1. Starts the built service (dist/src/main.js) as a child process on a free port with its own temporary
 *    DATA_DIR, on a scratch database on DATABASE_URL's server or, when DATABASE_URL is unset, on an embedded
 *    PostgreSQL this benchmark starts (so it can reach the database itself).
 * 2. Connects BENCH_WS_CLIENTS (1,000) WebSocket clients, half with `?api_key=` (a read:events key) and
 *    half with `?token=` (the admin JWT), alternating /ws and /api/v1/ws.
 * 3. Ingests BENCH_WS_EVENTS (100, after 10 discarded warm-up events) events one after another through
 *    POST /api/v1/events (admin) for a camera created with POST /api/v1/cameras, and measures for every
 *    client the delay from the POST returning to the matching `event.created` arriving (matched by event
 *    id). Prints p50/p99 (target: p99 < 100 ms) and checks that every client got every event exactly once.
 * 4. The floor: the same number of clients on a bare `ws` server (this file run as a child with
 *    `--floor-server`) that answers an HTTP POST and then broadcasts a message of the same size, measured
 *    the same way; prints service/floor ratios.
 *
 * Both runs measure from this one process, so the clients' own work (1,000 sockets read by one event loop)
 * is in both figures. Exits non-zero on errors (a child that does not start, an unexpected response, a lost
 * or duplicated message); a missed latency target is printed as FAIL. Tunables: BENCH_WS_CLIENTS (1000),
 * BENCH_WS_EVENTS (100), BENCH_WS_WARMUP (10).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import WebSocket, { WebSocketServer } from 'ws';
import {
  call,
  expectStatus,
  type Instance,
  intFromEnv,
  login,
  onCleanup,
  benchDatabase,
  runBenchmark,
  sleep,
  startInstance,
} from './support';

const CLIENTS = intFromEnv('BENCH_WS_CLIENTS', 1000);
const EVENTS = intFromEnv('BENCH_WS_EVENTS', 100);
const WARMUP = intFromEnv('BENCH_WS_WARMUP', 10);
const P99_TARGET_MS = 100;
const CONNECT_CONCURRENCY = 50;
const DELIVERY_TIMEOUT_MS = 5000;
const GAP_MS = 20;

// ---------------------------------------------------------------------------------------------------------
// Receiving: every client records when each event id reached it.

interface Delivery {
  /** Receipts per client index (to find losses and duplicates). */
  receipts: Uint8Array;
  /** performance.now() of each client's first receipt. */
  at: Float64Array;
  count: number;
  done?: () => void;
}

class FanOut {
  private readonly deliveries = new Map<string, Delivery>();
  /** Every client receives the same text: parse it once. */
  private lastText = '';
  private lastId = '';
  readonly sockets: WebSocket[] = [];
  /** Messages that were not an event.created. */
  unexpected = 0;
  /** Connections that closed before the run ended. */
  closedEarly = 0;

  constructor(readonly clients: number) {}

  private delivery(id: string): Delivery {
    let delivery = this.deliveries.get(id);
    if (!delivery) {
      delivery = { receipts: new Uint8Array(this.clients), at: new Float64Array(this.clients), count: 0 };
      this.deliveries.set(id, delivery);
    }
    return delivery;
  }

  onMessage(index: number, data: Buffer): void {
    const now = performance.now();
    const text = data.toString('utf8');
    let id: string;
    if (text === this.lastText) id = this.lastId;
    else {
      const message = JSON.parse(text) as { type?: string; data?: { id?: unknown } };
      if (message.type !== 'event.created' || typeof message.data?.id !== 'string') {
        this.unexpected++;
        return;
      }
      id = message.data.id;
      this.lastText = text;
      this.lastId = id;
    }
    const delivery = this.delivery(id);
    if (delivery.receipts[index]++ === 0) {
      delivery.at[index] = now;
      delivery.count++;
      if (delivery.count === this.clients) delivery.done?.();
    }
  }

  /** Resolves when every client has the event, or after the timeout. */
  whenDelivered(id: string, timeoutMs: number): Promise<void> {
    const delivery = this.delivery(id);
    if (delivery.count === this.clients) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      delivery.done = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Delays (ms) from `since` for every client that got the event; losses and duplicates. */
  measure(id: string, since: number): { delays: number[]; early: number; lost: number; duplicates: number } {
    const delivery = this.delivery(id);
    const delays: number[] = [];
    let early = 0;
    let lost = 0;
    let duplicates = 0;
    for (let i = 0; i < this.clients; i++) {
      if (delivery.receipts[i] === 0) {
        lost++;
        continue;
      }
      if (delivery.receipts[i] > 1) duplicates += delivery.receipts[i] - 1;
      const delay = delivery.at[i] - since;
      if (delay < 0) early++;
      delays.push(Math.max(0, delay));
    }
    return { delays, early, lost, duplicates };
  }

  async connect(urlOf: (index: number) => string): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < this.clients) {
        const index = next++;
        this.sockets[index] = await new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(urlOf(index), { perMessageDeflate: false });
          ws.once('open', () => resolve(ws));
          ws.once('unexpected-response', (_req, res) =>
            reject(new Error(`client ${index} refused: HTTP ${res.statusCode}`)),
          );
          ws.once('error', reject);
          ws.on('message', (data: Buffer) => this.onMessage(index, data));
        });
      }
    };
    await Promise.all(Array.from({ length: CONNECT_CONCURRENCY }, worker));
    for (const ws of this.sockets) ws.on('close', () => this.closedEarly++);
  }

  async close(): Promise<void> {
    await Promise.all(
      this.sockets.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) return resolve();
            ws.removeAllListeners('close');
            ws.once('close', () => resolve());
            ws.close();
            setTimeout(() => {
              ws.terminate();
              resolve();
            }, 2000).unref();
          }),
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------------------
// One measured run: `publish()` makes one event (returns its id and when the POST returned).

interface RunStats {
  p50: number;
  p99: number;
  max: number;
  publishP50: number;
  deliveries: number;
  lost: number;
  duplicates: number;
  early: number;
}

async function run(
  fanOut: FanOut,
  publish: () => Promise<{ id: string; returnedAt: number; tookMs: number }>,
): Promise<RunStats> {
  const delays: number[] = [];
  const publishTimes: number[] = [];
  let lost = 0;
  let duplicates = 0;
  let early = 0;
  for (let i = 0; i < WARMUP + EVENTS; i++) {
    const { id, returnedAt, tookMs } = await publish();
    await fanOut.whenDelivered(id, DELIVERY_TIMEOUT_MS);
    await sleep(GAP_MS); // late duplicates would show up here
    if (i < WARMUP) continue;
    const result = fanOut.measure(id, returnedAt);
    delays.push(...result.delays);
    publishTimes.push(tookMs);
    lost += result.lost;
    duplicates += result.duplicates;
    early += result.early;
  }
  delays.sort((a, b) => a - b);
  publishTimes.sort((a, b) => a - b);
  return {
    p50: percentile(delays, 0.5),
    p99: percentile(delays, 0.99),
    max: delays.at(-1) ?? NaN,
    publishP50: percentile(publishTimes, 0.5),
    deliveries: delays.length,
    lost,
    duplicates,
    early,
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

function format(stats: RunStats): string {
  return (
    `delivery p50 ${stats.p50.toFixed(2)} ms, p99 ${stats.p99.toFixed(2)} ms, max ${stats.max.toFixed(2)} ms; ` +
    `POST p50 ${stats.publishP50.toFixed(2)} ms; ${stats.deliveries} deliveries, lost ${stats.lost}, ` +
    `duplicates ${stats.duplicates}, before the POST returned ${stats.early}`
  );
}

/** POSTs JSON and returns the parsed body with the time the response had fully arrived. */
async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; returnedAt: number; tookMs: number }> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const returnedAt = performance.now();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    returnedAt,
    tookMs: returnedAt - started,
  };
}

// ---------------------------------------------------------------------------------------------------------
// The floor: a bare `ws` server in a child process (this file with --floor-server).

function floorServer(): void {
  const server = http.createServer();
  const wss = new WebSocketServer({ server, path: '/ws', perMessageDeflate: false });
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(201, { 'content-type': 'application/json' }).end(body);
      // Like the service: the response goes out, then the message is serialised once and sent to all.
      setImmediate(() => {
        const frame = Buffer.from(
          `{"type":"event.created","data":${body.toString('utf8')},"timestamp":"${new Date().toISOString()}"}`,
        );
        for (const ws of wss.clients) ws.send(frame, { binary: false });
      });
    });
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  });
  process.once('SIGTERM', () => {
    for (const ws of wss.clients) ws.terminate();
    server.close(() => process.exit(0));
  });
}

async function startFloor(): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, [__filename, '--floor-server'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  onCleanup('stop the floor server', async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`floor server exited (${code})`)));
  });
  return { port, child };
}

// ---------------------------------------------------------------------------------------------------------

async function createCamera(instance: Instance, token: string, databaseUrl: string): Promise<string> {
  const body = { name: `bench-ws-${process.pid}`, source_type: 'rtsp', url: 'rtsp://127.0.0.1:8554/bench' };
  const res = await call(instance, 'POST', '/cameras', { token, body });
  if (res.status === 201) return String((res.body as { id: string }).id);
  if (res.status !== 404) expectStatus('create camera', res, 201);
  // No camera endpoint in this build: insert the row directly.
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = await client.query<{ id: string }>(
      'INSERT INTO cameras (name, source_type, url) VALUES ($1, $2, $3) RETURNING id',
      [body.name, body.source_type, body.url],
    );
    return rows.rows[0].id;
  } finally {
    await client.end();
  }
}

function eventBody(cameraId: string, n: number): Record<string, unknown> {
  return {
    camera_id: cameraId,
    detection_type: 'person',
    objects_detected: ['person', 'package'],
    confidence: 87,
    description:
      `Benchmark event ${n}: a person in a dark jacket walks up the driveway, leaves a parcel by the ` +
      'front door and returns to a white van parked on the street.',
  };
}

async function main(): Promise<number> {
  const started = Date.now();
  let errors = 0;
  const workDir = mkdtempSync(join(tmpdir(), 'vigil-bench-ws-'));
  chmodSync(workDir, 0o755); // as root, the embedded PostgreSQL runs as "postgres" and must reach it
  onCleanup(`remove ${workDir}`, async () => rmSync(workDir, { recursive: true, force: true }));

  const { url: databaseUrl, description } = await benchDatabase(workDir);
  console.log(`Vigil WebSocket benchmark: ${description}; temp dir ${workDir}`);

  const service = await startInstance('vigil', join(workDir, 'data'), { DATABASE_URL: databaseUrl });
  console.log(`Service up at ${service.baseUrl} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  const token = await login(service);
  const keyRes = await call(service, 'POST', '/api-keys', {
    token,
    body: { name: 'bench-ws', scopes: ['read:events'], rate_limit_per_minute: 10_000 },
  });
  expectStatus('create API key', keyRes, 201);
  const apiKey = String((keyRes.body as { key: string }).key);
  const cameraId = await createCamera(service, token, databaseUrl);

  const probe = await postJson(`${service.baseUrl}/api/v1/events`, eventBody(cameraId, 0), {
    authorization: `Bearer ${token}`,
  });
  if (probe.status !== 201) {
    throw new Error(`POST /api/v1/events answered ${probe.status} ${JSON.stringify(probe.body)}`);
  }

  // ---- the service ---------------------------------------------------------------------------------
  const wsBase = service.baseUrl.replace(/^http/, 'ws');
  const serviceFanOut = new FanOut(CLIENTS);
  const connectStarted = Date.now();
  await serviceFanOut.connect((i) => {
    const path = i % 4 < 2 ? '/ws' : '/api/v1/ws';
    return i % 2 === 0 ? `${wsBase}${path}?api_key=${apiKey}` : `${wsBase}${path}?token=${token}`;
  });
  console.log(
    `\n${CLIENTS} clients connected to the service in ${Date.now() - connectStarted} ms ` +
      `(half api_key=, half token=; /ws and /api/v1/ws)`,
  );
  let payloadBytes = 0;
  let n = 0;
  const serviceStats = await run(serviceFanOut, async () => {
    const res = await postJson(`${service.baseUrl}/api/v1/events`, eventBody(cameraId, ++n), {
      authorization: `Bearer ${token}`,
    });
    if (res.status !== 201) throw new Error(`POST /api/v1/events answered ${res.status}`);
    payloadBytes = Buffer.byteLength(JSON.stringify(res.body));
    return { id: String(res.body.id), returnedAt: res.returnedAt, tookMs: res.tookMs };
  });
  console.log(`  service: ${format(serviceStats)}`);
  const serviceClosed = serviceFanOut.closedEarly;
  const serviceUnexpected = serviceFanOut.unexpected;
  await serviceFanOut.close();

  // ---- the floor -----------------------------------------------------------------------------------
  const floor = await startFloor();
  const floorFanOut = new FanOut(CLIENTS);
  const floorConnectStarted = Date.now();
  await floorFanOut.connect(() => `ws://127.0.0.1:${floor.port}/ws`);
  console.log(`${CLIENTS} clients connected to the floor server in ${Date.now() - floorConnectStarted} ms`);
  const template = probe.body;
  const floorStats = await run(floorFanOut, async () => {
    const id = randomUUID();
    const res = await postJson(`http://127.0.0.1:${floor.port}/publish`, { ...template, id });
    if (res.status !== 201) throw new Error(`floor server answered ${res.status}`);
    return { id, returnedAt: res.returnedAt, tookMs: res.tookMs };
  });
  console.log(`  floor (bare ws, same payload of ${payloadBytes} bytes): ${format(floorStats)}`);
  await floorFanOut.close();

  // ---- summary -------------------------------------------------------------------------------------
  const expected = CLIENTS * EVENTS;
  const complete =
    serviceStats.lost === 0 && serviceStats.duplicates === 0 && serviceStats.deliveries === expected;
  if (!complete || serviceClosed > 0 || serviceUnexpected > 0) {
    errors++;
    console.error(
      `  ERROR: ${serviceStats.lost} lost, ${serviceStats.duplicates} duplicated, ${serviceClosed} connections ` +
        `closed, ${serviceUnexpected} unexpected messages`,
    );
  }
  const p99Verdict = serviceStats.p99 < P99_TARGET_MS ? 'PASS' : 'FAIL';
  const rows = [
    ['clients x events', `${CLIENTS} x ${EVENTS}`, '', ''],
    ['service delivery p50', `${serviceStats.p50.toFixed(2)} ms`, '', ''],
    ['service delivery p99', `${serviceStats.p99.toFixed(2)} ms`, `< ${P99_TARGET_MS} ms`, p99Verdict],
    [
      'deliveries (each event)',
      `${serviceStats.deliveries} (${CLIENTS})`,
      `${expected}`,
      complete ? 'PASS' : 'ERROR',
    ],
    ['floor p50 / p99', `${floorStats.p50.toFixed(2)} / ${floorStats.p99.toFixed(2)} ms`, '', ''],
    ['ratio service/floor p50', (serviceStats.p50 / Math.max(floorStats.p50, 0.001)).toFixed(2), '', ''],
    ['ratio service/floor p99', (serviceStats.p99 / Math.max(floorStats.p99, 0.001)).toFixed(2), '', ''],
  ];
  const widths = [26, 24, 10, 7];
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  console.log(`\nSummary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  console.log(line(['metric', 'value', 'target', 'result']));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
  if (p99Verdict === 'FAIL') console.log(`\nMISSED TARGET: p99 ${serviceStats.p99.toFixed(2)} ms`);
  return errors;
}

if (process.argv.includes('--floor-server')) floorServer();
else runBenchmark('bench:ws', main);
