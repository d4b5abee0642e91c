import { CredentialCache } from '../../common/auth/credential-cache';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { NotFoundError } from '../../common/errors/app-errors';
import type { Principal } from '../../common/auth/principal';
import {
  ApiKeyCreatedDto,
  ApiKeyResponseDto,
  ApiKeyUsageDto,
  CreateApiKeyDto,
  toApiKeyCreated,
  toApiKeyResponse,
  toApiKeyUsage,
} from './dto/api-key.dto';
import { API_KEY_PATTERN, apiKeyPrefix, generateApiKey, hashApiKey } from './api-key-format';
import { ApiKeyUsageTracker } from './api-key-usage.tracker';
import { ApiKeyEntity, Scope } from './entities/api-key.entity';

type ApiKeyPrincipal = Extract<Principal, { kind: 'api_key' }>;

@Injectable()
export class ApiKeysService {
  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    private readonly usage: ApiKeyUsageTracker,
    private readonly credentials: CredentialCache,
  ) {}

  async create(dto: CreateApiKeyDto, createdBy: Principal): Promise<ApiKeyCreatedDto> {
    const key = generateApiKey();
    const entity = this.keys.create({
      name: dto.name,
      prefix: apiKeyPrefix(key),
      keyHash: hashApiKey(key),
      scopes: [...dto.scopes],
      isActive: true,
      revokedAt: null,
      expiresAt: dto.expires_at ?? null,
      rateLimitPerMinute: dto.rate_limit_per_minute ?? 100,
      createdBy: createdBy.kind === 'user' ? createdBy.userId : null,
    });
    const saved = await this.keys.save(entity);
    return toApiKeyCreated(saved, key);
  }

  async list(includeRevoked: boolean): Promise<ApiKeyResponseDto[]> {
    const keys = await this.keys.find({
      where: includeRevoked ? {} : { isActive: true },
      order: { createdAt: 'DESC', id: 'ASC' },
    });
    return keys.map(toApiKeyResponse);
  }

  async get(id: string): Promise<ApiKeyResponseDto> {
    return toApiKeyResponse(await this.find(id));
  }

  async getUsage(id: string): Promise<ApiKeyUsageDto> {
    return toApiKeyUsage(await this.find(id));
  }

  /** Idempotent: revoking a revoked key succeeds again. Takes effect on the next request. */
  async revoke(id: string): Promise<void> {
    await this.find(id);
    await this.keys
      .createQueryBuilder()
      .update()
      .set({ isActive: false, revokedAt: () => 'COALESCE(revoked_at, now())' })
      .where('id = :id', { id })
      .execute();
    // Open WebSocket connections made with the key close (on every instance).
    this.credentials.revoke({ api_key_id: id });
  }

  /**
   * The request-path check: format, then one indexed lookup by SHA-256. Returns null for a wrong,
   * revoked or expired key. Counts the use (batched, see ApiKeyUsageTracker).
   */
  async authenticate(rawKey: string, ip: string): Promise<ApiKeyPrincipal | null> {
    if (!API_KEY_PATTERN.test(rawKey)) return null;
    const keyHash = hashApiKey(rawKey);
    const cached = this.credentials.key(keyHash);
    if (cached) {
      this.usage.record(cached.apiKeyId, ip);
      return cached;
    }
    const key = await this.keys.findOne({
      select: {
        id: true,
        name: true,
        scopes: true,
        isActive: true,
        expiresAt: true,
        rateLimitPerMinute: true,
      },
      where: { keyHash },
    });
    if (!key || !key.isActive || (key.expiresAt && key.expiresAt.getTime() <= Date.now())) return null;
    this.usage.record(key.id, ip);
    const principal: ApiKeyPrincipal = {
      kind: 'api_key',
      apiKeyId: key.id,
      name: key.name,
      scopes: key.scopes as Scope[],
      rateLimitPerMinute: key.rateLimitPerMinute,
    };
    this.credentials.rememberKey(keyHash, principal, key.expiresAt);
    return principal;
  }

  private async find(id: string): Promise<ApiKeyEntity> {
    const key = await this.keys.findOne({ where: { id } });
    if (!key) throw new NotFoundError('API key');
    return key;
  }
}
