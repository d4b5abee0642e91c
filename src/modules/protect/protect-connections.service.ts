import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { ProtectEventPacket, ProtectNvrBootstrap } from 'unifi-protect';
import { DataSource, Repository } from 'typeorm';
import { SecretBox } from '../../common/crypto/secret-box';
import { ConflictError, NotFoundError, ValidationFailedError } from '../../common/errors/app-errors';
import { KeyedQueue } from '../../common/concurrency/keyed-queue';
import { AdvisoryLeases } from '../../common/leases/advisory-leases';
import { requestScope } from '../../common/logging/json-logger';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { CameraStatusWriter } from '../cameras/camera-status.writer';
import { CameraEntity } from '../cameras/entities/camera.entity';
import { ProtectCameraHandler, ProtectCameraLink } from '../cameras/protect-camera.link';
import type { DetectionType } from '../events/entities/event.entity';
import { CameraNotFoundError, DuplicateEventError, EventsService } from '../events/events.service';
import { checkJpeg } from '../events/jpeg';
import { DomainEventBus } from '../realtime/domain-event-bus';
import { ControllerStatus, ProtectControllerEntity } from './entities/protect-controller.entity';
import type { ProtectLogLine } from './protect-api';
import { chooseDetectionType, protectObjects, ProtectUpdate, readPacket } from './protect-packets';
import { DEFAULT_SILENCE_TIMEOUT_MS, ProtectSession } from './protect-session';
import { savedConnection } from './protect-test';

/** How often every instance checks for enabled controllers nobody is connected to (failover, missed messages). */
export const PROTECT_RECONCILE_INTERVAL_MS = 15_000;
/** Detections remembered per controller (for their end and late metadata); the oldest are forgotten first. */
const MAX_TRACKED_DETECTIONS = 5_000;
/** A detection is forgotten this long after its end (late metadata can follow the end). */
const FORGET_AFTER_END_MS = 60_000;

/** Why a connection closes: the controller's last status message and its cameras' (offline) message. */
interface Release {
  controller: string;
  cameras: string;
}

/** The same words wherever they are written (here, ProtectService.remove, reconcile), so nothing is sent twice. */
export const RELEASE = {
  deleted: { controller: 'Protect controller deleted', cameras: 'Protect controller deleted' },
  disabled: { controller: 'Disabled', cameras: 'Protect controller disabled' },
  stopped: { controller: 'Service stopped', cameras: 'Service stopped' },
} satisfies Record<string, Release>;

/** A Vigil camera adopting a console camera. */
interface AdoptedCamera {
  id: string;
  protectCameraId: string;
  enabled: boolean;
  detectionTypes: DetectionType[];
}

/** A console detection Vigil follows: the event it became (null: ignored or failed) and what it knows so far. */
interface Detection {
  /** Resolves to the Vigil event id once recorded (null when the detection is not an event). */
  recorded: Promise<string | null>;
  /** Updates of one detection apply one after another. */
  chain: Promise<void>;
  types: DetectionType[];
  score: number | null;
  licensePlate: string | null;
}

/** A controller this instance is connected to. */
interface HeldController {
  id: string;
  name: string;
  /** Host, port, user, password and TLS setting: a change reconnects. */
  connectionKey: string;
  session: ProtectSession;
  status: ControllerStatus;
  statusMessage: string | null;
  /** Adopted cameras by console camera id. */
  cameras: Map<string, AdoptedCamera>;
  /** Console camera id → connected, from the bootstrap and the realtime updates. */
  online: Map<string, boolean>;
  detections: Map<string, Detection>;
  /** Controller status writes, in the order they happened. */
  statusWrites: Promise<void>;
  /** What the console said about itself in its last bootstrap. */
  consoleInfo?: ConsoleInfo;
}

/**
 * Keeps one connection (ProtectSession) per enabled Protect controller, on the instance holding the
 * controller's lease, and turns what the console sends into Vigil: motion, smart detections and rings on
 * adopted, enabled cameras become events through EventsService.recordEvent (with the console's snapshot, its
 * score as confidence, deduplicated by Protect event id) and are updated when the console sends their end or
 * late metadata; camera connection changes and the controller's own connection become camera statuses
 * (`camera.status`) and controller statuses (`controller.status`).
 */
@Injectable()
export class ProtectConnections
  implements OnApplicationBootstrap, BeforeApplicationShutdown, ProtectCameraHandler
{
  /** A realtime stream silent this long is reconnected (real consoles send updates every few seconds). */
  silenceTimeoutMs = DEFAULT_SILENCE_TIMEOUT_MS;

  private readonly logger = new Logger('Protect');
  private readonly held = new Map<string, HeldController>();
  /** Operations of one controller run one after another. */
  private readonly operations = new KeyedQueue((id, error) =>
    this.logger.warn({ msg: 'Protect controller operation failed', controller_id: id, error: error.message }),
  );
  private leases!: AdvisoryLeases;
  private unsubscribe: (() => void) | null = null;
  private reconcileTimer: NodeJS.Timeout | null = null;
  private shuttingDown = false;

  constructor(
    @InjectRepository(ProtectControllerEntity)
    private readonly controllers: Repository<ProtectControllerEntity>,
    @InjectRepository(CameraEntity) private readonly cameras: Repository<CameraEntity>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly events: EventsService,
    private readonly statuses: CameraStatusWriter,
    private readonly bus: DomainEventBus,
    link: ProtectCameraLink,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    link.register(this);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.databaseUrl) throw new Error('Protect needs the database URL');
    this.leases = new AdvisoryLeases(this.config.databaseUrl, 'protect', (ids) => this.leasesLost(ids));
    this.unsubscribe = this.bus.subscribe((message) => {
      if (message.type === 'protect.controller.changed')
        void this.reconcileController((message.data as { id: string }).id);
      if (message.type === 'camera.updated') void this.reconcile((message.data as { id: string }).id);
    });
    await this.reconcileAll();
    this.reconcileTimer = setInterval(() => void this.reconcileAll(), PROTECT_RECONCILE_INTERVAL_MS);
    this.reconcileTimer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.unsubscribe?.();
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    try {
      await this.operations.allSettled();
      await Promise.allSettled([...this.held.keys()].map((id) => this.release(id, RELEASE.stopped)));
    } finally {
      await this.leases?.close();
    }
  }

  /**
   * Brings a controller's connection in line with its row: connected here if enabled and this instance holds
   * (or can take) its lease, reconnected when its connection settings changed, closed otherwise.
   */
  reconcileController(controllerId: string): Promise<void> {
    return this.operations.run(controllerId, async () => {
      if (this.shuttingDown) return;
      const row = await this.controllers.findOne({ where: { id: controllerId } });
      const held = this.held.get(controllerId);
      if (!row || !row.enabled) {
        if (held) await this.release(controllerId, row ? RELEASE.disabled : RELEASE.deleted);
        else if (row && row.status !== 'disconnected' && (await this.leases.claim(controllerId))) {
          // Disabled while nobody held it (its instance died): correct the row.
          await this.writeControllerStatus(controllerId, 'disconnected', 'Disabled');
          await this.leases.release(controllerId);
        }
        return;
      }
      if (held) {
        held.name = row.name;
        if (held.connectionKey === connectionKey(row)) return;
        await this.release(controllerId, null);
      }
      if (!(await this.leases.claim(controllerId))) return; // another instance is connected to it
      await this.connect(row);
    });
  }

  // ---- ProtectCameraHandler (for the cameras module) ----

  async validate(
    controllerId: string,
    protectCameraId: string,
    exceptCameraId: string | null,
  ): Promise<void> {
    const controller = await this.controllers.findOne({ where: { id: controllerId }, select: { id: true } });
    if (!controller)
      throw new ValidationFailedError([
        {
          field: 'body.protect_controller_id',
          message: 'protect_controller_id does not name an existing Protect controller',
        },
      ]);
    const held = this.held.get(controllerId);
    if (held?.status === 'connected' && !held.session.camera(protectCameraId))
      throw new ValidationFailedError([
        {
          field: 'body.protect_camera_id',
          message: 'protect_camera_id is not a camera of that Protect controller',
        },
      ]);
    const adopted = await this.cameras
      .createQueryBuilder('c')
      .select(['c.id', 'c.name'])
      .where('c.protect_controller_id = :controllerId AND c.protect_camera_id = :protectCameraId', {
        controllerId,
        protectCameraId,
      })
      .andWhere(exceptCameraId ? 'c.id <> :exceptCameraId' : 'true', { exceptCameraId })
      .getOne();
    if (adopted)
      throw new ConflictError(`That Protect camera is already adopted by camera "${adopted.name}"`);
  }

  /** A Protect camera changed (or was deleted): its controller's instance follows it and sets its status. */
  async reconcile(cameraId: string): Promise<void> {
    const camera = await this.cameras.findOne({ where: { id: cameraId } });
    for (const held of this.held.values()) {
      for (const [protectId, adopted] of held.cameras) {
        if (
          adopted.id === cameraId &&
          (camera?.sourceType !== 'protect' ||
            camera.protectCameraId !== protectId ||
            camera.protectControllerId !== held.id)
        )
          held.cameras.delete(protectId);
      }
    }
    if (!camera || camera.sourceType !== 'protect' || !camera.protectControllerId || !camera.protectCameraId)
      return;
    const held = this.held.get(camera.protectControllerId);
    if (held) {
      const adopted = adoptedOf(camera);
      held.cameras.set(adopted.protectCameraId, adopted);
      this.writeCameraStatus(held, adopted);
      await this.statuses.settled(camera.id);
      return;
    }
    // Nobody here runs its controller: say so when nobody can (deleted or disabled controller).
    const controller = await this.controllers.findOne({
      where: { id: camera.protectControllerId },
      select: { id: true, enabled: true },
    });
    if (!camera.enabled) this.statuses.write(camera.id, 'stopped', null);
    else if (!controller) this.statuses.write(camera.id, 'offline', RELEASE.deleted.cameras);
    else if (!controller.enabled) this.statuses.write(camera.id, 'offline', RELEASE.disabled.cameras);
    await this.statuses.settled(camera.id);
  }

  async snapshot(cameraId: string): Promise<Buffer> {
    const camera = await this.cameras.findOne({ where: { id: cameraId } });
    if (!camera) throw new NotFoundError('Camera');
    const held = camera.protectControllerId ? this.held.get(camera.protectControllerId) : undefined;
    if (!held || held.status !== 'connected' || !camera.protectCameraId)
      throw new ConflictError(`The camera is not running (status: ${camera.status})`);
    const image = await held.session.snapshot(camera.protectCameraId);
    if (!image || !checkJpeg(image).ok)
      throw new ConflictError('The Protect console has no snapshot of this camera');
    return image;
  }

  /** The console's cameras as this instance's connection knows them (null when not connected here). */
  liveCameras(
    controllerId: string,
  ): { bootstrap: ProtectNvrBootstrap['cameras']; online: Map<string, boolean> } | null {
    const held = this.held.get(controllerId);
    if (!held || held.status !== 'connected') return null;
    const cameras = held.session.cameras();
    return cameras ? { bootstrap: cameras, online: held.online } : null;
  }

  // ---- connections ----

  private async connect(row: ProtectControllerEntity): Promise<void> {
    const adopted: CameraEntity[] = await this.cameras.find({
      where: { protectControllerId: row.id, sourceType: 'protect' },
    });
    const held: HeldController = {
      id: row.id,
      name: row.name,
      connectionKey: connectionKey(row),
      session: null as unknown as ProtectSession,
      status: 'connecting',
      statusMessage: null,
      cameras: new Map(
        adopted.filter((c) => c.protectCameraId).map((c) => [c.protectCameraId!, adoptedOf(c)]),
      ),
      online: new Map(),
      detections: new Map(),
      statusWrites: Promise.resolve(),
    };
    held.session = new ProtectSession(
      savedConnection(row, this.secrets),
      {
        status: (status, message) => this.sessionStatus(held, status, message),
        connected: (bootstrap) => this.sessionConnected(held, bootstrap),
        packet: (packet) => this.onPacket(held, packet),
        log: (line) => this.libraryLog(held, line),
      },
      this.silenceTimeoutMs,
    );
    this.held.set(row.id, held);
    // Answer (create, update, enable) after the first attempt, with the statuses it caused. The connection
    // outlives the request that started it: it must not carry (and log) that request's id.
    await requestScope.exit(() => held.session.start());
    await held.statusWrites;
    await Promise.all([...held.cameras.values()].map((camera) => this.statuses.settled(camera.id)));
  }

  /** Closes the connection and gives up the lease; `message` (when given) is the controller's last status. */
  private async release(controllerId: string, reason: Release | null): Promise<void> {
    const held = this.held.get(controllerId);
    if (!held) return;
    this.held.delete(controllerId);
    await held.session.stop();
    await Promise.allSettled([...held.detections.values()].map((d) => d.chain));
    if (reason !== null) {
      held.status = 'disconnected';
      for (const camera of held.cameras.values())
        this.statuses.write(
          camera.id,
          camera.enabled ? 'offline' : 'stopped',
          camera.enabled ? reason.cameras : null,
        );
      this.queueControllerStatus(held, 'disconnected', reason.controller);
    }
    await held.statusWrites;
    await Promise.all([...held.cameras.values()].map((c) => this.statuses.settled(c.id)));
    await this.leases.release(controllerId);
  }

  private leasesLost(ids: string[]): void {
    for (const id of ids) {
      const held = this.held.get(id);
      if (!held) continue;
      this.held.delete(id);
      void held.session.stop();
    }
  }

  private async reconcileAll(): Promise<void> {
    if (this.shuttingDown) return;
    try {
      const rows: { id: string }[] = await this.dataSource.query(
        `SELECT id FROM protect_controllers WHERE enabled OR status <> 'disconnected'`,
      );
      const ids = new Set([...rows.map((row) => row.id), ...this.held.keys()]);
      await Promise.all([...ids].map((id) => this.reconcileController(id)));
    } catch (error) {
      this.logger.warn({ msg: 'Protect reconcile failed', error: (error as Error).message });
    }
  }

  // ---- session callbacks ----

  private sessionConnected(held: HeldController, bootstrap: ProtectNvrBootstrap): void {
    held.online = new Map(bootstrap.cameras.map((c) => [c.id, c.isConnected !== false]));
    held.consoleInfo = {
      consoleName: bootstrap.nvr.name ?? bootstrap.nvr.marketName ?? null,
      version: bootstrap.nvr.version ?? null,
      cameraCount: bootstrap.cameras.length,
    };
  }

  private sessionStatus(held: HeldController, status: ControllerStatus, message: string | null): void {
    if (this.held.get(held.id) !== held) return; // released meanwhile
    held.status = status;
    held.statusMessage = message;
    this.queueControllerStatus(held, status, message);
    for (const camera of held.cameras.values()) this.writeCameraStatus(held, camera);
  }

  private libraryLog(held: HeldController, line: ProtectLogLine): void {
    if (line.level === 'debug') return;
    const entry = { msg: 'Protect library', controller_id: held.id, message: line.message };
    if (line.level === 'error' || line.level === 'warn') this.logger.warn(entry);
    else this.logger.log(entry);
  }

  /** An adopted camera's status: stopped (disabled), offline (controller or camera not connected) or running. */
  private writeCameraStatus(held: HeldController, camera: AdoptedCamera): void {
    if (!camera.enabled) this.statuses.write(camera.id, 'stopped', null);
    else if (held.status === 'connecting')
      return; // a (re)connection in progress: the camera keeps its status until it succeeds or fails
    else if (held.status !== 'connected')
      this.statuses.write(camera.id, 'offline', `Protect controller: ${held.statusMessage ?? held.status}`);
    else if (held.online.get(camera.protectCameraId) === false)
      this.statuses.write(camera.id, 'offline', 'Disconnected from the Protect console');
    else if (!held.online.has(camera.protectCameraId))
      this.statuses.write(camera.id, 'error', 'The Protect console has no camera with this id');
    else this.statuses.write(camera.id, 'running', null);
  }

  /** Writes the controller's status (and, when connected, what the console said about itself), then publishes it. */
  private queueControllerStatus(
    held: HeldController,
    status: ControllerStatus,
    message: string | null,
  ): void {
    const info = status === 'connected' ? held.consoleInfo : undefined;
    held.statusWrites = held.statusWrites.then(() =>
      this.writeControllerStatus(held.id, status, message, info),
    );
  }

  private async writeControllerStatus(
    id: string,
    status: ControllerStatus,
    message: string | null,
    info?: ConsoleInfo,
  ): Promise<void> {
    try {
      const rows: { name: string; previous_status: string; previous_message: string | null }[] =
        await this.dataSource.query(
          `WITH old AS (SELECT id, status, status_message FROM protect_controllers WHERE id = $1 FOR UPDATE),
                changed AS (
                  UPDATE protect_controllers p SET status = $2, status_message = $3,
                    console_name = CASE WHEN $4::boolean THEN $5 ELSE p.console_name END,
                    version = CASE WHEN $4::boolean THEN $6 ELSE p.version END,
                    camera_count = CASE WHEN $4::boolean THEN $7::int ELSE p.camera_count END,
                    last_connected_at = CASE WHEN $4::boolean THEN now() ELSE p.last_connected_at END
                  FROM old WHERE p.id = old.id
                  RETURNING p.name, old.status AS previous_status, old.status_message AS previous_message)
           SELECT * FROM changed`,
          [
            id,
            status,
            message,
            info !== undefined,
            info?.consoleName ?? null,
            info?.version ?? null,
            info?.cameraCount ?? null,
          ],
        );
      const row = rows[0];
      if (!row || (row.previous_status === status && row.previous_message === message)) return;
      this.bus.publish('controller.status', {
        controller_id: id,
        controller_name: row.name,
        status,
        previous_status: row.previous_status,
        status_message: message,
      });
    } catch (error) {
      this.logger.warn({
        msg: 'Could not store a controller status',
        controller_id: id,
        error: (error as Error).message,
      });
    }
  }

  // ---- realtime updates ----

  private onPacket(held: HeldController, packet: ProtectEventPacket): void {
    if (this.held.get(held.id) !== held) return;
    const update = readPacket(packet);
    if (!update) return;
    if (update.kind === 'camera-connection' || update.kind === 'camera-removed') {
      if (update.kind === 'camera-removed') held.online.delete(update.protectCameraId);
      else held.online.set(update.protectCameraId, update.online);
      const camera = held.cameras.get(update.protectCameraId);
      if (camera) this.writeCameraStatus(held, camera);
    } else if (update.kind === 'detection-start') {
      this.startDetection(held, update);
    } else {
      this.updateDetection(held, update);
    }
  }

  private startDetection(
    held: HeldController,
    update: Extract<ProtectUpdate, { kind: 'detection-start' }>,
  ): void {
    if (held.detections.has(update.protectEventId)) return; // the same add again (a resent packet)
    const camera = held.cameras.get(update.protectCameraId);
    const type = camera?.enabled ? chooseDetectionType(update.types, camera.detectionTypes) : null;
    const detection: Detection = {
      recorded: Promise.resolve(null),
      chain: Promise.resolve(),
      types: update.types,
      score: update.score,
      licensePlate: null,
    };
    this.track(held, update.protectEventId, detection);
    if (!camera || !type) return; // not adopted, disabled, or a type the camera does not make events of
    detection.recorded = this.record(held, camera, type, update);
    if (update.ended) this.forgetLater(held, update.protectEventId);
  }

  /** Records the event with the console's snapshot; resolves to its id (null when it could not be stored). */
  private async record(
    held: HeldController,
    camera: AdoptedCamera,
    type: DetectionType,
    update: Extract<ProtectUpdate, { kind: 'detection-start' }>,
  ): Promise<string | null> {
    const snapshot = await held.session.snapshot(update.protectCameraId).catch(() => null);
    const image = snapshot && checkJpeg(snapshot).ok ? snapshot : null;
    try {
      const event = await this.events.recordEvent({
        cameraId: camera.id,
        timestamp: update.start,
        detectionType: type,
        objectsDetected: protectObjects(update.types, null),
        confidence: update.score,
        sourceType: 'protect',
        protectEventId: update.protectEventId,
        image,
      });
      return event.id;
    } catch (error) {
      if (error instanceof DuplicateEventError) {
        // Recorded before (a reconnect or another instance replayed the start): that event it is.
        return (await this.events.findByProtectEventId(update.protectEventId))?.id ?? null;
      }
      if (!(error instanceof CameraNotFoundError))
        this.logger.warn({
          msg: 'Could not record a Protect event',
          controller_id: held.id,
          protect_event_id: update.protectEventId,
          error: (error as Error).message,
        });
      return null;
    }
  }

  /** Applies an event's update (end, final score, more detection types, a license plate) to its Vigil event. */
  private updateDetection(
    held: HeldController,
    update: Extract<ProtectUpdate, { kind: 'detection-update' }>,
  ): void {
    let detection = held.detections.get(update.protectEventId);
    if (!detection) {
      // Not seen since this connection started (a restart between start and end): look it up.
      const found = this.events.findByProtectEventId(update.protectEventId).catch(() => null);
      detection = {
        recorded: found.then((event) => event?.id ?? null),
        chain: found.then((event) => {
          if (!event || !detection) return;
          detection.types = event.objects_detected.filter((o) => !o.startsWith('plate:')) as DetectionType[];
          detection.score = event.confidence;
          detection.licensePlate =
            event.objects_detected.find((o) => o.startsWith('plate:'))?.slice(6) ?? null;
          if (event.detection_type === 'motion' || event.detection_type === 'ring')
            detection.types.unshift(event.detection_type);
        }),
        types: [],
        score: null,
        licensePlate: null,
      };
      this.track(held, update.protectEventId, detection);
    }
    const target = detection;
    target.chain = target.chain.then(async () => {
      const eventId = await target.recorded;
      if (!eventId) return;
      const types = [...target.types, ...update.types.filter((t) => !target.types.includes(t))];
      const plate = update.licensePlate ?? target.licensePlate;
      // The console's latest score (its final one at the end), also when lower than an earlier one.
      const score = update.score ?? target.score;
      const objects = protectObjects(types, plate);
      const changed = {
        ...(score !== target.score ? { confidence: score } : {}),
        ...(objects.join('\n') !== protectObjects(target.types, target.licensePlate).join('\n')
          ? { objectsDetected: objects }
          : {}),
      };
      target.types = types;
      target.licensePlate = plate;
      target.score = score;
      if (Object.keys(changed).length === 0) return;
      try {
        await this.events.updateEvent(eventId, changed);
      } catch (error) {
        this.logger.warn({
          msg: 'Could not update a Protect event',
          protect_event_id: update.protectEventId,
          error: (error as Error).message,
        });
      }
    });
    if (update.end) this.forgetLater(held, update.protectEventId);
  }

  private track(held: HeldController, protectEventId: string, detection: Detection): void {
    held.detections.set(protectEventId, detection);
    if (held.detections.size > MAX_TRACKED_DETECTIONS) {
      const oldest = held.detections.keys().next().value;
      if (oldest !== undefined) held.detections.delete(oldest);
    }
  }

  private forgetLater(held: HeldController, protectEventId: string): void {
    const timer = setTimeout(() => held.detections.delete(protectEventId), FORGET_AFTER_END_MS);
    timer.unref();
  }
}

interface ConsoleInfo {
  consoleName: string | null;
  version: string | null;
  cameraCount: number;
}

function connectionKey(row: ProtectControllerEntity): string {
  return JSON.stringify([row.host, row.port, row.username, row.passwordEncrypted, row.verifyTls]);
}

function adoptedOf(camera: CameraEntity): AdoptedCamera {
  return {
    id: camera.id,
    protectCameraId: camera.protectCameraId ?? '',
    enabled: camera.enabled,
    detectionTypes: camera.detectionTypes,
  };
}
