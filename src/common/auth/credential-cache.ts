import { Global, Injectable, Module, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DomainEventBus } from '../../modules/realtime/domain-event-bus';
import type { DomainEventMap } from '../../modules/realtime/domain-events';
import type { Principal } from './principal';

type UserPrincipal = Extract<Principal, { kind: 'user' }>;
type KeyPrincipal = Extract<Principal, { kind: 'api_key' }>;
export type Revocation = DomainEventMap['auth.revoked'];

/** How long a checked credential is trusted without asking the database again. */
export const CREDENTIAL_CACHE_MS = 1_000;
/** Entries kept at most (expired ones are dropped first). */
const MAX_ENTRIES = 10_000;

interface Entry<P> {
  principal: P;
  until: number;
}

/**
 * Credentials checked in the last second (a session by its id, an API key by its hash), so a busy client
 * costs one database lookup a second instead of one a request. Every revocation goes through `revoke`: it
 * forgets the credential here at once and publishes `auth.revoked`, which the other instances (and their
 * WebSocket connections) act on; an instance that misses the message trusts a credential for at most
 * CREDENTIAL_CACHE_MS more (decisions.md §2: revoked keys are refused everywhere within 1 s).
 */
@Injectable()
export class CredentialCache implements OnModuleInit, OnModuleDestroy {
  private readonly sessions = new Map<string, Entry<UserPrincipal>>();
  private readonly keys = new Map<string, Entry<KeyPrincipal & { expiresAt: number | null }>>();
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly bus: DomainEventBus) {}

  onModuleInit(): void {
    this.unsubscribe = this.bus.subscribe((message) => {
      if (message.type === 'auth.revoked') this.forget(message.data as Revocation);
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  session(sessionId: string): UserPrincipal | undefined {
    return fresh(this.sessions, sessionId);
  }

  rememberSession(principal: UserPrincipal): void {
    remember(this.sessions, principal.sessionId, principal);
  }

  /** The key's principal, unless it expired meanwhile. */
  key(keyHash: string): KeyPrincipal | undefined {
    const entry = fresh(this.keys, keyHash);
    if (!entry) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
      this.keys.delete(keyHash);
      return undefined;
    }
    const { expiresAt: _expiresAt, ...principal } = entry;
    return principal;
  }

  rememberKey(keyHash: string, principal: KeyPrincipal, expiresAt: Date | null): void {
    remember(this.keys, keyHash, { ...principal, expiresAt: expiresAt?.getTime() ?? null });
  }

  /** Ends credentials here at once and on every instance (and their WebSocket connections). */
  revoke(revocation: Revocation): void {
    this.forget(revocation);
    this.bus.publish('auth.revoked', revocation);
  }

  private forget(revocation: Revocation): void {
    if (revocation.session_id) this.sessions.delete(revocation.session_id);
    if (revocation.user_id)
      for (const [id, entry] of this.sessions)
        if (entry.principal.userId === revocation.user_id) this.sessions.delete(id);
    if (revocation.api_key_id)
      for (const [hash, entry] of this.keys)
        if (entry.principal.apiKeyId === revocation.api_key_id) this.keys.delete(hash);
  }
}

function fresh<P>(map: Map<string, Entry<P>>, id: string): P | undefined {
  const entry = map.get(id);
  if (!entry) return undefined;
  if (entry.until > Date.now()) return entry.principal;
  map.delete(id);
  return undefined;
}

function remember<P>(map: Map<string, Entry<P>>, id: string, principal: P): void {
  const now = Date.now();
  if (map.size >= MAX_ENTRIES) {
    for (const [key, entry] of map) if (entry.until <= now) map.delete(key);
    if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value as string);
  }
  map.set(id, { principal, until: now + CREDENTIAL_CACHE_MS });
}

@Global()
@Module({ providers: [CredentialCache], exports: [CredentialCache] })
export class CredentialCacheModule {}
