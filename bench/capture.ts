/**
 * Live capture benchmark (`npm run bench:capture`).
 *
 * 1. Starts the built service (dist/src/main.js) as a child process with its own temporary DATA_DIR, on a
 *    scratch database on DATABASE_URL's server or, when DATABASE_URL is unset, on an embedded PostgreSQL this
 *    benchmark starts; listens on /ws with the admin JWT for `event.created`.
 * 2. For each N of BENCH_CAPTURE_COUNTS (1, 4, 8): starts one fake RTSP camera server (test/fakes, GStreamer)
 *    with N mounts of 640x360 H.264 at 15 fps showing a still (black) picture, and creates N cameras through
 *    POST /api/v1/cameras (frame_rate 5, motion events, cooldown 0). Once all are `running` (at most 30 s)
 *    and after a 5 s warm-up, it measures a window of BENCH_CAPTURE_SECONDS (60):
 *    - CPU: utime + stime (/proc/<pid>/stat) of the service and of its children (the ffmpeg processes, found
 *      by scanning /proc for the service's pid as parent and checked against GET /system/capture), sampled at
 *      the start and the end of the window. A child that exits in the window is still counted exactly: its
 *      time moves into the service's cutime/cstime when it is reaped. Restarts (changed ffmpeg pids) are
 *      reported. Printed as CPU seconds per camera-minute and as % of one core per camera.
 *      Target: at most 10 % of one core per camera.
 *    - Frames: the deltas of frames_analysed and frames_dropped of GET /system/capture against the expected
 *      5 fps x window x N. Target: nothing dropped (and at most one frame per camera missing, the window edges)
 *      for every N up to 8.
 *    - Motion to event: every camera goes still -> motion for 3 s, every 7 s, staggered across the cameras.
 *      The delay is from just before the pattern switch is sent to the fake camera to the first
 *      `event.created` (detection_type motion) of that camera received on the WebSocket. Target: p99 under 2 s,
 *      every switch has its event, and no event comes without a switch (cooldown 0: one event per episode).
 * 3. The baseline, in the same run: N bare ffmpeg processes with the service's own arguments (captureArgs:
 *    decode, scale to 320x180 gray at 5 fps on pipe:1 and colour JPEGs on pipe:3), both pipes drained and
 *    discarded by this process, on the same fake cameras with the same motion schedule, for the same window.
 *    Service CPU / baseline CPU is the cost of the Node side (frame handling, motion detection, events).
 *
 * The fake cameras' own CPU (GStreamer encoding: the camera, not us) is not counted but printed for context,
 * as is how busy the whole machine was: on a 2-core machine the encoders compete with capture for the CPU.
 * PostgreSQL's work for the motion events is not counted either (another process).
 *
 * Exits non-zero on errors (a child that does not start, cameras not running within 30 s, an unexpected
 * response, a baseline ffmpeg that exits, a process left running after clean-up); a missed target is printed
 * as FAIL. Tunables: BENCH_CAPTURE_SECONDS (60, at least 10), BENCH_CAPTURE_COUNTS ("1,4,8"); the default run
 * takes about 7 minutes (two windows per N plus warm-ups). A quick trial run (under 2 minutes):
 * `BENCH_CAPTURE_SECONDS=15 BENCH_CAPTURE_COUNTS=1,2 npm run bench:capture`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import WebSocket from 'ws';
import { type CaptureStats, IO_TIMEOUT_MS } from '../src/modules/cameras/capture/camera-runner';
import {
  ANALYSIS_FRAME_BYTES,
  CAPTURE_STDIO,
  captureArgs,
  FFMPEG_BINARY,
} from '../src/modules/cameras/capture/ffmpeg';
import { FakeRtspCamera } from '../test/fakes/rtsp-camera';
import {
  call,
  childProcesses,
  clockTicksPerSecond,
  expectStatus,
  type Instance,
  intFromEnv,
  login,
  onCleanup,
  percentile,
  benchDatabase,
  processStat,
  type ProcessStat,
  runBenchmark,
  sleep,
  startInstance,
  closeWebSocket,
  connectWebSocket,
} from './support';

const SECONDS = intFromEnv('BENCH_CAPTURE_SECONDS', 60);
const COUNTS = countsFromEnv('BENCH_CAPTURE_COUNTS', [1, 4, 8]);
const CAMERA = { width: 640, height: 360, fps: 15 };
const ANALYSIS_FPS = 5;
const CPU_TARGET_PERCENT = 10;
const DELAY_P99_TARGET_MS = 2000;
/** The issue's target is "none dropped at 8 cameras"; it applies to every smaller N too. */
const DROP_TARGET_UP_TO = 8;
const RUNNING_TIMEOUT_MS = 30_000;
const FIRST_FRAME_TIMEOUT_MS = 30_000;
/** After `running`: ffmpeg's stream probing and the detector's 1 s warm-up stay out of the window. */
const WARMUP_MS = 5_000;
const TOGGLE_PERIOD_MS = 7_000;
/** Motion lasts 3 s; the 4 s of stillness after it exceed the detector's 2 s episode end. */
const MOTION_MS = 3_000;
/** How long after the window late events may still arrive. */
const EVENT_GRACE_MS = 5_000;
const EXIT_TIMEOUT_MS = 15_000;

function countsFromEnv(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const counts = raw.split(',').map((part) => Number(part.trim()));
  if (counts.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`${name} must be a comma-separated list of positive integers`);
  return counts;
}

// Every camera's first switch (staggered by up to one period) must fit in the window with its 3 s of motion.
if (SECONDS < TOGGLE_PERIOD_MS / 1000 + MOTION_MS / 1000)
  throw new Error(`BENCH_CAPTURE_SECONDS must be at least ${(TOGGLE_PERIOD_MS + MOTION_MS) / 1000}`);

const untilTime = (at: number) => sleep(Math.max(0, at - performance.now()));

// ---------------------------------------------------------------------------------------------------------
// Processes this benchmark caused: checked after clean-up, so nothing outlives the run.

const startedProcesses = new Map<number, string>();

function track(pid: number | null | undefined): void {
  if (!pid || startedProcesses.has(pid)) return;
  const stat = processStat(pid);
  if (stat) startedProcesses.set(pid, stat.comm);
}

/** Kills (and reports) any tracked process that is still there after clean-up. */
async function checkNothingLeft(): Promise<void> {
  const left: string[] = [];
  for (const [pid, comm] of startedProcesses) {
    const stat = processStat(pid);
    if (!stat || stat.comm !== comm || stat.state === 'Z') continue; // gone (or the pid was reused)
    process.kill(pid, 'SIGKILL');
    left.push(`${comm} ${pid}`);
  }
  if (left.length > 0) throw new Error(`left running after clean-up (killed now): ${left.join(', ')}`);
}

// ---------------------------------------------------------------------------------------------------------
// CPU accounting

/** CPU figures of a process and its children at one moment, in clock ticks. */
interface TreeSample {
  self: number;
  reaped: number;
  children: ProcessStat[];
}

function sampleTree(pid: number): TreeSample {
  const stat = processStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return { self: stat.cpu, reaped: stat.reapedChildrenCpu, children: childProcesses(pid) };
}

/**
 * Seconds of CPU between two samples: the process's own, and its children's (those alive at the end, plus
 * those reaped in between, whose whole lifetime moved into cutime/cstime, minus what all had at the start).
 */
function treeCpu(start: TreeSample, end: TreeSample): { own: number; children: number } {
  const tick = clockTicksPerSecond();
  const sum = (list: ProcessStat[]) => list.reduce((total, child) => total + child.cpu, 0);
  return {
    own: (end.self - start.self) / tick,
    children: (end.reaped - start.reaped + sum(end.children) - sum(start.children)) / tick,
  };
}

/** User + system ticks of the listed processes; throws when one is gone. */
function cpuOf(pids: number[]): number {
  return pids.reduce((total, pid) => {
    const stat = processStat(pid);
    if (!stat || stat.state === 'Z') throw new Error(`process ${pid} exited during the measurement`);
    return total + stat.cpu;
  }, 0);
}

/** Busy and total ticks of the whole machine (/proc/stat). */
function machineCpu(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

function busyPercent(start: { busy: number; total: number }, end: { busy: number; total: number }): number {
  return ((end.busy - start.busy) / Math.max(1, end.total - start.total)) * 100;
}

// ---------------------------------------------------------------------------------------------------------
// Motion schedule and events

interface Switch {
  cameraId: string;
  /** performance.now() just before the switch to motion was sent. */
  at: number;
  /** Date.now() at the same moment (compared with the event's timestamp). */
  wallAt: number;
  /** How long the fake camera took to confirm the switch. */
  commandMs: number;
}

interface ReceivedEvent {
  cameraId: string;
  at: number;
  /** The event's timestamp (when the service saw the frame), ms since the epoch. */
  timestamp: number;
}

/**
 * Switches each mount still -> motion -> still (MOTION_MS of motion every TOGGLE_PERIOD_MS), staggered evenly
 * across the mounts, as long as the motion ends within the window. Resolves when the schedule is done.
 */
async function runMotionSchedule(
  fake: FakeRtspCamera,
  cameras: { mount: string; id: string }[],
  start: number,
  windowMs: number,
): Promise<Switch[]> {
  const switches: Switch[] = [];
  await Promise.all(
    cameras.map(async ({ mount, id }, index) => {
      const stagger = (index * TOGGLE_PERIOD_MS) / cameras.length;
      for (let at = start + stagger; at + MOTION_MS <= start + windowMs; at += TOGGLE_PERIOD_MS) {
        await untilTime(at);
        const sent = performance.now();
        const wallAt = Date.now();
        await fake.setPattern('motion', mount);
        switches.push({ cameraId: id, at: sent, wallAt, commandMs: performance.now() - sent });
        await untilTime(at + MOTION_MS);
        await fake.setPattern('still', mount);
      }
    }),
  );
  return switches;
}

class EventListener {
  readonly received: ReceivedEvent[] = [];
  closed = false;
  malformed = 0;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => this.onMessage(data));
    ws.on('close', () => (this.closed = true));
    ws.on('error', () => (this.closed = true)); // 'close' follows
  }

  static async connect(url: string): Promise<EventListener> {
    return new EventListener(await connectWebSocket(url));
  }

  private onMessage(data: Buffer): void {
    const at = performance.now();
    let parsed: { type?: string; data?: { camera_id?: string; detection_type?: string; timestamp?: string } };
    try {
      parsed = JSON.parse(data.toString('utf8')) as typeof parsed;
    } catch {
      this.malformed++;
      return;
    }
    if (parsed.type !== 'event.created' || parsed.data?.detection_type !== 'motion') return;
    this.received.push({
      cameraId: String(parsed.data.camera_id),
      at,
      timestamp: Date.parse(String(parsed.data.timestamp)),
    });
  }

  close(): Promise<void> {
    return closeWebSocket(this.ws);
  }
}

interface MotionResult {
  switches: number;
  delays: number[];
  detectionDelays: number[];
  commandMs: number[];
  missed: number;
  /** Events before any switch of their camera, or a second event after the same switch. */
  unexpected: number;
}

/** Each switch takes the first event of its camera after it (and before that camera's next switch). */
function matchEvents(switches: Switch[], events: ReceivedEvent[], cameraIds: string[]): MotionResult {
  const result: MotionResult = {
    switches: switches.length,
    delays: [],
    detectionDelays: [],
    commandMs: switches.map((s) => s.commandMs),
    missed: 0,
    unexpected: 0,
  };
  for (const id of cameraIds) {
    const own = switches.filter((s) => s.cameraId === id).sort((a, b) => a.at - b.at);
    const matched = new Set<Switch>();
    for (const event of events.filter((e) => e.cameraId === id)) {
      const latest = own.filter((s) => s.at <= event.at).at(-1);
      if (!latest || matched.has(latest)) {
        result.unexpected++;
        continue;
      }
      matched.add(latest);
      result.delays.push(event.at - latest.at);
      result.detectionDelays.push(event.timestamp - latest.wallAt);
    }
    result.missed += own.length - matched.size;
  }
  for (const list of [result.delays, result.detectionDelays, result.commandMs]) list.sort((a, b) => a - b);
  return result;
}

// ---------------------------------------------------------------------------------------------------------
// The service

interface ServiceResult {
  seconds: number;
  nodeCpu: number;
  ffmpegCpu: number;
  fakeCpu: number;
  machineBusy: number;
  framesAnalysed: number;
  framesExpected: number;
  framesDropped: number;
  restarts: number;
  pidsStable: boolean;
  otherChildren: string[];
  motion: MotionResult;
}

async function captureStats(service: Instance, token: string): Promise<CaptureStats[]> {
  const res = await call(service, 'GET', '/system/capture', { token });
  expectStatus('GET /system/capture', res, 200);
  return (res.body as { cameras: CaptureStats[] }).cameras;
}

async function createCameras(
  service: Instance,
  token: string,
  fake: FakeRtspCamera,
  mounts: string[],
): Promise<{ mount: string; id: string }[]> {
  const cameras: { mount: string; id: string }[] = [];
  for (const mount of mounts) {
    const res = await call(service, 'POST', '/cameras', {
      token,
      body: {
        name: `bench-capture-${mounts.length}${mount.replace('/', '-')}`,
        source_type: 'rtsp',
        url: fake.url(mount),
        frame_rate: ANALYSIS_FPS,
        enabled: true,
        motion_cooldown_seconds: 0,
        detection_types: ['motion'],
      },
    });
    expectStatus('create camera', res, 201);
    cameras.push({ mount, id: String((res.body as { id: string }).id) });
  }
  return cameras;
}

async function waitForRunning(service: Instance, token: string, ids: string[]): Promise<CaptureStats[]> {
  const deadline = Date.now() + RUNNING_TIMEOUT_MS;
  for (;;) {
    const stats = (await captureStats(service, token)).filter((s) => ids.includes(s.camera_id));
    if (stats.length === ids.length && stats.every((s) => s.status === 'running' && s.pid)) return stats;
    if (Date.now() > deadline) {
      const lines = await Promise.all(
        ids.map(async (id) => {
          const res = await call(service, 'GET', `/cameras/${id}`, { token });
          const camera = res.body as { name?: string; status?: string; status_message?: string | null };
          return `${camera.name}: ${camera.status} (${camera.status_message ?? 'no message'})`;
        }),
      );
      throw new Error(
        `cameras not all running within ${RUNNING_TIMEOUT_MS / 1000} s:\n  ${lines.join('\n  ')}`,
      );
    }
    await sleep(250);
  }
}

async function measureService(
  service: Instance,
  token: string,
  listener: EventListener,
  fake: FakeRtspCamera,
  mounts: string[],
): Promise<ServiceResult> {
  const servicePid = service.child.pid!;
  const cameras = await createCameras(service, token, fake, mounts);
  const ids = cameras.map((c) => c.id);
  const runningAt = performance.now();
  const running = await waitForRunning(service, token, ids);
  for (const stats of running) track(stats.pid);
  console.log(
    `  ${ids.length} camera${ids.length === 1 ? '' : 's'} running after ${((performance.now() - runningAt) / 1000).toFixed(1)} s`,
  );
  await sleep(WARMUP_MS);

  const stats0 = (await captureStats(service, token)).filter((s) => ids.includes(s.camera_id));
  const statsAt0 = performance.now();
  const tree0 = sampleTree(servicePid);
  const fake0 = cpuOf([fake.pid!]);
  const machine0 = machineCpu();
  const start = performance.now();
  const windowMs = SECONDS * 1000;

  const switches = await runMotionSchedule(fake, cameras, start, windowMs);
  await untilTime(start + windowMs);
  const tree1 = sampleTree(servicePid);
  const fake1 = cpuOf([fake.pid!]);
  const machine1 = machineCpu();
  const end = performance.now();
  const stats1 = (await captureStats(service, token)).filter((s) => ids.includes(s.camera_id));
  const statsAt1 = performance.now();
  for (const child of tree1.children) track(child.pid);

  // Late events of the last switches.
  const lastSwitch = Math.max(...switches.map((s) => s.at));
  await untilTime(lastSwitch + EVENT_GRACE_MS);
  const events = listener.received.filter((e) => ids.includes(e.cameraId));
  const motion = matchEvents(switches, events, ids);

  const cpu = treeCpu(tree0, tree1);
  const byId = (list: CaptureStats[]) => new Map(list.map((s) => [s.camera_id, s]));
  const before = byId(stats0);
  const after = byId(stats1);
  let framesAnalysed = 0;
  let framesDropped = 0;
  let restarts = 0;
  let pidsStable = true;
  for (const id of ids) {
    const a = before.get(id);
    const b = after.get(id);
    if (!a || !b) throw new Error(`camera ${id} missing from GET /system/capture`);
    framesAnalysed += b.frames_analysed - a.frames_analysed;
    framesDropped += b.frames_dropped - a.frames_dropped;
    restarts += b.restarts - a.restarts;
    if (a.pid !== b.pid || b.status !== 'running') pidsStable = false;
  }
  const capturePids = new Set([...stats0, ...stats1].map((s) => s.pid));
  const otherChildren = [...tree0.children, ...tree1.children]
    .filter((child) => !capturePids.has(child.pid))
    .map((child) => `${child.comm} ${child.pid}`);
  const childPids = new Set(tree0.children.map((c) => c.pid));
  const missing = stats0.filter((s) => s.pid && !childPids.has(s.pid)).map((s) => s.pid);
  if (missing.length > 0)
    throw new Error(
      `ffmpeg pids of GET /system/capture are not children of the service: ${missing.join(', ')}`,
    );

  await deleteCameras(service, token, ids, servicePid);
  return {
    seconds: (end - start) / 1000,
    nodeCpu: cpu.own,
    ffmpegCpu: cpu.children,
    fakeCpu: (fake1 - fake0) / clockTicksPerSecond(),
    machineBusy: busyPercent(machine0, machine1),
    framesAnalysed,
    framesExpected: Math.round(((statsAt1 - statsAt0) / 1000) * ANALYSIS_FPS * ids.length),
    framesDropped,
    restarts,
    pidsStable,
    otherChildren: [...new Set(otherChildren)],
    motion,
  };
}

/** Deletes the cameras and waits until the service has no ffmpeg child left. */
async function deleteCameras(
  service: Instance,
  token: string,
  ids: string[],
  servicePid: number,
): Promise<void> {
  for (const id of ids)
    expectStatus('delete camera', await call(service, 'DELETE', `/cameras/${id}`, { token }), 204);
  const deadline = Date.now() + EXIT_TIMEOUT_MS;
  for (;;) {
    const left = childProcesses(servicePid).filter((c) => c.comm === 'ffmpeg' && c.state !== 'Z');
    if (left.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `ffmpeg still running ${EXIT_TIMEOUT_MS / 1000} s after deleting the cameras: ${left.map((c) => c.pid).join(', ')}`,
      );
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The baseline: bare ffmpeg with the service's arguments

interface BaselineProcess {
  url: string;
  child: ChildProcess;
  frameBytes: number;
  stderr: string;
  exited: Promise<void>;
  /** How it ended (exit code or signal, and when), once it has. */
  exit: string | null;
}

function startBaselineProcess(url: string): BaselineProcess {
  const args = captureArgs(
    { sourceType: 'rtsp', url, device: null, username: null, password: null },
    ANALYSIS_FPS,
    { ioTimeoutMs: IO_TIMEOUT_MS },
  );
  const child = spawn(FFMPEG_BINARY, args, { stdio: CAPTURE_STDIO });
  const proc: BaselineProcess = {
    url,
    child,
    frameBytes: 0,
    stderr: '',
    exited: new Promise((resolve) => child.once('close', () => resolve())),
    exit: null,
  };
  child.once('exit', (code, signal) => {
    proc.exit = `${signal ?? `code ${code}`} at ${new Date().toISOString()}`;
  });
  child.on('error', (error) => (proc.stderr += `\n${error.message}`)); // spawn failed: 'close' follows
  child.stdout!.on('data', (chunk: Buffer) => (proc.frameBytes += chunk.length));
  (child.stdio[3] as Readable).resume();
  child.stderr!.on(
    'data',
    (chunk: Buffer) => (proc.stderr = (proc.stderr + chunk.toString('utf8')).slice(-2000)),
  );
  track(child.pid);
  onCleanup(`stop baseline ffmpeg ${child.pid}`, () => stopChild(proc));
  return proc;
}

function describe(proc: BaselineProcess): string {
  return `${proc.child.pid} (${proc.url}) exited (${proc.exit}): ${proc.stderr.trim() || 'no stderr'}`;
}

async function stopChild(proc: BaselineProcess): Promise<void> {
  const { child } = proc;
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await proc.exited;
    clearTimeout(timer);
  }
  await proc.exited;
}

interface BaselineResult {
  seconds: number;
  cpu: number;
  fakeCpu: number;
  machineBusy: number;
  frames: number;
}

async function measureBaseline(fake: FakeRtspCamera, mounts: string[]): Promise<BaselineResult> {
  const procs = mounts.map((mount) => startBaselineProcess(fake.url(mount)));
  try {
    const deadline = Date.now() + FIRST_FRAME_TIMEOUT_MS;
    while (procs.some((p) => p.frameBytes < ANALYSIS_FRAME_BYTES)) {
      const dead = procs.find((p) => p.exit);
      if (dead) throw new Error(`baseline ffmpeg ${describe(dead)} before its first frame`);
      if (Date.now() > deadline)
        throw new Error(`baseline ffmpeg delivered no frame within ${FIRST_FRAME_TIMEOUT_MS / 1000} s`);
      await sleep(100);
    }
    await sleep(WARMUP_MS);
    const pids = procs.map((p) => p.child.pid!);
    const frames0 = procs.reduce((total, p) => total + p.frameBytes, 0);
    const cpu0 = cpuOf(pids);
    const fake0 = cpuOf([fake.pid!]);
    const machine0 = machineCpu();
    const start = performance.now();
    const windowStart = new Date().toISOString();
    const windowMs = SECONDS * 1000;
    await runMotionSchedule(
      fake,
      mounts.map((mount) => ({ mount, id: mount })),
      start,
      windowMs,
    );
    await untilTime(start + windowMs);
    const dead = procs.find((p) => p.exit);
    if (dead) throw new Error(`baseline ffmpeg ${describe(dead)} in the window (started ${windowStart})`);
    const cpu1 = cpuOf(pids);
    const fake1 = cpuOf([fake.pid!]);
    const machine1 = machineCpu();
    const end = performance.now();
    const frames1 = procs.reduce((total, p) => total + p.frameBytes, 0);
    const tick = clockTicksPerSecond();
    return {
      seconds: (end - start) / 1000,
      cpu: (cpu1 - cpu0) / tick,
      fakeCpu: (fake1 - fake0) / tick,
      machineBusy: busyPercent(machine0, machine1),
      frames: Math.round((frames1 - frames0) / ANALYSIS_FRAME_BYTES),
    };
  } finally {
    await Promise.all(procs.map((p) => stopChild(p)));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Reporting

type Row = [metric: string, value: string, target: string, result: string];

const ms = (value: number) => (Number.isFinite(value) ? `${Math.round(value)} ms` : 'n/a');
const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

/** CPU seconds of the service and its ffmpeg children, and the same as % of one core per camera. */
function serviceCpu(
  n: number,
  service: ServiceResult,
): { total: number; perCameraMinute: number; corePercent: number } {
  const total = service.nodeCpu + service.ffmpegCpu;
  return {
    total,
    perCameraMinute: total / (n * (service.seconds / 60)),
    corePercent: (total / (n * service.seconds)) * 100,
  };
}

/** Printed as soon as the service's window is done, so a failing baseline cannot hide it. */
function printService(n: number, service: ServiceResult): void {
  const cpu = serviceCpu(n, service);
  const { motion } = service;
  console.log(
    `  service: ${cpu.total.toFixed(2)} CPU-s in ${service.seconds.toFixed(1)} s (Node ${service.nodeCpu.toFixed(2)} s, ` +
      `ffmpeg ${service.ffmpegCpu.toFixed(2)} s) = ${cpu.perCameraMinute.toFixed(2)} CPU-s per camera-minute = ` +
      `${cpu.corePercent.toFixed(1)} % of one core per camera`,
  );
  console.log(
    `  ffmpeg pids ${service.pidsStable ? 'stable' : 'CHANGED (restart)'} over the window; restarts ${service.restarts}; ` +
      `other children of the service: ${service.otherChildren.length ? service.otherChildren.join(', ') : 'none'}`,
  );
  console.log(
    `  frames: analysed ${service.framesAnalysed} of ${service.framesExpected} expected ` +
      `(${ANALYSIS_FPS} fps x window x ${n}), dropped ${service.framesDropped}`,
  );
  console.log(
    `  motion -> event.created: ${motion.switches} switches, ${motion.delays.length} matched; ` +
      `p50 ${ms(percentile(motion.delays, 0.5))}, p99 ${ms(percentile(motion.delays, 0.99))}, ` +
      `max ${ms(motion.delays.at(-1) ?? NaN)}; detection (event timestamp - switch) p50 ` +
      `${ms(percentile(motion.detectionDelays, 0.5))}, p99 ${ms(percentile(motion.detectionDelays, 0.99))}; ` +
      `switch command p50 ${ms(percentile(motion.commandMs, 0.5))}`,
  );
  console.log(`  switches without an event ${motion.missed}; events without a switch ${motion.unexpected}`);
  console.log(
    `  fake cameras (GStreamer encoding, not counted): ` +
      `${((service.fakeCpu / (n * service.seconds)) * 100).toFixed(1)} % of one core per camera; ` +
      `machine ${service.machineBusy.toFixed(0)} % busy`,
  );
}

/** Prints the baseline and returns the summary rows of this N. */
function report(n: number, service: ServiceResult, baseline: BaselineResult): Row[] {
  const cpu = serviceCpu(n, service);
  const baselinePercent = (baseline.cpu / (n * baseline.seconds)) * 100;
  const ratio = cpu.total / service.seconds / Math.max(1e-9, baseline.cpu / baseline.seconds);
  const missingFrames = service.framesExpected - service.framesAnalysed;
  const { motion } = service;
  const p50 = percentile(motion.delays, 0.5);
  const p99 = percentile(motion.delays, 0.99);

  console.log(
    `  baseline (${n} bare ffmpeg, same arguments): ${baseline.cpu.toFixed(2)} CPU-s in ` +
      `${baseline.seconds.toFixed(1)} s = ${baselinePercent.toFixed(1)} % of one core per camera; ` +
      `${baseline.frames} frames`,
  );
  console.log(
    `  fake cameras: ${((baseline.fakeCpu / (n * baseline.seconds)) * 100).toFixed(1)} % of one core per camera; ` +
      `machine ${baseline.machineBusy.toFixed(0)} % busy`,
  );
  console.log(`  service / baseline CPU: ${ratio.toFixed(2)}`);

  const rows: Row[] = [
    [
      `N=${n} CPU per camera`,
      `${cpu.corePercent.toFixed(1)} % (${cpu.perCameraMinute.toFixed(2)} s/min)`,
      `≤ ${CPU_TARGET_PERCENT} %`,
      verdict(cpu.corePercent <= CPU_TARGET_PERCENT),
    ],
    [`N=${n} service/baseline CPU`, `${ratio.toFixed(2)} (base ${baselinePercent.toFixed(1)} %)`, '', ''],
  ];
  const framesValue = `${service.framesDropped}; analysed ${service.framesAnalysed}/${service.framesExpected}`;
  rows.push(
    n <= DROP_TARGET_UP_TO
      ? [
          `N=${n} frames dropped/missing`,
          framesValue,
          '0',
          verdict(service.framesDropped === 0 && missingFrames <= n),
        ]
      : [`N=${n} frames dropped/missing`, framesValue, '', ''],
  );
  rows.push(
    [
      `N=${n} motion->event p50/p99`,
      `${ms(p50)} / ${ms(p99)}`,
      `p99 < ${DELAY_P99_TARGET_MS} ms`,
      verdict(p99 < DELAY_P99_TARGET_MS),
    ],
    [
      `N=${n} switches without event`,
      `${motion.missed} of ${motion.switches}`,
      '0',
      verdict(motion.missed === 0),
    ],
    [`N=${n} events without switch`, `${motion.unexpected}`, '0', verdict(motion.unexpected === 0)],
    [
      `N=${n} restarts in window`,
      `${service.restarts}`,
      '0',
      verdict(service.restarts === 0 && service.pidsStable),
    ],
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  onCleanup('check that no process is left', checkNothingLeft);
  const workDir = mkdtempSync(join(tmpdir(), 'vigil-bench-capture-'));
  chmodSync(workDir, 0o755); // as root, the embedded PostgreSQL runs as "postgres" and must reach it
  onCleanup(`remove ${workDir}`, async () => rmSync(workDir, { recursive: true, force: true }));

  const { url: databaseUrl, description } = await benchDatabase(workDir);
  console.log(
    `Vigil capture benchmark: ${description}; N = ${COUNTS.join(', ')} cameras of ${CAMERA.width}x${CAMERA.height} ` +
      `H.264 at ${CAMERA.fps} fps, analysed at ${ANALYSIS_FPS} fps, ${SECONDS} s windows; ` +
      `CLK_TCK ${clockTicksPerSecond()}`,
  );

  const service = await startInstance('vigil', join(workDir, 'data'), { DATABASE_URL: databaseUrl });
  console.log(`Service up at ${service.baseUrl} (pid ${service.child.pid})`);
  const token = await login(service);
  const listener = await EventListener.connect(`${service.baseUrl.replace(/^http/, 'ws')}/ws?token=${token}`);
  onCleanup('close the WebSocket', () => listener.close());

  const rows: Row[] = [];
  for (const n of COUNTS) {
    console.log(`\nN = ${n}`);
    const mounts = Array.from({ length: n }, (_, i) => `/c${i + 1}`);
    const fake = await FakeRtspCamera.start({ mounts, ...CAMERA, pattern: 'still' });
    track(fake.pid);
    onCleanup(`stop the fake cameras (N=${n})`, () => fake.stop());
    const serviceResult = await measureService(service, token, listener, fake, mounts);
    printService(n, serviceResult);
    const baselineResult = await measureBaseline(fake, mounts);
    await fake.stop();
    rows.push(...report(n, serviceResult, baselineResult));
  }
  if (listener.closed) throw new Error('the WebSocket closed during the run');
  if (listener.malformed > 0) throw new Error(`${listener.malformed} WebSocket messages were not JSON`);

  const widths = [32, 28, 16, 6];
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  console.log(`\nSummary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  console.log(line(['metric', 'value', 'target', 'result']));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
  const failed = rows.filter((row) => row[3] === 'FAIL');
  const targets = rows.filter((row) => row[3] !== '').length;
  console.log(`\n${targets - failed.length}/${targets} targets met`);
  if (failed.length > 0) console.log(`MISSED TARGETS: ${failed.map((row) => row[0]).join('; ')}`);
  return 0;
}

runBenchmark('bench:capture', main);
