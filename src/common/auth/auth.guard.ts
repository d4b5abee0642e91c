import { CanActivate, ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiKeysService } from '../../modules/api-keys/api-keys.service';
import { AuthService } from '../../modules/auth/auth.service';
import { ForbiddenError, TooManyRequestsError, UnauthorizedError } from '../errors/app-errors';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import { ACCESS_POLICY, AccessPolicy } from './access.decorators';
import { hasScope, Principal } from './principal';
import { credentialsOf } from './credentials';

/**
 * The one global guard. Deny by default: a route must declare @Public(), @RequireScope() or
 * @RequireSession(). An `X-API-Key` header alone decides when present (decisions.md §2); API-key
 * requests are counted against the key's per-minute limit before the scope check.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly logger = new Logger('AuthGuard');

  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
    private readonly auth: AuthService,
    private readonly rateLimits: RateLimitService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const policy = this.reflector.getAllAndOverride<AccessPolicy | undefined>(ACCESS_POLICY, [
      context.getHandler(),
      context.getClass(),
    ]);
    const req = context.switchToHttp().getRequest<Request>();
    if (!policy) {
      this.logger.error({ msg: 'Route has no access policy; refusing', path: req.route?.path });
      throw new ForbiddenError('This endpoint has no access policy');
    }
    if (policy.kind === 'public') return true;

    const principal = await this.authenticate(req);
    req.principal = principal;

    if (policy.kind === 'session') {
      if (principal.kind !== 'user') {
        throw new ForbiddenError('This endpoint requires a user session (cookie or bearer token)');
      }
      return true;
    }
    if (!hasScope(principal, policy.scope)) {
      throw new ForbiddenError(`Insufficient permissions. Required scope: ${policy.scope}`);
    }
    return true;
  }

  /** Resolves the caller from the request's credentials (also used by the WebSocket upgrade). */
  async authenticate(req: Request): Promise<Principal> {
    const credentials = credentialsOf(req);
    if (credentials.apiKey !== undefined) {
      const principal = await this.apiKeys.authenticate(credentials.apiKey, req.ip ?? '');
      if (!principal) throw new UnauthorizedError('Invalid or expired API key');
      const limit = await this.rateLimits.consume(principal.apiKeyId, principal.rateLimitPerMinute);
      req.rateLimit = limit;
      if (!limit.allowed) {
        const retryAfter = Math.max(1, Math.ceil((limit.resetAt - Date.now()) / 1000));
        throw new TooManyRequestsError(
          `Rate limit exceeded: ${limit.limit}/minute. Retry after ${retryAfter} seconds.`,
          retryAfter,
        );
      }
      return principal;
    }
    if (credentials.token !== undefined) {
      const principal = await this.auth.authenticateToken(credentials.token);
      if (!principal) throw new UnauthorizedError('Invalid or expired token');
      return principal;
    }
    throw new UnauthorizedError('Not authenticated');
  }
}
