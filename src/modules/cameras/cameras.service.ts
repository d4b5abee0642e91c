import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { SecretBox } from '../../common/crypto/secret-box';
import { ConflictError, NotFoundError, ValidationFailedError } from '../../common/errors/app-errors';
import { ImageStore } from '../../common/storage/image-store';
import { DETECTION_TYPES } from '../events/entities/event.entity';
import { DomainEventBus } from '../realtime/domain-event-bus';
import { CameraSource, mergeCameraSource, validateCameraSource } from './camera-source';
import { CaptureService } from './capture/capture.service';
import { ProtectCameraLink } from './protect-camera.link';
import { CameraTestResult } from './capture/ffmpeg';
import {
  CameraResponseDto,
  CreateCameraDto,
  DetectionZoneInputDto,
  TestCameraDto,
  toCameraResponse,
  UpdateCameraDto,
} from './dto/camera.dto';
import { CameraEntity, DetectionZone } from './entities/camera.entity';

/**
 * Transaction-scoped advisory lock taken by every create and rename. Names are unique case-insensitively,
 * which the (case-sensitive) unique index cannot enforce alone: the lock serialises "is the name free?" and
 * the write, so two requests cannot both take "Garage" and "garage".
 */
const CAMERA_NAME_LOCK = 0x7669_6763;

/** Images are removed in batches so deleting a camera with many events does not open every file at once. */
const IMAGE_REMOVE_BATCH = 200;

@Injectable()
export class CamerasService {
  private readonly logger = new Logger('Cameras');

  constructor(
    @InjectRepository(CameraEntity) private readonly cameras: Repository<CameraEntity>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly images: ImageStore,
    private readonly bus: DomainEventBus,
    private readonly capture: CaptureService,
    private readonly protect: ProtectCameraLink,
  ) {}

  /** Every camera, by name (case-insensitive). */
  async list(): Promise<CameraResponseDto[]> {
    const cameras = await this.cameras
      .createQueryBuilder('c')
      .orderBy('lower(c.name)', 'ASC')
      .addOrderBy('c.id', 'ASC')
      .getMany();
    return cameras.map(toCameraResponse);
  }

  async get(id: string): Promise<CameraResponseDto> {
    const camera = await this.cameras.findOne({ where: { id } });
    if (!camera) throw new NotFoundError('Camera');
    return toCameraResponse(camera);
  }

  async create(dto: CreateCameraDto): Promise<CameraResponseDto> {
    const source: CameraSource = {
      source_type: dto.source_type,
      url: dto.url ?? null,
      username: dto.username ?? null,
      has_password: dto.password != null,
      device: dto.device ?? null,
      protect_controller_id: dto.protect_controller_id ?? null,
      protect_camera_id: dto.protect_camera_id ?? null,
    };
    assertValidSource(source);
    await this.validateProtect(source, null);
    const passwordEncrypted = dto.password != null ? this.secrets.encrypt(dto.password) : null;

    const saved = await this.dataSource.transaction(async (manager) => {
      await this.lockNames(manager);
      await this.assertNameFree(manager, dto.name);
      const camera = manager.create(CameraEntity, {
        name: dto.name,
        sourceType: source.source_type,
        url: source.url,
        username: source.username,
        passwordEncrypted,
        device: source.device,
        protectControllerId: source.protect_controller_id,
        protectCameraId: source.protect_camera_id,
        enabled: dto.enabled ?? false,
        status: 'stopped',
        statusMessage: null,
        frameRate: dto.frame_rate ?? 5,
        motionSensitivity: dto.motion_sensitivity ?? 'medium',
        motionCooldownSeconds: dto.motion_cooldown_seconds ?? 30,
        detectionZones: toZones(dto.detection_zones ?? []),
        detectionTypes: dto.detection_types ? [...dto.detection_types] : [...DETECTION_TYPES],
        promptOverride: dto.prompt_override ?? null,
        lastFrameAt: null,
        lastEventAt: null,
      });
      const { id } = await manager.save(camera);
      return manager.findOneOrFail(CameraEntity, { where: { id } });
    });
    this.bus.publish('camera.updated', { ...toCameraResponse(saved) });
    return this.afterChange(saved.id);
  }

  /** Partial update; the merged camera must be valid for its source type. */
  async update(id: string, dto: UpdateCameraDto): Promise<CameraResponseDto> {
    const saved = await this.dataSource.transaction(async (manager) => {
      // Name lock before the row lock, in the same order as create, so the two cannot deadlock.
      if (dto.name !== undefined) await this.lockNames(manager);
      const camera = await manager.findOne(CameraEntity, {
        where: { id },
        lock: { mode: 'pessimistic_write' },
      });
      if (!camera) throw new NotFoundError('Camera');

      const source = mergeCameraSource(sourceOf(camera), dto);
      assertValidSource(source);
      if (
        source.protect_controller_id !== camera.protectControllerId ||
        source.protect_camera_id !== camera.protectCameraId
      )
        await this.validateProtect(source, id);
      if (dto.name !== undefined && dto.name !== camera.name)
        await this.assertNameFree(manager, dto.name, id);

      if (dto.name !== undefined) camera.name = dto.name;
      camera.sourceType = source.source_type;
      camera.url = source.url;
      camera.username = source.username;
      camera.device = source.device;
      camera.protectControllerId = source.protect_controller_id;
      camera.protectCameraId = source.protect_camera_id;
      if (!source.has_password) camera.passwordEncrypted = null;
      else if (typeof dto.password === 'string')
        camera.passwordEncrypted = this.secrets.encrypt(dto.password);
      if (dto.enabled !== undefined) camera.enabled = dto.enabled;
      if (dto.frame_rate !== undefined) camera.frameRate = dto.frame_rate;
      if (dto.motion_sensitivity !== undefined) camera.motionSensitivity = dto.motion_sensitivity;
      if (dto.motion_cooldown_seconds !== undefined)
        camera.motionCooldownSeconds = dto.motion_cooldown_seconds;
      if (dto.detection_zones !== undefined) camera.detectionZones = toZones(dto.detection_zones);
      if (dto.detection_types !== undefined) camera.detectionTypes = [...dto.detection_types];
      if (dto.prompt_override !== undefined) camera.promptOverride = dto.prompt_override;

      await manager.save(camera);
      return manager.findOneOrFail(CameraEntity, { where: { id } });
    });
    this.bus.publish('camera.updated', { ...toCameraResponse(saved) });
    return this.afterChange(id);
  }

  /** Start: `enabled = true` and capture begins (idempotent). The response shows the status it reached. */
  start(id: string): Promise<CameraResponseDto> {
    return this.setEnabled(id, true);
  }

  /** Stop: `enabled = false`; resolves once the capture process has ended (idempotent). */
  stop(id: string): Promise<CameraResponseDto> {
    return this.setEnabled(id, false);
  }

  /** The current JPEG of a running camera (409 otherwise); a Protect camera's from its console. */
  async snapshot(id: string): Promise<Buffer> {
    const camera = await this.cameras.findOne({ where: { id }, select: { id: true, sourceType: true } });
    if (camera?.sourceType === 'protect') return this.protect.snapshot(id);
    return this.capture.snapshot(id);
  }

  /** Tries a connection without saving anything. */
  test(dto: TestCameraDto): Promise<CameraTestResult> {
    assertValidSource({
      source_type: dto.source_type,
      url: dto.url ?? null,
      username: dto.username ?? null,
      has_password: dto.password != null,
      device: dto.device ?? null,
      protect_controller_id: null,
      protect_camera_id: null,
    });
    return this.capture.test({
      sourceType: dto.source_type,
      url: dto.url ?? null,
      username: dto.username ?? null,
      password: dto.password ?? null,
      device: dto.device ?? null,
    });
  }

  private async setEnabled(id: string, enabled: boolean): Promise<CameraResponseDto> {
    const result = await this.cameras
      .createQueryBuilder()
      .update(CameraEntity)
      .set({ enabled, updatedAt: () => `CASE WHEN enabled = ${enabled} THEN updated_at ELSE now() END` })
      .where('id = :id', { id })
      .execute();
    if (!result.affected) throw new NotFoundError('Camera');
    const camera = await this.cameras.findOneOrFail({ where: { id } });
    this.bus.publish('camera.updated', { ...toCameraResponse(camera) });
    return this.afterChange(id);
  }

  /** Lets capture follow the change (start, restart, stop) before answering, then returns the camera as it is. */
  private async afterChange(id: string): Promise<CameraResponseDto> {
    await Promise.all([this.capture.reconcile(id), this.protect.reconcile(id)]);
    return this.get(id);
  }

  /** A Protect camera must name an existing controller and a console camera no other camera adopted. */
  private async validateProtect(source: CameraSource, exceptId: string | null): Promise<void> {
    if (source.source_type !== 'protect' || !source.protect_controller_id || !source.protect_camera_id)
      return;
    await this.protect.validate(source.protect_controller_id, source.protect_camera_id, exceptId);
  }

  /**
   * Deletes the camera and (by the foreign key's ON DELETE CASCADE) its events, then their image files.
   * The camera row is locked first: an event insert for it (which takes a key-share lock on the camera
   * through the foreign key) waits for this transaction and then fails, so no event slips in between
   * reading the image names and deleting.
   */
  async remove(id: string): Promise<void> {
    const { record, imageFiles } = await this.dataSource.transaction(async (manager) => {
      const camera = await manager.findOne(CameraEntity, {
        where: { id },
        lock: { mode: 'pessimistic_write' },
      });
      if (!camera) throw new NotFoundError('Camera');
      const rows: { image_file: string }[] = await manager.query(
        'SELECT image_file FROM events WHERE camera_id = $1 AND image_file IS NOT NULL',
        [id],
      );
      await manager.delete(CameraEntity, { id });
      return { record: toCameraResponse(camera), imageFiles: rows.map((r) => r.image_file) };
    });
    this.bus.publish('camera.updated', { ...record, deleted: true });
    await Promise.all([this.capture.reconcile(id), this.protect.reconcile(id)]);
    await this.removeImages(id, imageFiles);
  }

  private async removeImages(cameraId: string, names: string[]): Promise<void> {
    try {
      for (let i = 0; i < names.length; i += IMAGE_REMOVE_BATCH) {
        await this.images.remove(names.slice(i, i + IMAGE_REMOVE_BATCH));
      }
    } catch (error) {
      // The camera and its events are gone (committed); a file that cannot be removed is only logged.
      this.logger.warn({
        msg: "Could not remove a deleted camera's event images",
        camera_id: cameraId,
        error: (error as Error).message,
      });
    }
  }

  private async lockNames(manager: EntityManager): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [CAMERA_NAME_LOCK]);
  }

  private async assertNameFree(manager: EntityManager, name: string, exceptId?: string): Promise<void> {
    const query = manager
      .createQueryBuilder(CameraEntity, 'c')
      .select('c.id')
      .where('lower(c.name) = lower(:name)', { name });
    if (exceptId) query.andWhere('c.id <> :exceptId', { exceptId });
    if (await query.getOne()) throw new ConflictError(`A camera named "${name}" already exists`);
  }
}

function sourceOf(camera: CameraEntity): CameraSource {
  return {
    source_type: camera.sourceType,
    url: camera.url,
    username: camera.username,
    has_password: camera.passwordEncrypted !== null,
    device: camera.device,
    protect_controller_id: camera.protectControllerId,
    protect_camera_id: camera.protectCameraId,
  };
}

function assertValidSource(source: CameraSource): void {
  const errors = validateCameraSource(source);
  if (errors.length > 0) throw new ValidationFailedError(errors);
}

function toZones(zones: DetectionZoneInputDto[]): DetectionZone[] {
  return zones.map((zone) => ({
    name: zone.name,
    enabled: zone.enabled ?? true,
    points: zone.points.map(([x, y]) => [x, y] as [number, number]),
  }));
}
