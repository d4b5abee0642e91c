import { CredentialCache } from '../../common/auth/credential-cache';
import { Inject, Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { InjectRepository } from '@nestjs/typeorm';
import * as bcrypt from 'bcrypt';
import { DataSource, IsNull, Not, Repository } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { BusinessRuleError, TooManyRequestsError, UnauthorizedError } from '../../common/errors/app-errors';
import { Principal, ROLE_SCOPES } from '../../common/auth/principal';
import { WINDOW_COUNTER_STORE, type WindowCounterStore } from '../../common/rate-limit/window-counter.store';
import { toUserResponse, UserResponseDto } from '../users/dto/user.dto';
import { UserEntity, UserRole } from '../users/entities/user.entity';
import { UsersService } from '../users/users.service';
import { ChangePasswordDto, LoginDto, LoginResponseDto } from './dto/auth.dto';
import { UserSessionEntity } from './entities/user-session.entity';

const LOGIN_FAILURES_ALLOWED = 10;
const LOGIN_FAILURE_WINDOW_MS = 15 * 60_000;

interface TokenClaims {
  sub: string;
  sid: string;
}

const isUuid = (value: unknown): value is string =>
  typeof value === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);

type UserPrincipal = Extract<Principal, { kind: 'user' }>;

@Injectable()
export class AuthService {
  /** Compared against when the username is unknown, so timing does not reveal which usernames exist. */
  private readonly dummyHash: Promise<string>;

  constructor(
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    @InjectRepository(UserSessionEntity) private readonly sessions: Repository<UserSessionEntity>,
    private readonly dataSource: DataSource,
    private readonly usersService: UsersService,
    private readonly jwt: JwtService,
    private readonly credentials: CredentialCache,
    @Inject(WINDOW_COUNTER_STORE) private readonly counters: WindowCounterStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.dummyHash = bcrypt.hash('vigil-dummy-password', config.bcryptRounds);
  }

  /** Checks the password, opens a session and signs a JWT that names it. 10 failures per 15 min per username+IP. */
  async login(dto: LoginDto, ip: string): Promise<LoginResponseDto> {
    const username = dto.username.trim().toLowerCase();
    const limiterKey = `login:${username}:${ip}`;
    // Count the attempt before checking the password (one atomic step), so concurrent guesses cannot
    // all pass a check that runs before any of them is counted; a success resets the count below.
    const attempts = await this.counters.hit(limiterKey, LOGIN_FAILURE_WINDOW_MS);
    if (attempts.count > LOGIN_FAILURES_ALLOWED) {
      const retryAfter = Math.max(1, Math.ceil((attempts.resetAt - Date.now()) / 1000));
      throw new TooManyRequestsError(
        `Too many failed login attempts. Retry after ${retryAfter} seconds.`,
        retryAfter,
      );
    }
    const user = await this.users.findOne({ where: { username } });
    const valid = await bcrypt.compare(dto.password, user?.passwordHash ?? (await this.dummyHash));
    if (!user || !valid || !user.isActive) throw new UnauthorizedError('Invalid credentials');
    await this.counters.reset(limiterKey);

    const expiresAt = new Date(Date.now() + this.config.jwtExpiresInSeconds * 1000);
    const session = await this.sessions.save(
      this.sessions.create({ userId: user.id, expiresAt, revokedAt: null }),
    );
    user.lastLoginAt = new Date();
    await this.users.update(user.id, { lastLoginAt: user.lastLoginAt });
    // Sessions that ended more than a day ago are of no further use.
    await this.sessions
      .createQueryBuilder()
      .delete()
      .where("expires_at < now() - interval '1 day'")
      .execute();
    const claims: TokenClaims = { sub: user.id, sid: session.id };
    const accessToken = await this.jwt.signAsync(claims, { expiresIn: this.config.jwtExpiresInSeconds });
    return {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: this.config.jwtExpiresInSeconds,
      user: toUserResponse(user),
    };
  }

  async logout(principal: UserPrincipal): Promise<void> {
    await this.sessions.update({ id: principal.sessionId, revokedAt: IsNull() }, { revokedAt: new Date() });
    this.credentials.revoke({ session_id: principal.sessionId });
  }

  async me(principal: UserPrincipal): Promise<UserResponseDto> {
    return this.usersService.get(principal.userId);
  }

  /** Changes the caller's password and ends their other sessions; the current one stays valid. */
  async changePassword(principal: UserPrincipal, dto: ChangePasswordDto): Promise<void> {
    const user = await this.users.findOneOrFail({ where: { id: principal.userId } });
    if (!(await bcrypt.compare(dto.current_password, user.passwordHash))) {
      throw new BusinessRuleError('Current password is incorrect');
    }
    const passwordHash = await this.usersService.hash(dto.new_password);
    await this.dataSource.transaction(async (manager) => {
      await manager.update(UserEntity, { id: user.id }, { passwordHash });
      await manager.update(
        UserSessionEntity,
        { userId: user.id, id: Not(principal.sessionId), revokedAt: IsNull() },
        { revokedAt: new Date() },
      );
    });
    this.credentials.revoke({ user_id: user.id });
  }

  /**
   * Verifies a JWT and its session (one query, or none when the session was checked in the last second; see
   * CredentialCache): null when invalid, expired, logged out or the user is inactive.
   */
  async authenticateToken(token: string): Promise<UserPrincipal | null> {
    let claims: TokenClaims;
    try {
      claims = await this.jwt.verifyAsync<TokenClaims & object>(token, { algorithms: ['HS256'] });
    } catch {
      return null;
    }
    if (!isUuid(claims.sid) || !isUuid(claims.sub)) return null;
    const cached = this.credentials.session(claims.sid);
    if (cached && cached.userId === claims.sub) return cached;
    const rows: { id: string; username: string; role: UserRole }[] = await this.dataSource.query(
      `SELECT u.id, u.username, u.role
         FROM user_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = $1 AND s.user_id = $2 AND s.revoked_at IS NULL AND s.expires_at > now() AND u.is_active`,
      [claims.sid, claims.sub],
    );
    const row = rows[0];
    if (!row) return null;
    const principal: UserPrincipal = {
      kind: 'user',
      userId: row.id,
      username: row.username,
      role: row.role,
      sessionId: claims.sid,
      scopes: ROLE_SCOPES[row.role],
    };
    this.credentials.rememberSession(principal);
    return principal;
  }
}
