import type { Scope } from '../../modules/api-keys/entities/api-key.entity';
import type { UserRole } from '../../modules/users/entities/user.entity';

/** Who is making a request: a logged-in user (JWT session) or an API key. */
export type Principal =
  | {
      kind: 'user';
      userId: string;
      username: string;
      role: UserRole;
      sessionId: string;
      scopes: readonly Scope[];
    }
  | {
      kind: 'api_key';
      apiKeyId: string;
      name: string;
      scopes: readonly Scope[];
      rateLimitPerMinute: number;
    };

export const ROLE_SCOPES: Record<UserRole, readonly Scope[]> = {
  admin: ['admin'],
  viewer: ['read:events', 'read:cameras'],
};

/** `admin` satisfies every scope (interface.md "Scopes"). */
export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.includes('admin') || principal.scopes.includes(scope);
}
