/**
 * Protect realtime benchmark (`npm run bench:protect`).
 *
 * 1. Starts the built service (dist/src/main.js) as a child process (AI off), on a scratch database on
 *    DATABASE_URL's server or an embedded PostgreSQL this benchmark starts, and a fake UniFi Protect console
 *    (test/fakes/protect-console.ts: real HTTPS, WSS and binary update packets, deflated as consoles send them)
 *    in this process with BENCH_PROTECT_CAMERAS (20) cameras, all adopted (enabled) in Vigil.
 * 2. Baseline, in the same run: the same number of events through POST /events (admin ingestion) with the same
 *    JPEG, BENCH_PROTECT_CAMERAS requests at a time: the service's own event path (image store, insert,
 *    `event.created`) without Protect. Delay = request start → `event.created` on a WebSocket client.
 * 3. A warm-up of BENCH_PROTECT_WARMUP (100) detections, awaited and not measured; then
 *    the burst: BENCH_PROTECT_EVENTS (1,000) smart detections (person/vehicle/animal/package, round robin over
 *    the cameras) sent by the console as fast as it can. Delay = packet sent → `event.created` with that
 *    `protect_event_id` on the WebSocket client (each event needs the snapshot fetched from the console).
 * Prints events/s and p50/p99 for both, the ratios, and whether all events arrived exactly once (and are
 * stored once, each with an image). Target: every event, p99 < 500 ms.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type WebSocket from 'ws';
import { FAKE_PROTECT_SNAPSHOT_JPEG, FakeProtectConsole } from '../test/fakes/protect-console';
import {
  benchDatabase,
  call,
  closeWebSocket,
  connectWebSocket,
  expectStatus,
  intFromEnv,
  login,
  onCleanup,
  percentile,
  runBenchmark,
  sleep,
  startInstance,
} from './support';

const CAMERAS = intFromEnv('BENCH_PROTECT_CAMERAS', 20);
const EVENTS = intFromEnv('BENCH_PROTECT_EVENTS', 1000);
/** Detections sent and awaited before the measured burst (connections, caches and compiled code warm). */
const WARMUP = intFromEnv('BENCH_PROTECT_WARMUP', 100);
const P99_TARGET_MS = 500;
const DELIVERY_TIMEOUT_MS = 60_000;
const SMART_TYPES = ['person', 'vehicle', 'animal', 'package'] as const;
/** BENCH_PROTECT_BASELINE=0 skips the baseline (to profile the Protect path alone). */
const BASELINE = process.env.BENCH_PROTECT_BASELINE !== '0';

interface Created {
  id: string;
  protectEventId: string | null;
  thumbnailUrl: string | null;
  at: number;
}

/** Every `event.created` a WebSocket client receives, by event id and by Protect event id. */
class Receiver {
  readonly byProtectId = new Map<string, Created>();
  readonly byId = new Map<string, Created>();
  duplicates = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const at = performance.now();
      const message = JSON.parse(data.toString('utf8')) as {
        type: string;
        data: { id: string; protect_event_id: string | null; thumbnail_url: string | null };
      };
      if (message.type !== 'event.created') return;
      const created = {
        id: message.data.id,
        protectEventId: message.data.protect_event_id,
        thumbnailUrl: message.data.thumbnail_url,
        at,
      };
      if (this.byId.has(created.id)) this.duplicates++;
      this.byId.set(created.id, created);
      if (created.protectEventId) {
        if (this.byProtectId.has(created.protectEventId)) this.duplicates++;
        this.byProtectId.set(created.protectEventId, created);
      }
      for (const waiter of this.waiters) waiter();
    });
  }

  /** Resolves once `count` events arrived (or after the timeout). */
  async waitFor(count: number): Promise<void> {
    const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
    while (this.byId.size < count && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
      this.waiters = [];
    }
  }
}

function summary(delays: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...delays].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

async function main(): Promise<number> {
  let errors = 0;
  const workDir = mkdtempSync(join(tmpdir(), 'vigil-bench-protect-'));
  chmodSync(workDir, 0o755); // as root, the embedded PostgreSQL runs as "postgres" and must reach it
  onCleanup(`remove ${workDir}`, async () => rmSync(workDir, { recursive: true, force: true }));
  const database = await benchDatabase(workDir);
  console.log(`Vigil Protect benchmark: ${database.description}`);
  const instance = await startInstance('service', join(workDir, 'data'), { DATABASE_URL: database.url });
  const token = await login(instance);

  const fake = await FakeProtectConsole.start({
    cameras: Array.from({ length: CAMERAS }, (_, i) => ({
      name: `Bench ${i + 1}`,
      model: 'AI Pro' as const,
    })),
  });
  onCleanup('stop the fake console', () => fake.stop());

  const controller = await call(instance, 'POST', '/protect/controllers', {
    token,
    body: {
      name: 'Bench console',
      host: '127.0.0.1',
      port: fake.port,
      username: 'vigil',
      password: 'vigil-secret',
    },
  });
  expectStatus('create controller', controller, 201);
  const controllerBody = controller.body as { id: string; status: string; status_message: string | null };
  if (controllerBody.status !== 'connected')
    throw new Error(`controller not connected: ${controllerBody.status} ${controllerBody.status_message}`);
  const cameraIds: string[] = [];
  for (const camera of fake.listCameras()) {
    const res = await call(instance, 'POST', '/cameras', {
      token,
      body: {
        name: camera.name,
        source_type: 'protect',
        protect_controller_id: controllerBody.id,
        protect_camera_id: camera.id,
        enabled: true,
      },
    });
    expectStatus('adopt camera', res, 201);
    cameraIds.push((res.body as { id: string }).id);
  }

  const ws = await connectWebSocket(`${instance.baseUrl.replace('http', 'ws')}/ws?token=${token}`);
  onCleanup('close the WebSocket', () => closeWebSocket(ws));
  const receiver = new Receiver(ws);
  await sleep(200);

  // Baseline: the same events through POST /events, one request per camera at a time.
  const image = FAKE_PROTECT_SNAPSHOT_JPEG.toString('base64');
  const started = new Map<string, number>();
  let next = BASELINE ? 0 : EVENTS;
  const baselineStart = performance.now();
  await Promise.all(
    cameraIds.map(async () => {
      while (next < EVENTS) {
        const i = next++;
        const t0 = performance.now();
        const res = await call(instance, 'POST', '/events', {
          token,
          body: {
            camera_id: cameraIds[i % cameraIds.length],
            detection_type: SMART_TYPES[i % SMART_TYPES.length],
            confidence: 80,
            description: 'baseline',
            image_base64: image,
          },
        });
        expectStatus('ingest', res, 201);
        started.set((res.body as { id: string }).id, t0);
      }
    }),
  );
  await receiver.waitFor(started.size);
  const baselineDelays = [...started].map(([id, t0]) => (receiver.byId.get(id)?.at ?? NaN) - t0);
  const baselineLost = baselineDelays.filter(Number.isNaN).length;
  const baselineEnd = Math.max(...[...started.keys()].map((id) => receiver.byId.get(id)?.at ?? 0));
  const baselineRate = EVENTS / ((baselineEnd - baselineStart) / 1000);
  const baseline = summary(baselineDelays.filter((d) => !Number.isNaN(d)));
  const before = receiver.byId.size;

  // Warm-up: a small burst first, not measured.
  for (let i = 0; i < WARMUP; i++) {
    fake.startSmartDetection(fake.listCameras()[i % CAMERAS].id, ['person'], { score: 50 });
    if (i % 10 === 9) await sleep(0);
  }
  await receiver.waitFor(before + WARMUP);
  const warmed = receiver.byId.size;
  await sleep(1500); // past the snapshot sharing window

  // The burst: smart detections from the console, as fast as it sends them.
  const sent = new Map<string, number>();
  const burstStart = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const camera = fake.listCameras()[i % CAMERAS];
    const emission = fake.startSmartDetection(camera.id, [SMART_TYPES[i % SMART_TYPES.length]], {
      score: 70 + (i % 30),
    });
    sent.set(emission.eventId!, performance.now());
    if (i % 10 === 9) await sleep(0); // the console serves snapshots between sends, as a real one would
  }
  const sendSeconds = (performance.now() - burstStart) / 1000;
  await receiver.waitFor(warmed + EVENTS);
  const delays: number[] = [];
  let lost = 0;
  let withoutImage = 0;
  let burstEnd = 0;
  for (const [protectId, t0] of sent) {
    const created = receiver.byProtectId.get(protectId);
    if (!created) {
      lost++;
      continue;
    }
    if (!created.thumbnailUrl) withoutImage++;
    delays.push(created.at - t0);
    burstEnd = Math.max(burstEnd, created.at);
  }
  const burst = summary(delays);
  // Where the delay builds up: the median delay of each tenth of the burst, in sending order.
  const tenths = Array.from({ length: 10 }, (_, k) =>
    summary(delays.slice((k * delays.length) / 10, ((k + 1) * delays.length) / 10)).p50.toFixed(0),
  );
  const burstRate = (EVENTS - lost) / ((burstEnd - burstStart) / 1000);

  // Stored exactly once each.
  const stored = await call(instance, 'GET', '/events?source_type=protect&limit=1', { token });
  expectStatus('count', stored, 200);
  const storedTotal = (stored.body as { total: number }).total;

  console.log(`\n${EVENTS} events over ${CAMERAS} cameras (AI off)`);
  console.log(
    `  baseline POST /events (${CAMERAS} at a time): ${baselineRate.toFixed(0)} events/s; request → event.created ` +
      `p50 ${baseline.p50.toFixed(1)} ms, p99 ${baseline.p99.toFixed(1)} ms; lost ${baselineLost}`,
  );
  console.log(
    `  Protect burst (sent in ${sendSeconds.toFixed(2)} s): ${burstRate.toFixed(0)} events/s; packet → event.created ` +
      `p50 ${burst.p50.toFixed(1)} ms, p99 ${burst.p99.toFixed(1)} ms, max ${burst.max.toFixed(1)} ms`,
  );
  console.log(`  median delay by tenth of the burst (ms): ${tenths.join(' ')}`);
  console.log(
    `  ratios Protect / baseline: events/s ${(burstRate / baselineRate).toFixed(2)}, p99 ${(burst.p99 / baseline.p99).toFixed(2)}`,
  );
  console.log(
    `  delivered ${EVENTS - lost}/${EVENTS}, duplicates on the WebSocket ${receiver.duplicates}, stored ${storedTotal} ` +
      `(${WARMUP} warm-up + ${EVENTS}), ` +
      `without image ${withoutImage}, snapshot requests ${fake.listCameras().reduce((n, c) => n + fake.snapshotRequests(c.id), 0)}`,
  );
  const complete =
    lost === 0 && receiver.duplicates === 0 && storedTotal === EVENTS + WARMUP && withoutImage === 0;
  const pass = complete && burst.p99 < P99_TARGET_MS;
  console.log(
    `  target: all ${EVENTS} events exactly once with an image, p99 < ${P99_TARGET_MS} ms: ${pass ? 'PASS' : 'FAIL'}`,
  );
  if (!complete || baselineLost > 0) errors++;
  return errors;
}

runBenchmark('bench:protect', main);
