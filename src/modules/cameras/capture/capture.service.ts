import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { SecretBox } from '../../../common/crypto/secret-box';
import { ConflictError, NotFoundError, TooManyRequestsError } from '../../../common/errors/app-errors';
import { APP_CONFIG, AppConfig } from '../../../config/config';
import { CameraNotFoundError, EventsService } from '../../events/events.service';
import { DomainEventBus } from '../../realtime/domain-event-bus';
import { CameraStatusWriter } from '../camera-status.writer';
import { CameraEntity, CameraStatus } from '../entities/camera.entity';
import { CameraRunner, CaptureStats, RunnerCamera } from './camera-runner';
import { KeyedQueue } from '../../../common/concurrency/keyed-queue';
import { AdvisoryLeases } from '../../../common/leases/advisory-leases';
import { CameraTestResult, StreamSource, testStream } from './ffmpeg';
import type { MotionEvent } from './motion-detector';

/** How often every instance checks for enabled cameras that nobody captures (failover, missed bus messages). */
export const RECONCILE_INTERVAL_MS = 15_000;
/** `last_frame_at` is written at most this often per camera. */
export const LAST_FRAME_WRITE_INTERVAL_MS = 10_000;
/** Connection tests run as separate ffmpeg processes; more at once than this are refused (429). */
export const MAX_CONCURRENT_TESTS = 4;
/** A connection test answers within 15 s: ffmpeg gets 12 s, the rest is start-up and slack. */
export const TEST_TIMEOUT_MS = 12_000;

/**
 * Runs the capture of every enabled camera (rtsp, mjpeg, usb; Protect cameras come from their controller) that
 * this instance holds the lease of (see AdvisoryLeases), and owns the camera status: every change is written to
 * the camera row and published as `camera.status`. Motion becomes events through EventsService.recordEvent, the
 * one path every event takes.
 *
 * It reacts to `camera.updated` (create, update, start, stop, delete; from any instance) by reconciling that
 * camera: start, restart (new URL, credentials or frame rate), reconfigure, or stop. Operations on one camera run
 * one after another; status writes of one camera too, in the order they happened.
 */
@Injectable()
export class CaptureService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Capture');
  private readonly runners = new Map<string, CameraRunner>();
  /** Operations of one camera run one after another. */
  private readonly operations = new KeyedQueue((id, error) =>
    this.logger.warn({ msg: 'Camera capture operation failed', camera_id: id, error: error.message }),
  );
  private readonly lastFrameWrite = new Map<string, number>();
  private leases!: AdvisoryLeases;
  private unsubscribe: (() => void) | null = null;
  private reconcileTimer: NodeJS.Timeout | null = null;
  private shuttingDown = false;
  private testsRunning = 0;

  constructor(
    @InjectRepository(CameraEntity) private readonly cameras: Repository<CameraEntity>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly events: EventsService,
    private readonly bus: DomainEventBus,
    private readonly statuses: CameraStatusWriter,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.databaseUrl) throw new Error('Capture needs the database URL');
    this.leases = new AdvisoryLeases(this.config.databaseUrl, 'capture', (ids) => this.leasesLost(ids));
    this.unsubscribe = this.bus.subscribe((message) => {
      if (message.type === 'camera.updated') void this.reconcile((message.data as { id: string }).id);
    });
    await this.reconcileAll();
    this.reconcileTimer = setInterval(() => void this.reconcileAll(), RECONCILE_INTERVAL_MS);
    this.reconcileTimer.unref();
  }

  /** Before the database pool closes: end every ffmpeg child, mark the cameras stopped, give up the leases. */
  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.unsubscribe?.();
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    try {
      await this.operations.allSettled();
      await Promise.allSettled(
        [...this.runners.keys()].map((id) => this.stopRunner(id, 'stopped', 'Service stopped')),
      );
      await this.statuses.allSettled();
    } finally {
      await this.leases?.close();
    }
  }

  /**
   * Brings the camera's capture in line with its row: running here if enabled and this instance holds (or can
   * take) its lease, stopped otherwise. Resolves when done, including the status write it caused.
   */
  reconcile(cameraId: string): Promise<void> {
    return this.operations.run(cameraId, async () => {
      if (this.shuttingDown) return;
      const camera = await this.cameras.findOne({ where: { id: cameraId } });
      const runner = this.runners.get(cameraId);
      if (!camera || !camera.enabled || camera.sourceType === 'protect') {
        if (runner) await this.stopRunner(cameraId, camera ? 'stopped' : null, null);
        else if (camera && camera.sourceType !== 'protect' && camera.status !== 'stopped')
          await this.clearStaleStatus(camera);
        return;
      }
      if (runner) {
        runner.update(this.runnerCamera(camera));
      } else {
        if (!(await this.leases.claim(cameraId))) return; // another instance captures it
        this.startRunner(camera);
      }
      await this.statuses.settled(cameraId);
    });
  }

  /** The camera's current JPEG; 404 for an unknown camera, 409 when it is not running here. */
  async snapshot(cameraId: string): Promise<Buffer> {
    const image = this.runners.get(cameraId)?.snapshot();
    if (image) return image;
    const camera = await this.cameras.findOne({
      where: { id: cameraId },
      select: { id: true, status: true },
    });
    if (!camera) throw new NotFoundError('Camera');
    if (camera.status === 'running' && !this.runners.has(cameraId))
      throw new ConflictError(
        'The camera is captured by another instance of the service; ask that instance for its snapshot',
      );
    throw new ConflictError(`The camera is not running (status: ${camera.status})`);
  }

  /** Tests a connection without saving anything (one short ffmpeg run). */
  async test(source: StreamSource): Promise<CameraTestResult> {
    if (this.testsRunning >= MAX_CONCURRENT_TESTS)
      throw new TooManyRequestsError(
        `Too many camera tests at once (at most ${MAX_CONCURRENT_TESTS}); try again in a few seconds`,
        5,
      );
    this.testsRunning++;
    try {
      return await testStream(source, { timeoutMs: TEST_TIMEOUT_MS });
    } finally {
      this.testsRunning--;
    }
  }

  /** Capture figures of the cameras this instance runs (for operators and the capture benchmark). */
  stats(): CaptureStats[] {
    return [...this.runners.values()]
      .map((runner) => runner.captureStats())
      .sort((a, b) => a.camera_name.localeCompare(b.camera_name));
  }

  private async reconcileAll(): Promise<void> {
    if (this.shuttingDown) return;
    try {
      const rows: { id: string }[] = await this.dataSource.query(
        `SELECT id FROM cameras WHERE enabled AND source_type <> 'protect'
         UNION SELECT id FROM cameras WHERE NOT enabled AND status <> 'stopped' AND source_type <> 'protect'`,
      );
      const ids = new Set([...rows.map((row) => row.id), ...this.runners.keys()]);
      await Promise.all([...ids].map((id) => this.reconcile(id)));
    } catch (error) {
      this.logger.warn({ msg: 'Could not reconcile camera capture', error: (error as Error).message });
    }
  }

  private startRunner(camera: CameraEntity): void {
    const id = camera.id;
    const runner = new CameraRunner(this.runnerCamera(camera), {
      status: (status, message) => this.statuses.write(id, status, message),
      motion: (event, jpeg, at, sourceType) => void this.recordMotion(id, event, jpeg, at, sourceType),
      frame: (at) => this.noteFrame(id, at),
      log: (entry) => this.logger.warn(entry),
    });
    this.runners.set(id, runner);
    runner.start();
  }

  /** Stops and forgets the runner; `status` (when given) is written once the process has exited. */
  private async stopRunner(id: string, status: CameraStatus | null, message: string | null): Promise<void> {
    const runner = this.runners.get(id);
    if (!runner) return;
    await runner.stop();
    this.runners.delete(id);
    this.lastFrameWrite.delete(id);
    if (status) this.statuses.write(id, status, message);
    await this.statuses.settled(id);
    await this.leases.release(id);
  }

  /** A disabled camera whose row still says it runs (its instance died): correct it if nobody holds it. */
  private async clearStaleStatus(camera: CameraEntity): Promise<void> {
    if (!(await this.leases.claim(camera.id))) return;
    this.statuses.write(camera.id, 'stopped', null);
    await this.statuses.settled(camera.id);
    await this.leases.release(camera.id);
  }

  private leasesLost(ids: string[]): void {
    for (const id of ids) {
      const runner = this.runners.get(id);
      if (!runner) continue;
      this.runners.delete(id);
      void runner.stop();
    }
  }

  private runnerCamera(camera: CameraEntity): RunnerCamera {
    return {
      id: camera.id,
      name: camera.name,
      source: {
        sourceType: camera.sourceType as StreamSource['sourceType'],
        url: camera.url,
        device: camera.device,
        username: camera.username,
        password: camera.passwordEncrypted ? this.secrets.decrypt(camera.passwordEncrypted) : null,
      },
      frameRate: camera.frameRate,
      motion: {
        sensitivity: camera.motionSensitivity,
        zones: camera.detectionZones,
        cooldownSeconds: camera.motionCooldownSeconds,
        frameRate: camera.frameRate,
      },
      motionEvents: camera.detectionTypes.includes('motion'),
    };
  }

  private noteFrame(id: string, at: Date): void {
    const last = this.lastFrameWrite.get(id) ?? 0;
    if (at.getTime() - last < LAST_FRAME_WRITE_INTERVAL_MS) return;
    this.lastFrameWrite.set(id, at.getTime());
    this.dataSource
      .query('UPDATE cameras SET last_frame_at = $2 WHERE id = $1', [id, at])
      .catch((error: Error) =>
        this.logger.warn({ msg: 'Could not store last_frame_at', camera_id: id, error: error.message }),
      );
  }

  private async recordMotion(
    id: string,
    event: MotionEvent,
    jpeg: Buffer | null,
    at: Date,
    sourceType: StreamSource['sourceType'],
  ): Promise<void> {
    try {
      await this.events.recordEvent({
        cameraId: id,
        timestamp: at,
        detectionType: 'motion',
        objectsDetected: [],
        confidence: event.confidence,
        sourceType,
        image: jpeg ?? undefined,
      });
    } catch (error) {
      if (error instanceof CameraNotFoundError) return; // deleted meanwhile
      this.logger.error({
        msg: 'Could not record a motion event',
        camera_id: id,
        error: (error as Error).message,
      });
    }
  }
}
