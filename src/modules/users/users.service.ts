import { CredentialCache } from '../../common/auth/credential-cache';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager, IsNull, Repository } from 'typeorm';
import * as bcrypt from 'bcrypt';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { BusinessRuleError, ConflictError, NotFoundError } from '../../common/errors/app-errors';
import { UserSessionEntity } from '../auth/entities/user-session.entity';
import { CreateUserDto, toUserResponse, UpdateUserDto, UserResponseDto } from './dto/user.dto';
import { UserEntity } from './entities/user.entity';

/**
 * Transaction-scoped advisory lock taken first by every update and delete of a user. It serializes the
 * "is there another active admin?" check: with row locks alone, two admins demoting or deleting each
 * other at once lock their own rows and then each other's, and one of them fails with a deadlock.
 */
const USER_CHANGE_LOCK = 0x7669_6731;

@Injectable()
export class UsersService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Users');

  constructor(
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly dataSource: DataSource,
    private readonly credentials: CredentialCache,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * First start: with no users, create `admin` with ADMIN_PASSWORD, or with a random password printed
   * once to stdout (not through the logger). Safe when several instances start together.
   */
  async onApplicationBootstrap(): Promise<void> {
    if ((await this.users.count()) > 0) return;
    const generated = this.config.adminPassword === undefined;
    const password = this.config.adminPassword ?? randomBytes(12).toString('base64url');
    const result = await this.users
      .createQueryBuilder()
      .insert()
      .values({ username: 'admin', passwordHash: await this.hash(password), role: 'admin', isActive: true })
      .orIgnore()
      .execute();
    if ((result.identifiers ?? []).filter(Boolean).length === 0) return;
    this.logger.log({
      msg: 'Created the first user "admin"',
      password_source: generated ? 'generated' : 'ADMIN_PASSWORD',
    });
    if (generated) {
      process.stdout.write(
        `\n  Vigil created the first user.\n    username: admin\n    password: ${password}\n  Log in and change it (POST /api/v1/auth/change-password). It is not shown again.\n\n`,
      );
    }
  }

  hash(password: string): Promise<string> {
    return bcrypt.hash(password, this.config.bcryptRounds);
  }

  async list(): Promise<UserResponseDto[]> {
    const users = await this.users.find({ order: { createdAt: 'ASC', id: 'ASC' } });
    return users.map(toUserResponse);
  }

  async get(id: string): Promise<UserResponseDto> {
    return toUserResponse(await this.find(id));
  }

  async create(dto: CreateUserDto): Promise<UserResponseDto> {
    const username = dto.username.toLowerCase();
    const passwordHash = await this.hash(dto.password);
    const result = await this.users
      .createQueryBuilder()
      .insert()
      .values({ username, passwordHash, role: dto.role, isActive: true })
      .orIgnore()
      .returning('*')
      .execute();
    const row = (result.raw as Record<string, unknown>[])[0];
    if (!row) throw new ConflictError(`A user named "${username}" already exists`);
    return this.get(row.id as string);
  }

  async update(id: string, dto: UpdateUserDto): Promise<UserResponseDto> {
    const passwordHash = dto.password !== undefined ? await this.hash(dto.password) : undefined;
    await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [USER_CHANGE_LOCK]);
      const user = await manager.findOne(UserEntity, { where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!user) throw new NotFoundError('User');
      const losesAdmin =
        user.role === 'admin' &&
        user.isActive &&
        ((dto.role !== undefined && dto.role !== 'admin') || dto.is_active === false);
      if (losesAdmin) await this.assertAnotherActiveAdmin(manager, id);
      if (dto.role !== undefined) user.role = dto.role;
      if (dto.is_active !== undefined) user.isActive = dto.is_active;
      if (passwordHash !== undefined) user.passwordHash = passwordHash;
      await manager.save(user);
      if (passwordHash !== undefined || dto.is_active === false) {
        await manager.update(
          UserSessionEntity,
          { userId: id, revokedAt: IsNull() },
          { revokedAt: new Date() },
        );
      }
    });
    // A changed role, password or state: the user's WebSocket connections are checked again.
    this.credentials.revoke({ user_id: id });
    return this.get(id);
  }

  async remove(id: string): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [USER_CHANGE_LOCK]);
      const user = await manager.findOne(UserEntity, { where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!user) throw new NotFoundError('User');
      if (user.role === 'admin' && user.isActive) await this.assertAnotherActiveAdmin(manager, id);
      await manager.delete(UserEntity, { id });
    });
    this.credentials.revoke({ user_id: id });
  }

  private async assertAnotherActiveAdmin(manager: EntityManager, exceptId: string): Promise<void> {
    // Lock the admins so two concurrent demotions cannot both pass this check.
    const admins = await manager
      .createQueryBuilder(UserEntity, 'u')
      .select('u.id')
      .setLock('pessimistic_write')
      .where('u.role = :role AND u.is_active = true AND u.id <> :id', { role: 'admin', id: exceptId })
      .getMany();
    if (admins.length === 0)
      throw new BusinessRuleError('The last active admin cannot be removed, demoted or deactivated');
  }

  private async find(id: string): Promise<UserEntity> {
    const user = await this.users.findOne({ where: { id } });
    if (!user) throw new NotFoundError('User');
    return user;
  }
}
