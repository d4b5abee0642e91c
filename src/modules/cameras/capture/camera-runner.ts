import { ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { CameraStatus } from '../entities/camera.entity';
import { backoffDelay } from './backoff';
import {
  ANALYSIS_HEIGHT,
  ANALYSIS_WIDTH,
  captureArgs,
  classifyFailure,
  FailureKind,
  FFMPEG_BINARY,
  JpegFrameSplitter,
  redactSecrets,
  sourceAddress,
  StreamSource,
} from './ffmpeg';
import { MotionDetector, MotionEvent, MotionSettings } from './motion-detector';

/** No analysis frame for this long (also right after start) counts as a dead stream: ffmpeg is killed and restarted. */
export const STALL_TIMEOUT_MS = 10_000;
/** Socket I/O timeout handed to ffmpeg, so a silent peer ends the process before our stall watchdog has to. */
export const IO_TIMEOUT_MS = 5_000;
/** After this many failed attempts in a row a camera is `offline` rather than `reconnecting` (it keeps retrying). */
export const OFFLINE_AFTER_FAILURES = 5;
/** A stream that ran this long before it failed starts its backoff from 1 s again. */
export const STABLE_RUN_MS = 60_000;
/** SIGTERM first (ffmpeg closes its inputs cleanly); SIGKILL if it has not exited after this long. */
export const KILL_GRACE_MS = 3_000;
/** The snapshot is the latest colour JPEG, if it is at most this old. */
export const SNAPSHOT_MAX_AGE_MS = 10_000;

/** Failures that retrying will not fix without a change on the camera or in its settings. */
const CONFIGURATION_FAILURES: ReadonlySet<FailureKind> = new Set([
  'auth_failed',
  'not_found',
  'not_video',
  'device_not_found',
  'host_not_found',
  'tls',
  'ffmpeg_missing',
]);

/** Everything a runner needs to know about its camera (the password already decrypted). */
export interface RunnerCamera {
  id: string;
  name: string;
  source: StreamSource;
  frameRate: number;
  motion: MotionSettings;
  /** Whether motion makes events (`motion` is among the camera's detection types). */
  motionEvents: boolean;
}

export interface RunnerCallbacks {
  status(status: CameraStatus, message: string | null): void;
  motion(event: MotionEvent, jpeg: Buffer | null, at: Date, sourceType: StreamSource['sourceType']): void;
  /** Called for every analysed frame (the owner throttles what it stores). */
  frame(at: Date): void;
  log(entry: Record<string, unknown>): void;
}

export interface CaptureStats {
  camera_id: string;
  camera_name: string;
  status: CameraStatus;
  pid: number | null;
  frame_rate: number;
  frames_received: number;
  frames_analysed: number;
  frames_dropped: number;
  restarts: number;
  motion_events: number;
  last_frame_at: string | null;
  running_since: string | null;
}

export type SpawnFunction = (command: string, args: string[]) => ChildProcess;

const spawnFfmpeg: SpawnFunction = (command, args) =>
  spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], windowsHide: true });

/**
 * One running camera: a supervised ffmpeg child that delivers grayscale analysis frames on stdout and colour
 * JPEGs on fd 3, a motion detector fed with those frames, and the status machine of decisions.md §4:
 *
 *   starting --first frame--> running --exit/stall--> reconnecting --(5 failures)--> offline
 *                                                 \-> error (authentication, 404, not video, no device: needs a change)
 *
 * Every failure is retried with exponential backoff (1 s doubling to 60 s, ±20 % jitter), also `error` (a camera
 * fixed on its side comes back by itself); the first frame after a retry makes the camera `running` again.
 * `stop()` ends the child (SIGTERM, then SIGKILL) and waits for it, so no process outlives the runner.
 */
export class CameraRunner {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private retryTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private stopped = false;
  private restartRequested = false;
  private stalled = false;

  private status: CameraStatus = 'stopped';
  private failures = 0;
  private detector: MotionDetector;
  private stderrTail = '';

  private readonly frameSize = ANALYSIS_WIDTH * ANALYSIS_HEIGHT;
  private readonly frame = Buffer.alloc(ANALYSIS_WIDTH * ANALYSIS_HEIGHT);
  private frameFill = 0;
  private jpegSplitter = new JpegFrameSplitter();
  private latestJpeg: Buffer | null = null;
  private latestJpegAt = 0;

  private spawnedAt = 0;
  private firstFrameAt = 0;
  private lastFrameAt = 0;
  private runningSince = 0;
  private framesThisRun = 0;
  private stats = { received: 0, analysed: 0, droppedEarlierRuns: 0, restarts: 0, motionEvents: 0 };

  constructor(
    private camera: RunnerCamera,
    private readonly callbacks: RunnerCallbacks,
    private readonly spawnProcess: SpawnFunction = spawnFfmpeg,
  ) {
    this.detector = new MotionDetector(ANALYSIS_WIDTH, ANALYSIS_HEIGHT, camera.motion);
  }

  get currentStatus(): CameraStatus {
    return this.status;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): void {
    this.stopped = false;
    this.setStatus('starting', null);
    this.launch();
  }

  /**
   * Applies new settings: a new source (URL, credentials, device, type) or frame rate restarts capture at once
   * (from `starting`, with a fresh backoff); everything else (name, motion settings) applies to the next frame.
   */
  update(camera: RunnerCamera): void {
    const restart = !sameSource(this.camera, camera);
    this.camera = camera;
    this.detector.configure(camera.motion);
    if (!restart || this.stopped) return;
    this.failures = 0;
    this.setStatus('starting', null);
    if (this.child) {
      this.restartRequested = true;
      this.terminate();
    } else {
      this.clearRetry();
      this.launch();
    }
  }

  /** Ends capture and resolves when the ffmpeg child has exited (and been reaped). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearRetry();
    this.terminate();
    await this.exited;
    this.stopWatchdog();
    this.latestJpeg = null;
  }

  /** The current colour JPEG, or null when the camera is not running (or its picture is stale). */
  snapshot(): Buffer | null {
    if (this.status !== 'running' || !this.latestJpeg) return null;
    return Date.now() - this.latestJpegAt <= SNAPSHOT_MAX_AGE_MS ? this.latestJpeg : null;
  }

  captureStats(): CaptureStats {
    return {
      camera_id: this.camera.id,
      camera_name: this.camera.name,
      status: this.status,
      pid: this.pid,
      frame_rate: this.camera.frameRate,
      frames_received: this.stats.received,
      frames_analysed: this.stats.analysed,
      frames_dropped: this.stats.droppedEarlierRuns + this.droppedThisRun(),
      restarts: this.stats.restarts,
      motion_events: this.stats.motionEvents,
      last_frame_at: this.lastFrameAt ? new Date(this.lastFrameAt).toISOString() : null,
      running_since: this.runningSince ? new Date(this.runningSince).toISOString() : null,
    };
  }

  private launch(): void {
    this.retryTimer = null;
    if (this.stopped) return;
    this.stalled = false;
    this.stderrTail = '';
    this.frameFill = 0;
    this.framesThisRun = 0;
    this.firstFrameAt = 0;
    this.jpegSplitter = new JpegFrameSplitter();
    this.detector.reset();
    this.spawnedAt = Date.now();

    let child: ChildProcess;
    try {
      child = this.spawnProcess(
        FFMPEG_BINARY,
        captureArgs(this.camera.source, this.camera.frameRate, { ioTimeoutMs: IO_TIMEOUT_MS }),
      );
    } catch (error) {
      this.stderrTail = (error as Error).message;
      this.exited = Promise.resolve();
      this.failed();
      return;
    }
    this.child = child;
    let resolveExit!: () => void;
    this.exited = new Promise((resolve) => (resolveExit = resolve));

    child.stdout?.on('data', (chunk: Buffer) => this.onAnalysisData(chunk));
    (child.stdio[3] as Readable | null | undefined)?.on('data', (chunk: Buffer) => this.onJpegData(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4096);
    });
    // 'error' alone (spawn failed: ffmpeg not installed) or 'close' (exited, all pipes drained); never both handled.
    let ended = false;
    const end = (spawnError?: Error) => {
      if (ended) return;
      ended = true;
      if (spawnError) this.stderrTail = `${spawnError.message}\n${this.stderrTail}`;
      this.child = null;
      resolveExit();
      this.onExit(spawnError);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || child.pid === undefined) end(error);
    });
    child.once('close', () => end());
    this.startWatchdog();
  }

  private onAnalysisData(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      const take = Math.min(this.frameSize - this.frameFill, chunk.length - offset);
      chunk.copy(this.frame, this.frameFill, offset, offset + take);
      this.frameFill += take;
      offset += take;
      if (this.frameFill === this.frameSize) {
        this.frameFill = 0;
        this.onFrame();
      }
    }
  }

  private onFrame(): void {
    const now = Date.now();
    if (this.stalled) return;
    // A frame after a gap of 10 s or more (ffmpeg flushing one buffered picture after its socket timeout) does
    // not revive a stalled stream: the watchdog checks once a second and could otherwise be reset by it.
    if (now - (this.lastFrameAt > this.spawnedAt ? this.lastFrameAt : this.spawnedAt) >= STALL_TIMEOUT_MS) {
      this.markStalled();
      return;
    }
    this.stats.received++;
    this.framesThisRun++;
    this.lastFrameAt = now;
    if (!this.firstFrameAt) this.firstFrameAt = now;
    if (this.status !== 'running') {
      this.runningSince = now;
      this.setStatus('running', null);
    }
    const observation = this.detector.analyse(this.frame, now);
    this.stats.analysed++;
    this.callbacks.frame(new Date(now));
    if (observation.event && this.camera.motionEvents) {
      this.stats.motionEvents++;
      this.callbacks.motion(observation.event, this.latestJpeg, new Date(now), this.camera.source.sourceType);
    }
  }

  private onJpegData(chunk: Buffer): void {
    const images = this.jpegSplitter.push(chunk);
    if (images.length === 0) return;
    this.latestJpeg = images[images.length - 1];
    this.latestJpegAt = Date.now();
  }

  private onExit(spawnError?: Error): void {
    this.stopWatchdog();
    this.stats.droppedEarlierRuns += this.droppedThisRun();
    this.firstFrameAt = 0;
    if (this.stopped) return;
    this.stats.restarts++;
    if (this.restartRequested) {
      this.restartRequested = false;
      this.launch();
      return;
    }
    if (spawnError && (spawnError as NodeJS.ErrnoException).code === 'ENOENT') this.stderrTail = 'ENOENT';
    this.failed();
  }

  private failed(): void {
    if (this.runningSince && this.status === 'running' && Date.now() - this.runningSince >= STABLE_RUN_MS)
      this.failures = 0;
    this.failures++;
    const failure = this.describeFailure();
    const delay = backoffDelay(this.failures);
    const status: CameraStatus = CONFIGURATION_FAILURES.has(failure.kind)
      ? 'error'
      : this.failures >= OFFLINE_AFTER_FAILURES
        ? 'offline'
        : 'reconnecting';
    this.setStatus(status, `${failure.message}; retrying in ${Math.max(1, Math.round(delay / 1000))} s`);
    this.callbacks.log({
      msg: 'Camera stream failed',
      camera_id: this.camera.id,
      kind: failure.kind,
      error: failure.message,
      attempt: this.failures,
      retry_in_ms: delay,
    });
    this.retryTimer = setTimeout(() => this.launch(), delay);
  }

  private describeFailure(): { kind: FailureKind; message: string } {
    if (this.stalled)
      return { kind: 'timeout', message: `No video for ${STALL_TIMEOUT_MS / 1000} s: the stream stalled` };
    if (this.stderrTail === 'ENOENT')
      return { kind: 'ffmpeg_missing', message: 'ffmpeg is not installed on the server' };
    const stderr = redactSecrets(this.stderrTail, this.camera.source);
    if (stderr.trim() === '') return { kind: 'unknown', message: 'The stream ended' };
    return classifyFailure(stderr, {
      host: sourceAddress(this.camera.source),
      timeoutMs: IO_TIMEOUT_MS,
      elapsedMs: Date.now() - this.spawnedAt,
      hasCredentials: this.camera.source.password !== null,
    });
  }

  /** Frames the analysis fell behind real time in this run (ffmpeg delivers `frame_rate` per second of stream). */
  private droppedThisRun(): number {
    if (!this.firstFrameAt || this.framesThisRun === 0) return 0;
    const expected = Math.floor(((this.lastFrameAt - this.firstFrameAt) / 1000) * this.camera.frameRate) + 1;
    return Math.max(0, expected - this.framesThisRun - 1);
  }

  private terminate(): void {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const force = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }, KILL_GRACE_MS);
    force.unref();
    void this.exited.then(() => clearTimeout(force));
  }

  private startWatchdog(): void {
    this.stopWatchdog();
    this.watchdog = setInterval(() => {
      const since = this.lastFrameAt > this.spawnedAt ? this.lastFrameAt : this.spawnedAt;
      if (!this.child || this.stalled || Date.now() - since < STALL_TIMEOUT_MS) return;
      this.markStalled();
    }, 1_000);
    this.watchdog.unref();
  }

  private markStalled(): void {
    this.stalled = true;
    this.child?.kill('SIGKILL'); // a stalled ffmpeg may sit in a blocking read; do not wait for it
  }

  private stopWatchdog(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  private clearRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private setStatus(status: CameraStatus, message: string | null): void {
    if (status !== 'running') this.runningSince = 0;
    this.status = status;
    this.callbacks.status(status, message);
  }
}

function sameSource(a: RunnerCamera, b: RunnerCamera): boolean {
  return (
    a.frameRate === b.frameRate &&
    a.source.sourceType === b.source.sourceType &&
    a.source.url === b.source.url &&
    a.source.device === b.source.device &&
    a.source.username === b.source.username &&
    a.source.password === b.source.password
  );
}
