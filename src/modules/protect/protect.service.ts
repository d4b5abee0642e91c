import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { ProtectCameraConfig } from 'unifi-protect';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { SecretBox } from '../../common/crypto/secret-box';
import {
  AppError,
  ConflictError,
  NotFoundError,
  ValidationFailedError,
} from '../../common/errors/app-errors';
import { CameraStatusWriter } from '../cameras/camera-status.writer';
import { CameraEntity } from '../cameras/entities/camera.entity';
import { DomainEventBus } from '../realtime/domain-event-bus';
import {
  CreateProtectControllerDto,
  ProtectCameraDto,
  ProtectControllerResponseDto,
  ProtectTestResponseDto,
  TestProtectControllerDto,
  toControllerResponse,
  UpdateProtectControllerDto,
} from './dto/protect.dto';
import { ProtectControllerEntity } from './entities/protect-controller.entity';
import { ProtectConnections, RELEASE } from './protect-connections.service';
import { smartTypes } from './protect-packets';
import { readConsole, savedConnection, testController } from './protect-test';

/** Serialises "is the name free?" and the write (names are unique case-insensitively). */
const CONTROLLER_NAME_LOCK = 0x7670_726f;

/** Protect controller records (CRUD, test, the console's cameras); ProtectConnections runs the connections. */
@Injectable()
export class ProtectService {
  constructor(
    @InjectRepository(ProtectControllerEntity)
    private readonly controllers: Repository<ProtectControllerEntity>,
    @InjectRepository(CameraEntity) private readonly cameras: Repository<CameraEntity>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly connections: ProtectConnections,
    private readonly statuses: CameraStatusWriter,
    private readonly bus: DomainEventBus,
  ) {}

  /** Every controller, by name (case-insensitive). */
  async list(): Promise<ProtectControllerResponseDto[]> {
    const rows = await this.controllers
      .createQueryBuilder('p')
      .orderBy('lower(p.name)', 'ASC')
      .addOrderBy('p.id', 'ASC')
      .getMany();
    return rows.map(toControllerResponse);
  }

  async get(id: string): Promise<ProtectControllerResponseDto> {
    return toControllerResponse(await this.find(id));
  }

  /** Saves the controller and (when enabled) connects to it before answering. */
  async create(dto: CreateProtectControllerDto): Promise<ProtectControllerResponseDto> {
    const saved = await this.dataSource.transaction(async (manager) => {
      await this.lockNames(manager);
      await this.assertNameFree(manager, dto.name);
      const controller = manager.create(ProtectControllerEntity, {
        name: dto.name,
        host: dto.host,
        port: dto.port ?? 443,
        username: dto.username,
        passwordEncrypted: this.secrets.encrypt(dto.password),
        verifyTls: dto.verify_tls ?? false,
        enabled: dto.enabled ?? true,
        status: 'disconnected',
      });
      return manager.save(controller);
    });
    return this.afterChange(saved.id);
  }

  /** Partial update; a change of host, port, credentials or TLS setting reconnects. */
  async update(id: string, dto: UpdateProtectControllerDto): Promise<ProtectControllerResponseDto> {
    await this.dataSource.transaction(async (manager) => {
      // The name lock before the row lock (the order create takes them in); an unknown id is 404, never 409.
      if (dto.name !== undefined) await this.lockNames(manager);
      const controller = await manager.findOne(ProtectControllerEntity, {
        where: { id },
        lock: { mode: 'pessimistic_write' },
      });
      if (!controller) throw new NotFoundError('Protect controller');
      if (dto.name !== undefined) {
        await this.assertNameFree(manager, dto.name, id);
        controller.name = dto.name;
      }
      if (dto.host !== undefined) controller.host = dto.host;
      if (dto.port !== undefined) controller.port = dto.port;
      if (dto.username !== undefined) controller.username = dto.username;
      if (dto.password !== undefined) controller.passwordEncrypted = this.secrets.encrypt(dto.password);
      if (dto.verify_tls !== undefined) controller.verifyTls = dto.verify_tls;
      if (dto.enabled !== undefined) controller.enabled = dto.enabled;
      await manager.save(controller);
    });
    return this.afterChange(id);
  }

  /** Deletes the controller and closes its connection; its cameras (and their events) stay, offline. */
  async remove(id: string): Promise<void> {
    const deleted = await this.controllers.delete({ id });
    if (!deleted.affected) throw new NotFoundError('Protect controller');
    this.bus.publish('protect.controller.changed', { id });
    await this.connections.reconcileController(id);
    const adopted = await this.cameras.find({
      where: { protectControllerId: id },
      select: { id: true, enabled: true },
    });
    for (const camera of adopted)
      this.statuses.write(
        camera.id,
        camera.enabled ? 'offline' : 'stopped',
        camera.enabled ? RELEASE.deleted.cameras : null,
      );
    await Promise.all(adopted.map((camera) => this.statuses.settled(camera.id)));
  }

  /** Tries a console without saving anything; `controller_id` lends a saved controller's password. */
  async test(dto: TestProtectControllerDto): Promise<ProtectTestResponseDto> {
    let password = dto.password;
    if (password === undefined) {
      if (!dto.controller_id)
        throw new ValidationFailedError([
          {
            field: 'body.password',
            message: 'password is required unless controller_id names a saved controller',
          },
        ]);
      const saved = await this.controllers.findOne({ where: { id: dto.controller_id } });
      if (!saved)
        throw new ValidationFailedError([
          {
            field: 'body.controller_id',
            message: 'controller_id does not name an existing Protect controller',
          },
        ]);
      // The stored password goes only to the console it belongs to, never to another host.
      if (saved.host !== dto.host || saved.port !== (dto.port ?? 443) || saved.username !== dto.username)
        throw new ValidationFailedError([
          {
            field: 'body.controller_id',
            message:
              "controller_id lends its password only to a test of the controller's own host, port and username",
          },
        ]);
      password = this.secrets.decrypt(saved.passwordEncrypted);
    }
    return testController({
      host: dto.host,
      port: dto.port ?? 443,
      username: dto.username,
      password,
      verifyTls: dto.verify_tls ?? false,
    });
  }

  /**
   * The console's cameras from its live bootstrap (this instance's connection, or a one-off login when it is
   * connected elsewhere or disabled), with the Vigil camera adopting each.
   */
  async listCameras(id: string): Promise<ProtectCameraDto[]> {
    const controller = await this.find(id);
    let consoleCameras: ProtectCameraConfig[];
    let online: (camera: ProtectCameraConfig) => boolean = (camera) => camera.isConnected !== false;
    const live = this.connections.liveCameras(id);
    if (live) {
      consoleCameras = live.bootstrap;
      online = (camera) => live.online.get(camera.id) ?? camera.isConnected !== false;
    } else {
      const read = await readConsole(savedConnection(controller, this.secrets));
      if (!read.ok) throw new AppError(502, `The Protect console did not answer: ${read.message}`);
      consoleCameras = read.bootstrap.cameras;
    }
    const adopted = await this.cameras.find({
      where: { protectControllerId: id, sourceType: 'protect' },
      select: { id: true, protectCameraId: true },
    });
    const adoptedBy = new Map(adopted.map((camera) => [camera.protectCameraId, camera.id]));
    return consoleCameras
      .map((camera) => ({
        protect_camera_id: camera.id,
        name: camera.name ?? camera.marketName ?? camera.id,
        model: camera.marketName ?? camera.type ?? 'unknown',
        type:
          camera.featureFlags?.isDoorbell || /doorbell/i.test(camera.type ?? '')
            ? ('doorbell' as const)
            : ('camera' as const),
        online: online(camera),
        smart_detect_types: smartTypes(camera.featureFlags?.smartDetectTypes),
        camera_id: adoptedBy.get(camera.id) ?? null,
      }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.protect_camera_id.localeCompare(b.protect_camera_id));
  }

  private async find(id: string): Promise<ProtectControllerEntity> {
    const controller = await this.controllers.findOne({ where: { id } });
    if (!controller) throw new NotFoundError('Protect controller');
    return controller;
  }

  /** Lets the connection follow the change (on whichever instance holds it) before answering. */
  private async afterChange(id: string): Promise<ProtectControllerResponseDto> {
    this.bus.publish('protect.controller.changed', { id });
    await this.connections.reconcileController(id);
    return this.get(id);
  }

  /** Serialises name checks and writes (held until the transaction ends). */
  private async lockNames(manager: EntityManager): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [CONTROLLER_NAME_LOCK]);
  }

  /** Throws 409 when another controller has the name (any letter case); call lockNames first. */
  private async assertNameFree(manager: EntityManager, name: string, exceptId?: string): Promise<void> {
    const query = manager
      .createQueryBuilder(ProtectControllerEntity, 'p')
      .select('p.id')
      .where('lower(p.name) = lower(:name)', { name });
    if (exceptId) query.andWhere('p.id <> :exceptId', { exceptId });
    if (await query.getOne()) throw new ConflictError(`A Protect controller named "${name}" already exists`);
  }
}
