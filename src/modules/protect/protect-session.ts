import type { ProtectApi, ProtectCameraConfig, ProtectEventPacket, ProtectNvrBootstrap } from 'unifi-protect';
import { backoffDelay } from '../cameras/capture/backoff';
import type { ControllerStatus } from './entities/protect-controller.entity';
import {
  consoleAddress,
  createProtectApi,
  disposeProtectApi,
  ProtectLog,
  type ProtectLogLine,
  realtimeOpen,
} from './protect-api';
import { applyCameraPacket } from './protect-packets';
import { type ControllerConnection, loginFailure, tlsFailure } from './protect-test';

/** A console's realtime stream that sends nothing for this long is taken for dead and reconnected. */
export const DEFAULT_SILENCE_TIMEOUT_MS = 120_000;
/** A snapshot that takes longer is left out of the event (the event is recorded without an image). */
export const SNAPSHOT_TIMEOUT_MS = 5_000;
/**
 * Detections that start on one camera within this long of a snapshot request share its image: the console
 * answers with its current frame either way, and a burst must not send it one request per detection.
 */
export const SNAPSHOT_SHARE_MS = 1_000;

export interface SessionListener {
  status(status: ControllerStatus, message: string | null): void;
  /** A (re)connection: the fresh bootstrap, before any packet that follows it. */
  connected(bootstrap: ProtectNvrBootstrap): void;
  packet(packet: ProtectEventPacket): void;
  log(line: ProtectLogLine): void;
}

class ConnectFailure extends Error {}

/**
 * One console connection through the unifi-protect library: login, bootstrap, the realtime update stream,
 * and what the library (4.28.0) does not do itself: a watchdog that reconnects when the stream drops or goes
 * silent, with backoff (1 s doubling to 60 s), and a fresh bootstrap on every reconnect.
 */
export class ProtectSession {
  private readonly log: ProtectLog;
  private api: ProtectApi | null = null;
  private loggedIn = false;
  private connected = false;
  private stopped = false;
  private failures = 0;
  private lastMessageAt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private attempt: Promise<void> | null = null;
  /** The latest snapshot request per camera (shared by detections starting within SNAPSHOT_SHARE_MS). */
  private readonly snapshots = new Map<string, { at: number; image: Promise<Buffer | null> }>();

  constructor(
    private readonly target: ControllerConnection,
    private readonly listener: SessionListener,
    private readonly silenceMs: number = DEFAULT_SILENCE_TIMEOUT_MS,
  ) {
    this.log = new ProtectLog((line) => listener.log(line));
  }

  /** Starts connecting; resolves when the first attempt has succeeded or failed (it is retried then). */
  start(): Promise<void> {
    this.attempt = this.connect(null);
    const checkMs = Math.max(50, Math.min(5_000, Math.floor(this.silenceMs / 4)));
    this.watchdog = setInterval(() => this.check(), checkMs);
    this.watchdog.unref();
    return this.attempt;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const api = this.api;
    this.api = null;
    if (api) disposeProtectApi(api);
    await this.attempt?.catch(() => undefined);
  }

  /** The console's cameras as its last bootstrap described them (null before the first). */
  cameras(): ProtectCameraConfig[] | null {
    return this.api?.bootstrap?.cameras ?? null;
  }

  /** The camera as the console last described it (bootstrap), or null. */
  camera(protectCameraId: string): ProtectCameraConfig | null {
    return this.api?.bootstrap?.cameras.find((c) => c.id === protectCameraId) ?? null;
  }

  /**
   * The console's current snapshot of a camera; null when it has none or takes too long. Requests within
   * SNAPSHOT_SHARE_MS of the camera's last one share its answer.
   */
  snapshot(protectCameraId: string): Promise<Buffer | null> {
    const now = Date.now();
    const recent = this.snapshots.get(protectCameraId);
    if (recent && now - recent.at < SNAPSHOT_SHARE_MS) return recent.image;
    const image = this.fetchSnapshot(protectCameraId);
    this.snapshots.set(protectCameraId, { at: now, image });
    return image;
  }

  private async fetchSnapshot(protectCameraId: string): Promise<Buffer | null> {
    const api = this.api;
    const camera = this.camera(protectCameraId);
    if (!api || !camera) return null;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>(
      (resolve) => (timer = setTimeout(() => resolve(null), SNAPSHOT_TIMEOUT_MS)),
    );
    try {
      return await Promise.race([api.getSnapshot(camera), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async connect(reason: string | null): Promise<void> {
    if (this.stopped) return;
    this.connected = false;
    this.listener.status('connecting', reason);
    const mark = this.log.lines.length;
    try {
      const api = await this.client();
      if (!this.loggedIn) {
        // The TLS handshake first: an unreachable or silent host, or an untrusted certificate, fails within
        // seconds and with a precise reason (the library's own login takes up to ~21 s to give up).
        const refused = await tlsFailure(this.target);
        if (this.stopped) return;
        if (refused) throw new ConnectFailure(refused);
        if (
          !(await api.login(
            consoleAddress(this.target.host, this.target.port),
            this.target.username,
            this.target.password,
          ))
        )
          throw new ConnectFailure(loginFailure(this.log.since(mark)));
        this.loggedIn = true;
      } else {
        // Keeps the session cookie, closes a stale socket: getBootstrap() then opens a new one.
        api.reset();
      }
      const ok = await api.getBootstrap();
      if (this.stopped) return;
      const bootstrap = api.bootstrap;
      if (!bootstrap?.nvr || !Array.isArray(bootstrap.cameras))
        throw new ConnectFailure(
          'Not a UniFi Protect console: UniFi OS answered, but not the Protect application (is Protect installed and running?)',
        );
      if (!ok || !realtimeOpen(api))
        throw new ConnectFailure('The console refused the realtime update stream');
      this.failures = 0;
      this.lastMessageAt = Date.now();
      this.connected = true;
      this.listener.connected(bootstrap);
      this.listener.status('connected', null);
    } catch (error) {
      if (this.stopped) return;
      const message =
        error instanceof ConnectFailure ? error.message : `Connection failed: ${(error as Error).message}`;
      this.failures++;
      if (/^Authentication failed/.test(message)) this.loggedIn = false;
      const delay = backoffDelay(this.failures);
      this.listener.status('error', `${message} (retrying in ${Math.ceil(delay / 1000)} s)`);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.attempt = this.connect(null);
      }, delay);
      this.retryTimer.unref();
    }
  }

  /** The library instance; a new one when it throttles itself (5 minutes of silence after 10 failures). */
  private async client(): Promise<ProtectApi> {
    if (this.api && !this.api.isThrottled) return this.api;
    if (this.api) disposeProtectApi(this.api);
    this.loggedIn = false;
    const api = await createProtectApi(this.log, this.target.verifyTls);
    api.on('message', (packet: ProtectEventPacket) => {
      this.lastMessageAt = Date.now();
      // Cameras the console adds, changes or removes (before the listener looks them up).
      const cameras = api.bootstrap?.cameras;
      if (Array.isArray(cameras)) applyCameraPacket(cameras as unknown as Record<string, unknown>[], packet);
      this.listener.packet(packet);
    });
    this.api = api;
    return api;
  }

  /** The watchdog: a dropped or silent realtime stream is reconnected (the library would not notice). */
  private check(): void {
    if (this.stopped || !this.connected || !this.api) return;
    if (!realtimeOpen(this.api)) {
      this.attempt = this.connect('The realtime connection dropped; reconnecting');
    } else if (Date.now() - this.lastMessageAt > this.silenceMs) {
      this.attempt = this.connect(
        `No update from the console for ${Math.round(this.silenceMs / 1000)} s; reconnecting`,
      );
    }
  }
}
