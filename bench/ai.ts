/**
 * AI description benchmark (`npm run bench:ai`).
 *
 * 1. Starts the built service (dist/src/main.js) as a child process with its own temporary DATA_DIR, on a
 *    scratch database on DATABASE_URL's server or, when DATABASE_URL is unset, on an embedded PostgreSQL this
 *    benchmark starts. A fake OpenAI-compatible provider (test/fakes/ai-providers.ts: a loopback HTTP server
 *    in this process speaking the chat-completions API with real response shapes) answers every request after
 *    BENCH_AI_LATENCY_MS (2000); the service's `openai_compatible` provider points at it (no key, 30 s
 *    timeout). One camera (not capturing) is created; a 640x360 JPEG made once by ffmpeg is the image of every
 *    event. A WebSocket (/ws, admin JWT) records every `event.updated` with the time it arrived.
 * 2. API latency: POST /api/v1/events (admin; motion, the JPEG, no description, so the event is stored as
 *    `pending` and queued) at a steady BENCH_AI_RATE (10) per second, open loop: each request goes out at its
 *    scheduled time whether or not the earlier ones have answered, so a slow service cannot slow the load
 *    down. The latency of each is from sending to the whole response read. Blocks alternate AI off
 *    (`ai_provider_order: []`) and on (`["openai_compatible"]`): BENCH_AI_ROUNDS (4) rounds of off then on,
 *    BENCH_AI_SECONDS (60) of each mode in total, so drift and outside load (a growing table, other processes)
 *    hit both alike. Before the first round a short warm-up with AI off and on (discarded) loads the code
 *    paths (the SDK's first use, JIT). After AI is turned off the benchmark waits for the calls in flight to
 *    end before the next off block. With AI on the queue is saturated throughout: the events of the earlier
 *    blocks are still waiting, and events come faster than concurrency / latency.
 *    Prints p50/p99/max of each mode and of each block (with the CPU use of the machine, the service and this
 *    process in the block), the p99 ratio of each round, a 90 % bootstrap interval of the ratio (how far
 *    chance alone moves it), and the AI-on requests that met a description completing (within 50 ms) apart
 *    from the others. Target: p99(on) / p99(off) over all blocks at most 1.2. For judging outliers, a probe
 *    outside the service (a one-row INSERT on its own connection every 100 ms) shows how the database and
 *    the disk answered in each block.
 * 3. Describe throughput: the `event.updated` messages with `description_status: complete` that arrive in
 *    the on blocks, from one provider latency after AI was turned on to the block's end (the queue is full
 *    all that time). The rate is the least-squares slope of the completion count over time, pooled across
 *    the blocks (a plain count over a window, also printed, is off by up to `concurrency` at its edges, as
 *    the slots finish in step). Target: DESCRIBE_CONCURRENCY (src/modules/ai/queue-timing.ts) / provider
 *    latency, within 10 %. Also printed: the mean provider time of those descriptions (`response_time_ms`)
 *    and the number in flight it implies (Little's law: rate x time).
 * 4. Completeness: after the last block the fake answers at once (latency 0) so the backlog drains quickly;
 *    then every ingested event must be `complete` (database), each with exactly one `complete` message on the
 *    WebSocket, each described by exactly one provider request (the fake's request count and the `ai_calls`
 *    ledger against the number of events), and no provider request may arrive while AI is off.
 *
 * The load generator, the fake provider, the service and PostgreSQL share the machine. Exits non-zero on
 * errors (a child that does not start, a POST that does not answer 201 pending, an event not described
 * within the drain timeout, a description that failed, a lost WebSocket); a missed target is printed as
 * FAIL. Tunables: BENCH_AI_RATE (10 events/s), BENCH_AI_SECONDS (60 s per mode, at least 4 per block),
 * BENCH_AI_LATENCY_MS (2000), BENCH_AI_ROUNDS (4). The default run takes about 2.5 minutes.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import WebSocket from 'ws';
import { DESCRIBE_CONCURRENCY } from '../src/modules/ai/queue-timing';
import { FFMPEG_BINARY } from '../src/modules/cameras/capture/ffmpeg';
import { FakeAiServer } from '../test/fakes/ai-providers';
import {
  API,
  benchDatabase,
  call,
  clockTicksPerSecond,
  expectStatus,
  type Instance,
  intFromEnv,
  login,
  median,
  message,
  onCleanup,
  percentile,
  processStat,
  runBenchmark,
  sleep,
  startInstance,
  closeWebSocket,
  connectWebSocket,
} from './support';

const RATE = intFromEnv('BENCH_AI_RATE', 10);
const SECONDS = intFromEnv('BENCH_AI_SECONDS', 60);
const LATENCY_MS = intFromEnv('BENCH_AI_LATENCY_MS', 2000);
const ROUNDS = intFromEnv('BENCH_AI_ROUNDS', 4);
const BLOCK_MS = (SECONDS * 1000) / ROUNDS;
const P99_RATIO_TARGET = 1.2;
const THROUGHPUT_TOLERANCE = 0.1;
const PROVIDER = 'openai_compatible';
const MODEL = 'fake-vision';
const PROVIDER_TIMEOUT_MS = 30_000;
/** Warm-up (discarded): this long with AI off, then with AI on. */
const WARMUP_OFF_MS = 3_000;
const WARMUP_ON_MS = 5_000;
/** After AI is turned off: the calls in flight end within one provider latency; then a margin. */
const SETTLE_MARGIN_MS = 1_000;
const POST_TIMEOUT_MS = 15_000;
const DRAIN_TIMEOUT_MS = 120_000;
const BOOTSTRAP_ROUNDS = 2000;
const PROBE_INTERVAL_MS = 100;
/** See nearCompletions. */
const NEAR_MS = 50;

if (BLOCK_MS < 4_000) throw new Error('BENCH_AI_SECONDS / BENCH_AI_ROUNDS must be at least 4 seconds');

const untilTime = (at: number) => sleep(Math.max(0, at - performance.now()));

// ---------------------------------------------------------------------------------------------------------
// Ingestion: POST /events at a steady rate, open loop

interface Sample {
  /** performance.now() when the request went out. */
  sentAt: number;
  /** From sending to the whole response read, ms. */
  latencyMs: number;
  /** How late the request went out against its schedule (the load generator's own delay), ms. */
  lateMs: number;
}

interface Ingester {
  instance: Instance;
  token: string;
  cameraId: string;
  /** The JSON body of every POST (the same event each time). */
  body: string;
  /** Ids of every event created, in order. */
  ids: string[];
  /** Responses that were not 201 with a pending event, and requests that failed. */
  errors: string[];
}

async function postEvent(ingester: Ingester, scheduledAt: number): Promise<Sample | null> {
  const sentAt = performance.now();
  try {
    const res = await fetch(`${ingester.instance.baseUrl}${API}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingester.token}`, 'content-type': 'application/json' },
      body: ingester.body,
      signal: AbortSignal.timeout(POST_TIMEOUT_MS),
    });
    const text = await res.text();
    const latencyMs = performance.now() - sentAt;
    const body = (text ? JSON.parse(text) : {}) as { id?: unknown; description_status?: unknown };
    if (res.status !== 201 || typeof body.id !== 'string' || body.description_status !== 'pending') {
      ingester.errors.push(`POST /events answered ${res.status} ${text.slice(0, 300)}`);
      return null;
    }
    ingester.ids.push(body.id);
    return { sentAt, latencyMs, lateMs: sentAt - scheduledAt };
  } catch (error) {
    ingester.errors.push(`POST /events failed: ${message(error)}`);
    return null;
  }
}

/** Sends RATE requests per second for `durationMs`; resolves with the samples once all have answered. */
async function ingestFor(ingester: Ingester, durationMs: number): Promise<Sample[]> {
  const start = performance.now();
  const count = Math.max(1, Math.round((RATE * durationMs) / 1000));
  const requests: Promise<Sample | null>[] = [];
  for (let i = 0; i < count; i++) {
    const at = start + (i * 1000) / RATE;
    await untilTime(at);
    requests.push(postEvent(ingester, at));
  }
  await untilTime(start + (count * 1000) / RATE);
  return (await Promise.all(requests)).filter((sample): sample is Sample => sample !== null);
}

// ---------------------------------------------------------------------------------------------------------
// The WebSocket: every description that completes (or fails)

interface Completion {
  id: string;
  /** performance.now() when the message arrived. */
  at: number;
  responseTimeMs: number;
  provider: string;
}

class UpdateListener {
  readonly completions: Completion[] = [];
  readonly failed = new Set<string>();
  malformed = 0;
  closed = false;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => this.onMessage(data));
    ws.on('close', () => (this.closed = true));
    ws.on('error', () => (this.closed = true)); // 'close' follows
  }

  static async connect(url: string): Promise<UpdateListener> {
    return new UpdateListener(await connectWebSocket(url));
  }

  private onMessage(data: Buffer): void {
    const at = performance.now();
    let parsed: {
      type?: string;
      data?: { id?: string; description_status?: string; response_time_ms?: number; provider_used?: string };
    };
    try {
      parsed = JSON.parse(data.toString('utf8')) as typeof parsed;
    } catch {
      this.malformed++;
      return;
    }
    if (parsed.type !== 'event.updated' || !parsed.data?.id) return;
    const event = parsed.data;
    if (event.description_status === 'failed') this.failed.add(String(event.id));
    if (event.description_status !== 'complete') return;
    this.completions.push({
      id: String(event.id),
      at,
      responseTimeMs: Number(event.response_time_ms),
      provider: String(event.provider_used),
    });
  }

  close(): Promise<void> {
    return closeWebSocket(this.ws);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Throughput: the slope of the completion count over time

interface Window {
  from: number;
  to: number;
}

/**
 * Completions per second in the windows: the least-squares slope of (time, running count) within each
 * window, pooled (sums of the windows' co-variations over the sums of their time variations). Slots that
 * finish in step make a staircase; its slope is still step / period, where a count / duration would be off
 * by up to a step at each edge.
 */
function pooledRate(completions: Completion[], windows: Window[]): { rate: number; count: number } {
  let covariation = 0;
  let variation = 0;
  let count = 0;
  for (const window of windows) {
    const times = completions.filter((c) => c.at >= window.from && c.at <= window.to).map((c) => c.at);
    if (times.length < 2) continue;
    count += times.length;
    const meanT = times.reduce((sum, t) => sum + t, 0) / times.length;
    const meanN = (times.length - 1) / 2;
    times.forEach((t, n) => {
      covariation += (t - meanT) * (n - meanN);
      variation += (t - meanT) ** 2;
    });
  }
  return { rate: variation > 0 ? (covariation / variation) * 1000 : NaN, count };
}

/**
 * Splits the samples by whether a description completed near them (its message arrived from NEAR_MS before
 * the request went out to NEAR_MS after its response): where the queue's bursts of work (result written,
 * next events claimed, prompts built) meet the API's requests.
 */
function nearCompletions(samples: Sample[], completions: Completion[]): { near: Sample[]; apart: Sample[] } {
  const times = completions.map((c) => c.at);
  const near: Sample[] = [];
  const apart: Sample[] = [];
  for (const sample of samples) {
    const from = sample.sentAt - NEAR_MS;
    const to = sample.sentAt + sample.latencyMs + NEAR_MS;
    (times.some((t) => t >= from && t <= to) ? near : apart).push(sample);
  }
  return { near, apart };
}

/**
 * A 90 % interval of p99(on) / p99(off) by resampling each mode's latencies with replacement (a fixed seed:
 * the same samples give the same interval). It shows how far the ratio could move by chance alone; the
 * samples are treated as independent, so stalls that hit several requests at once make it too narrow.
 */
function bootstrapRatio(on: Sample[], off: Sample[]): { low: number; high: number } {
  let seed = 0x9e3779b9;
  const random = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const p99Of = (samples: Sample[]) => {
    const resampled = Array.from(
      { length: samples.length },
      () => samples[Math.floor(random() * samples.length)].latencyMs,
    );
    return percentile(
      resampled.sort((a, b) => a - b),
      0.99,
    );
  };
  const ratios = Array.from({ length: BOOTSTRAP_ROUNDS }, () => p99Of(on) / p99Of(off)).sort((a, b) => a - b);
  return { low: percentile(ratios, 0.05), high: percentile(ratios, 0.95) };
}

// ---------------------------------------------------------------------------------------------------------
// The database seen from outside the service

/**
 * A one-row INSERT (a commit: a WAL flush) on its own connection every PROBE_INTERVAL_MS, not through the
 * service. Slow probes point at the machine (disk, other processes) rather than at the service's own work;
 * they show when outliers of the API in both modes are the environment's.
 */
class DbProbe {
  private readonly samples: { at: number; ms: number }[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  private constructor(private readonly client: Client) {
    this.loop = this.run();
  }

  static async start(url: string): Promise<DbProbe> {
    const client = new Client({ connectionString: url });
    await client.connect();
    await client.query(
      'CREATE TABLE bench_ai_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())',
    );
    return new DbProbe(client);
  }

  private async run(): Promise<void> {
    while (this.running) {
      const at = performance.now();
      try {
        await this.client.query('INSERT INTO bench_ai_probe DEFAULT VALUES');
      } catch (error) {
        // Only a figure for the reader: the benchmark goes on without it.
        console.error(`  database probe stopped: ${message(error)}`);
        return;
      }
      this.samples.push({ at, ms: performance.now() - at });
      await sleep(PROBE_INTERVAL_MS);
    }
  }

  /** The probes started in [from, to], ascending by duration. */
  between(from: number, to: number): number[] {
    return this.samples
      .filter((s) => s.at >= from && s.at <= to)
      .map((s) => s.ms)
      .sort((a, b) => a - b);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.client.end();
  }
}

function formatProbe(probes: number[]): string {
  return `database probe p99 ${ms(percentile(probes, 0.99))}, max ${ms(probes.at(-1) ?? NaN)}`;
}

// ---------------------------------------------------------------------------------------------------------
// CPU: how busy the machine, the service and this process were in a block (outside load shows here)

interface CpuSample {
  machineBusy: number;
  machineTotal: number;
  /** Clock ticks of the service process. */
  service: number;
  /** Microseconds of this process (the load generator, the fake provider, the WebSocket). */
  self: number;
  at: number;
}

function cpuSample(servicePid: number): CpuSample {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  const usage = process.cpuUsage();
  return {
    machineBusy: busy,
    machineTotal: busy + idle + iowait,
    service: processStat(servicePid)?.cpu ?? NaN,
    self: usage.user + usage.system,
    at: performance.now(),
  };
}

function cpuLoad(start: CpuSample, end: CpuSample): string {
  const seconds = (end.at - start.at) / 1000;
  const machine =
    ((end.machineBusy - start.machineBusy) / Math.max(1, end.machineTotal - start.machineTotal)) * 100;
  const service = ((end.service - start.service) / clockTicksPerSecond() / seconds) * 100;
  const self = ((end.self - start.self) / 1e6 / seconds) * 100;
  return (
    `CPU: machine ${machine.toFixed(0)} % busy, service ${service.toFixed(0)} % ` +
    `and bench ${self.toFixed(0)} % of one CPU`
  );
}

// ---------------------------------------------------------------------------------------------------------
// Service set-up

function makeJpeg(): Buffer {
  const jpeg = execFileSync(
    FFMPEG_BINARY,
    [
      ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=1'],
      ...['-frames:v', '1', '-f', 'image2pipe', '-c:v', 'mjpeg', 'pipe:1'],
    ],
    { maxBuffer: 16 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (jpeg.length < 4 || jpeg[0] !== 0xff || jpeg[1] !== 0xd8) throw new Error('ffmpeg did not make a JPEG');
  return jpeg;
}

async function setAi(instance: Instance, token: string, on: boolean): Promise<void> {
  const res = await call(instance, 'PUT', '/system/settings', {
    token,
    body: { ai_provider_order: on ? [PROVIDER] : [] },
  });
  expectStatus(`turn AI ${on ? 'on' : 'off'}`, res, 200);
}

async function configureProvider(instance: Instance, token: string, fake: FakeAiServer): Promise<void> {
  const res = await call(instance, 'PUT', '/system/settings', {
    token,
    body: {
      ai_providers: {
        [PROVIDER]: { enabled: true, base_url: fake.baseUrl, model: MODEL, timeout_ms: PROVIDER_TIMEOUT_MS },
      },
      ai_provider_order: [],
    },
  });
  expectStatus('configure the AI provider', res, 200);
}

async function createCamera(instance: Instance, token: string): Promise<string> {
  const res = await call(instance, 'POST', '/cameras', {
    token,
    // Not enabled: no capture process, the events come through the API only.
    body: {
      name: `bench-ai-${process.pid}`,
      source_type: 'rtsp',
      url: 'rtsp://127.0.0.1:8554/bench',
      enabled: false,
    },
  });
  expectStatus('create camera', res, 201);
  return String((res.body as { id: string }).id);
}

/** Waits until `total` events of the camera are complete (or the drain timeout); their count by status. */
async function drain(db: Client, cameraId: string, total: number): Promise<Record<string, number>> {
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const res = await db.query<{ description_status: string; n: number }>(
      'SELECT description_status, count(*)::int AS n FROM events WHERE camera_id = $1 GROUP BY 1',
      [cameraId],
    );
    const statuses = Object.fromEntries(res.rows.map((row) => [row.description_status, row.n]));
    if ((statuses.complete ?? 0) >= total || performance.now() > deadline) return statuses;
    await sleep(250);
  }
}

/**
 * Nothing was described in the warm-up although AI was on for longer than the provider latency: the
 * measurement would be meaningless, so stop here with what the service says about its providers.
 */
async function explainNoDescriptions(instance: Instance, token: string): Promise<never> {
  const res = await call(instance, 'GET', '/ai/providers', { token });
  throw new Error(
    `AI was on for ${WARMUP_ON_MS / 1000} s of the warm-up but no event was described; ` +
      `GET /ai/providers answered ${res.status} ${JSON.stringify(res.body).slice(0, 1500)}`,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Reporting

type Row = [metric: string, value: string, target: string, result: string];

const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(1)} ms` : 'n/a');
const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

interface Stats {
  count: number;
  p50: number;
  p99: number;
  max: number;
  maxLate: number;
}

function stats(samples: Sample[]): Stats {
  const latencies = samples.map((s) => s.latencyMs).sort((a, b) => a - b);
  return {
    count: latencies.length,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies.at(-1) ?? NaN,
    maxLate: Math.max(0, ...samples.map((s) => s.lateMs)),
  };
}

function formatStats(s: Stats): string {
  return (
    `${s.count} POSTs: p50 ${ms(s.p50)}, p99 ${ms(s.p99)}, max ${ms(s.max)}; ` +
    `sent at most ${ms(s.maxLate)} late`
  );
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  let errors = 0;
  const workDir = mkdtempSync(join(tmpdir(), 'vigil-bench-ai-'));
  chmodSync(workDir, 0o755); // as root, the embedded PostgreSQL runs as "postgres" and must reach it
  onCleanup(`remove ${workDir}`, async () => rmSync(workDir, { recursive: true, force: true }));

  const { url: databaseUrl, description } = await benchDatabase(workDir);
  const jpeg = makeJpeg();
  const expectedRate = (DESCRIBE_CONCURRENCY * 1000) / LATENCY_MS;
  console.log(
    `Vigil AI benchmark: ${description}; ${availableParallelism()} CPUs; ingestion ${RATE}/s, ` +
      `${ROUNDS} round(s) of AI off/on, ${SECONDS} s per mode (blocks of ${(BLOCK_MS / 1000).toFixed(1)} s); ` +
      `fake provider latency ${LATENCY_MS} ms; describe concurrency ${DESCRIBE_CONCURRENCY} ` +
      `(DESCRIBE_CONCURRENCY) -> expected ${expectedRate.toFixed(2)} descriptions/s; JPEG ${jpeg.length} bytes`,
  );

  const fake = await FakeAiServer.start({ kind: 'openai' });
  onCleanup('close the fake AI provider', () => fake.close());
  fake.setLatency(LATENCY_MS);

  const service = await startInstance('vigil', join(workDir, 'data'), { DATABASE_URL: databaseUrl });
  console.log(`Service up at ${service.baseUrl} (pid ${service.child.pid})`);
  const token = await login(service);
  await configureProvider(service, token, fake);
  const cameraId = await createCamera(service, token);
  const listener = await UpdateListener.connect(
    `${service.baseUrl.replace(/^http/, 'ws')}/ws?token=${token}`,
  );
  onCleanup('close the WebSocket', () => listener.close());
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  onCleanup('close the database connection', () => db.end());
  const probe = await DbProbe.start(databaseUrl);
  onCleanup('stop the database probe', () => probe.stop());

  const ingester: Ingester = {
    instance: service,
    token,
    cameraId,
    body: JSON.stringify({
      camera_id: cameraId,
      detection_type: 'motion',
      image_base64: jpeg.toString('base64'),
    }),
    ids: [],
    errors: [],
  };

  // The fake's requests, counted (and checked) as they are taken out of its list, which keeps every body.
  let providerRequests = 0;
  let requestsWhileOff = 0;
  let wrongRequests = 0;
  const takeRequests = () => {
    const taken = fake.requests.splice(0);
    for (const request of taken) {
      if (request.body?.model !== MODEL) wrongRequests++;
    }
    providerRequests += taken.length;
    return taken.length;
  };
  const turn = (on: boolean) => setAi(service, token, on);
  /** AI off, and the calls in flight (already counted as requests) are over. */
  const turnOffAndSettle = async () => {
    await turn(false);
    await sleep(LATENCY_MS + SETTLE_MARGIN_MS);
    takeRequests();
  };

  // ---- warm-up (discarded) -------------------------------------------------------------------------
  await ingestFor(ingester, WARMUP_OFF_MS);
  await turn(true);
  await ingestFor(ingester, WARMUP_ON_MS);
  await turnOffAndSettle();
  console.log(
    `\nWarm-up: ${ingester.ids.length} events (${WARMUP_OFF_MS / 1000} s AI off, ${WARMUP_ON_MS / 1000} s on), ` +
      `${listener.completions.length} described`,
  );
  if (listener.completions.length === 0) await explainNoDescriptions(service, token);

  // ---- alternating blocks -------------------------------------------------------------------------
  const servicePid = service.child.pid!;
  const off: Sample[] = [];
  const on: Sample[] = [];
  const roundRatios: number[] = [];
  const offProbes: number[] = [];
  const onProbes: number[] = [];
  const windows: Window[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    takeRequests();
    let cpu = cpuSample(servicePid);
    const offSamples = await ingestFor(ingester, BLOCK_MS);
    const offCpu = cpuLoad(cpu, cpuSample(servicePid));
    const offProbe = probe.between(cpu.at, performance.now());
    offProbes.push(...offProbe);
    const offRequests = takeRequests();
    requestsWhileOff += offRequests;
    off.push(...offSamples);
    console.log(
      `  round ${round} AI off: ${formatStats(stats(offSamples))}; ${offCpu}; ${formatProbe(offProbe)}; ` +
        `provider requests ${offRequests}`,
    );

    const completionsBefore = listener.completions.length;
    await turn(true);
    const onAt = performance.now();
    cpu = cpuSample(servicePid);
    const onSamples = await ingestFor(ingester, BLOCK_MS);
    const onCpu = cpuLoad(cpu, cpuSample(servicePid));
    const onEnd = performance.now();
    const onProbe = probe.between(cpu.at, onEnd);
    onProbes.push(...onProbe);
    on.push(...onSamples);
    windows.push({ from: onAt + LATENCY_MS, to: onEnd });
    roundRatios.push(stats(onSamples).p99 / stats(offSamples).p99);
    const backlog = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE description_status <> 'complete'",
    );
    console.log(
      `  round ${round} AI on:  ${formatStats(stats(onSamples))}; ${onCpu}; ${formatProbe(onProbe)}; ` +
        `${listener.completions.length - completionsBefore} described, ${backlog.rows[0].n} waiting`,
    );
    if (round < ROUNDS) await turnOffAndSettle();
  }

  // ---- drain: the fake answers at once, every event must end up described -----------------------------
  fake.setLatency(0);
  const total = ingester.ids.length;
  const drainStart = performance.now();
  const statuses = await drain(db, cameraId, total);
  const drainMs = performance.now() - drainStart;
  await sleep(500); // the last messages on the WebSocket
  takeRequests();
  console.log(
    `\nDrain (fake latency 0): ${(drainMs / 1000).toFixed(1)} s; events by status: ${JSON.stringify(statuses)}`,
  );

  // ---- results ------------------------------------------------------------------------------------------
  const offStats = stats(off);
  const onStats = stats(on);
  const p99Ratio = onStats.p99 / offStats.p99;
  const p50Ratio = onStats.p50 / offStats.p50;

  const throughput = pooledRate(listener.completions, windows);
  const inWindows = listener.completions.filter((c) => windows.some((w) => c.at >= w.from && c.at <= w.to));
  const windowSeconds = windows.reduce((sum, w) => sum + (w.to - w.from), 0) / 1000;
  const plainRate = inWindows.length / windowSeconds;
  const meanResponseMs = inWindows.reduce((sum, c) => sum + c.responseTimeMs, 0) / inWindows.length;
  const throughputError = throughput.rate / expectedRate - 1;

  const completeIds = new Map<string, number>();
  for (const completion of listener.completions)
    completeIds.set(completion.id, (completeIds.get(completion.id) ?? 0) + 1);
  const ownIds = new Set(ingester.ids);
  const notCompleteOnWs = ingester.ids.filter((id) => !completeIds.has(id)).length;
  const duplicateMessages = [...completeIds.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
  const strangers = [...completeIds.keys()].filter((id) => !ownIds.has(id)).length;
  const wrongProvider = listener.completions.filter((c) => c.provider !== PROVIDER).length;
  const ledger = await db.query<{ calls: number; successes: number; events: number }>(
    `SELECT count(*)::int AS calls, count(*) FILTER (WHERE success)::int AS successes,
            count(DISTINCT event_id)::int AS events
     FROM ai_calls`,
  );
  const { calls, successes, events: ledgerEvents } = ledger.rows[0];
  const describedInDb = statuses.complete ?? 0;

  console.log(
    `\nAI off (${ROUNDS} block(s)): ${formatStats(offStats)}\nAI on  (${ROUNDS} block(s)): ${formatStats(onStats)}`,
  );
  const { near, apart } = nearCompletions(on, listener.completions);
  const sortedMs = (list: number[]) => [...list].sort((a, b) => a - b);
  console.log(
    `Outside the service, AI off: ${formatProbe(sortedMs(offProbes))}; AI on: ${formatProbe(sortedMs(onProbes))}`,
  );
  console.log(
    `AI on, POSTs within ${NEAR_MS} ms of a description completing: ${formatStats(stats(near))}\n` +
      `AI on, the others: ${formatStats(stats(apart))}`,
  );
  const interval = bootstrapRatio(on, off);
  console.log(
    `p50 ratio on/off ${p50Ratio.toFixed(2)}, p99 ratio on/off ${p99Ratio.toFixed(2)} (target ≤ ${P99_RATIO_TARGET}; ` +
      `90 % bootstrap interval ${interval.low.toFixed(2)}-${interval.high.toFixed(2)}); ` +
      `p99 ratio of each round ${roundRatios.map((r) => r.toFixed(2)).join(', ')} (median ${median(roundRatios).toFixed(2)})`,
  );
  console.log(
    `Describe throughput: ${throughput.rate.toFixed(3)}/s (slope over ${throughput.count} completions in ` +
      `${windowSeconds.toFixed(1)} s; plain count ${plainRate.toFixed(3)}/s) vs ${expectedRate.toFixed(3)}/s ` +
      `expected (${DESCRIBE_CONCURRENCY} / ${LATENCY_MS} ms): ${(throughputError * 100).toFixed(1)} %; ` +
      `mean provider time ${ms(meanResponseMs)} -> ${((throughput.rate * meanResponseMs) / 1000).toFixed(2)} ` +
      `descriptions in flight on average`,
  );
  console.log(
    `Events: ${total} ingested, ${describedInDb} complete in the database, ${completeIds.size} complete on the ` +
      `WebSocket (${duplicateMessages} repeated, ${strangers} of other events), ${listener.failed.size} failed; ` +
      `provider requests ${providerRequests} (${requestsWhileOff} while AI was off, ${wrongRequests} with another ` +
      `model); ai_calls ${calls} (${successes} successful, ${ledgerEvents} events)`,
  );

  for (const error of ingester.errors.slice(0, 10)) console.error(`  ERROR: ${error}`);
  if (ingester.errors.length > 10) console.error(`  ... and ${ingester.errors.length - 10} more`);
  errors += ingester.errors.length;
  const lost = describedInDb !== total || notCompleteOnWs > 0;
  if (lost) {
    errors++;
    console.error(
      `  ERROR: not every event was described within ${DRAIN_TIMEOUT_MS / 1000} s of the drain: ` +
        `${describedInDb}/${total} complete in the database, ${notCompleteOnWs} without a complete message`,
    );
  }
  if (listener.failed.size > 0) {
    errors++;
    console.error(`  ERROR: ${listener.failed.size} descriptions failed (the fake never fails)`);
  }
  if (listener.closed || listener.malformed > 0) {
    errors++;
    console.error(
      `  ERROR: WebSocket ${listener.closed ? 'closed during the run' : 'open'}, ${listener.malformed} malformed`,
    );
  }

  const onePerEvent =
    providerRequests === total && calls === total && successes === total && ledgerEvents === total;
  const rows: Row[] = [
    ['POST /events p50 AI off / on', `${ms(offStats.p50)} / ${ms(onStats.p50)}`, '', ''],
    ['POST /events p99 AI off / on', `${ms(offStats.p99)} / ${ms(onStats.p99)}`, '', ''],
    [
      'p99 ratio AI on / off',
      `${p99Ratio.toFixed(2)} (90 %: ${interval.low.toFixed(2)}-${interval.high.toFixed(2)})`,
      `≤ ${P99_RATIO_TARGET}`,
      verdict(p99Ratio <= P99_RATIO_TARGET),
    ],
    [
      'describe throughput',
      `${throughput.rate.toFixed(2)}/s (${(throughputError * 100).toFixed(1)} %)`,
      `${expectedRate.toFixed(2)}/s ± ${THROUGHPUT_TOLERANCE * 100} %`,
      verdict(Math.abs(throughputError) <= THROUGHPUT_TOLERANCE),
    ],
    ['events described', `${describedInDb} of ${total}`, 'all', lost ? 'ERROR' : 'PASS'],
    [
      'provider calls per event',
      `${providerRequests} requests, ${calls} ledger rows`,
      `${total}`,
      verdict(onePerEvent && wrongRequests === 0 && wrongProvider === 0 && duplicateMessages === 0),
    ],
    ['provider requests with AI off', `${requestsWhileOff}`, '0', verdict(requestsWhileOff === 0)],
  ];
  const widths = [30, 34, 18, 6];
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  console.log(`\nSummary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  console.log(line(['metric', 'value', 'target', 'result']));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
  const failed = rows.filter((row) => row[3] === 'FAIL');
  const targets = rows.filter((row) => row[3] !== '').length;
  console.log(`\n${targets - failed.length}/${targets} targets met`);
  if (failed.length > 0) console.log(`MISSED TARGETS: ${failed.map((row) => row[0]).join('; ')}`);
  return errors;
}

runBenchmark('bench:ai', main);
