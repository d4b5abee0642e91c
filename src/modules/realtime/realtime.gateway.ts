import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleDestroy,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Express, Request } from 'express';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { AuthGuard } from '../../common/auth/auth.guard';
import { credentialsOf } from '../../common/auth/credentials';
import type { Principal } from '../../common/auth/principal';
import { toErrorBody } from '../../common/errors/http-error.filter';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { DomainEventBus } from './domain-event-bus';
import type { DomainEventMap, DomainMessage } from './domain-events';
import {
  allowedEventTypes,
  cameraIdOf,
  type ClientEventType,
  effectiveSubscription,
  isClientEventType,
  matches,
  parseClientMessage,
  type Subscription,
  subscriptionAck,
  type SubscriptionRequest,
} from './realtime-protocol';
import { authRequestOf, cookieOriginAllowed, refuseUpgrade } from './upgrade-request';

/** The WebSocket endpoints (decisions.md §5). */
export const WEBSOCKET_PATHS: readonly string[] = ['/ws', '/api/v1/ws'];

/** Close codes: credentials ended (4401, like HTTP 401), shutdown (1001), internal failure (1011). */
export const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_INTERNAL_ERROR = 1011;

const DEFAULT_PING_INTERVAL_MS = 30_000;
/** Largest client message accepted (a subscribe with 1,000 camera ids is about 40 KiB). */
const MAX_CLIENT_MESSAGE_BYTES = 64 * 1024;
/** A client that lets this much pile up unread is dropped instead of growing the server's memory. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** How long shutdown waits for clients to answer the close frame before cutting them off. */
const SHUTDOWN_GRACE_MS = 2_000;
/** Longest setTimeout delay Node accepts; later expiries re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Revocations remembered for upgrades that were authenticating while they arrived. */
const REVOCATION_MEMORY = 256;

type Revocation = DomainEventMap['auth.revoked'];

interface Client {
  ws: WebSocket;
  principal: Principal;
  /** The upgrade's credentials, to authenticate again when the user changes. */
  authRequest: Request;
  allowed: ClientEventType[];
  request: SubscriptionRequest;
  subscription: Subscription;
  /** Answered the last server ping (or sent something) since it was sent. */
  alive: boolean;
  /** When the key or session ends (epoch ms), if it does. */
  expiresAt: number | null;
  expiryTimer?: NodeJS.Timeout;
}

/**
 * The WebSocket gateway at /ws and /api/v1/ws. It handles the HTTP server's `upgrade` event itself (with
 * `ws` in noServer mode) rather than through a Nest gateway, because the upgrade must be authenticated
 * before it is accepted and refused with a real HTTP 401/403/404/429 in the API's error envelope, on two
 * paths, with the client protocol of decisions.md §5 (not Nest's `{event, data}` messages).
 *
 * It subscribes once to the DomainEventBus, which delivers every instance's messages (Redis pub/sub), and
 * forwards each client kind to the clients whose scopes and subscription allow it; internal kinds
 * (`settings.changed`, `auth.revoked`) are never sent. `auth.revoked` closes the matching connections.
 */
@Injectable()
export class RealtimeGateway implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('RealtimeGateway');
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_CLIENT_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });
  private readonly clients = new Set<Client>();
  private server: Server | undefined;
  private unsubscribe: (() => void) | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private pingIntervalMs = DEFAULT_PING_INTERVAL_MS;
  private closing: Promise<void> | undefined;
  private revocationSeq = 0;
  private readonly revocations: { seq: number; data: Revocation }[] = [];
  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    void this.upgrade(req, socket, head);

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly bus: DomainEventBus,
    private readonly guard: AuthGuard,
    private readonly apiKeys: ApiKeysService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    this.server.on('upgrade', this.onUpgrade);
    this.unsubscribe = this.bus.subscribe((message) => this.onBusMessage(message));
    this.startPings();
  }

  /** Nest's close(): the connections end (1001) before the HTTP server and the database close. */
  async onModuleDestroy(): Promise<void> {
    await this.shutdown();
  }

  onApplicationShutdown(): void {
    this.server?.off('upgrade', this.onUpgrade);
    this.wss.close();
  }

  /** Number of open connections on this instance. */
  get connectionCount(): number {
    return this.clients.size;
  }

  /** The server-ping period (30 s); tests shorten it. Restarts the timer. */
  setPingInterval(ms: number): void {
    this.pingIntervalMs = ms;
    if (this.pingTimer) this.startPings();
  }

  /**
   * Refuses new upgrades (503), stops the pings, closes every connection with 1001 and waits (at most
   * SHUTDOWN_GRACE_MS, then cuts them off). Idempotent; main.ts calls it before draining HTTP requests,
   * because open WebSockets would otherwise keep the HTTP server from closing.
   */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.pingTimer);
      this.pingTimer = undefined;
      this.unsubscribe?.();
      const closed = [...this.clients].map(
        (client) =>
          new Promise<void>((resolve) => {
            if (client.ws.readyState === WebSocket.CLOSED) return resolve();
            client.ws.once('close', () => resolve());
            this.close(client, CLOSE_GOING_AWAY, 'Server shutting down');
          }),
      );
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(closed),
        new Promise<void>((resolve) => (grace = setTimeout(resolve, SHUTDOWN_GRACE_MS))),
      ]);
      clearTimeout(grace);
      for (const client of this.clients) client.ws.terminate();
      this.clients.clear();
    })();
    return this.closing;
  }

  // ---- upgrade ------------------------------------------------------------------------------------

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return refuseUpgrade(socket, { detail: 'Not Found', status_code: 404 });
    }
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/$/, '') : url.pathname;
    if (!WEBSOCKET_PATHS.includes(path))
      return refuseUpgrade(socket, { detail: 'Not Found', status_code: 404 });
    if (this.closing) {
      return refuseUpgrade(socket, { detail: 'The service is shutting down', status_code: 503 });
    }

    const app = this.adapterHost.httpAdapter.getInstance<Express>();
    const authRequest = authRequestOf(req, url.searchParams, app);
    const seqAtStart = this.revocationSeq;
    let principal: Principal;
    let expiresAt: number | null;
    try {
      const credentials = credentialsOf(authRequest);
      if (
        credentials.apiKey === undefined &&
        authRequest.headers.authorization === undefined &&
        credentials.token !== undefined &&
        !cookieOriginAllowed(req, this.config.corsOrigins)
      ) {
        return refuseUpgrade(socket, {
          detail: 'Origin not allowed to use the session cookie; pass token= or api_key= instead',
          status_code: 403,
        });
      }
      principal = await this.guard.authenticate(authRequest);
      if (allowedEventTypes(principal.scopes).length === 0) {
        return refuseUpgrade(
          socket,
          {
            detail: 'Insufficient permissions. Required scope: read:events or read:cameras',
            status_code: 403,
          },
          {},
          authRequest.rateLimit,
        );
      }
      expiresAt = await this.expiryOf(principal, credentials.token);
    } catch (error) {
      const { body, headers } = toErrorBody(error);
      if (body.status_code >= 500) {
        this.logger.error({ msg: 'WebSocket upgrade failed', error: (error as Error).message });
      }
      return refuseUpgrade(socket, body, headers, authRequest.rateLimit);
    }
    if (this.closing) {
      return refuseUpgrade(socket, { detail: 'The service is shutting down', status_code: 503 });
    }
    if (socket.destroyed) return;

    // Answers 400 itself when the request is not a valid WebSocket handshake.
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const client = this.register(ws, principal, authRequest, expiresAt);
      // Revocations that arrived while this upgrade was being authenticated apply to it too.
      const missed = this.revocationSeq - seqAtStart;
      if (missed > this.revocations.length) void this.recheck(client);
      else
        for (const r of this.revocations.slice(this.revocations.length - missed)) this.revoke(client, r.data);
    });
  }

  /** When the credentials end: the key's expires_at, or the session token's `exp`. */
  private async expiryOf(principal: Principal, token: string | undefined): Promise<number | null> {
    if (principal.kind === 'api_key') {
      const key = await this.apiKeys.get(principal.apiKeyId);
      return key.expires_at ? Date.parse(key.expires_at) : null;
    }
    try {
      const claims = JSON.parse(Buffer.from(String(token).split('.')[1], 'base64url').toString('utf8')) as {
        exp?: unknown;
      };
      return typeof claims.exp === 'number' ? claims.exp * 1000 : null;
    } catch {
      return null;
    }
  }

  private register(
    ws: WebSocket,
    principal: Principal,
    authRequest: Request,
    expiresAt: number | null,
  ): Client {
    const allowed = allowedEventTypes(principal.scopes);
    const request: SubscriptionRequest = { types: null, cameraIds: null };
    const client: Client = {
      ws,
      principal,
      authRequest,
      allowed,
      request,
      subscription: effectiveSubscription(request, allowed),
      alive: true,
      expiresAt,
    };
    this.clients.add(client);
    ws.on('pong', () => (client.alive = true));
    ws.on('message', (data, isBinary) => this.onClientMessage(client, data, isBinary));
    ws.on('error', (error) => this.logger.debug({ msg: 'WebSocket client error', error: error.message }));
    ws.once('close', () => {
      clearTimeout(client.expiryTimer);
      this.clients.delete(client);
    });
    this.armExpiry(client);
    return client;
  }

  private armExpiry(client: Client): void {
    clearTimeout(client.expiryTimer);
    if (client.expiresAt === null) return;
    const delay = client.expiresAt - Date.now();
    if (delay <= 0) {
      this.close(
        client,
        CLOSE_UNAUTHORIZED,
        client.principal.kind === 'api_key' ? 'API key expired' : 'Session expired',
      );
      return;
    }
    client.expiryTimer = setTimeout(() => this.armExpiry(client), Math.min(delay, MAX_TIMER_MS));
    client.expiryTimer.unref();
  }

  // ---- client messages ----------------------------------------------------------------------------

  private onClientMessage(client: Client, data: RawData, isBinary: boolean): void {
    client.alive = true;
    if (isBinary) return this.sendError(client, 'Binary messages are not supported; send JSON text');
    const text = (
      Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)
    ).toString('utf8');
    const message = parseClientMessage(text);
    if (message.kind === 'ping') return this.sendText(client, 'pong');
    if (message.kind === 'invalid') return this.sendError(client, message.detail);
    client.request = message.request;
    client.subscription = effectiveSubscription(message.request, client.allowed);
    this.sendJson(client, 'subscribed', subscriptionAck(client.subscription));
  }

  private sendError(client: Client, detail: string): void {
    this.sendJson(client, 'error', { detail });
  }

  private sendJson(client: Client, type: string, data: unknown): void {
    this.sendText(client, JSON.stringify({ type, data, timestamp: new Date().toISOString() }));
  }

  private sendText(client: Client, frame: string | Buffer): void {
    const { ws } = client;
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.logger.warn({ msg: 'Dropping a WebSocket client that does not read its messages' });
      ws.terminate();
      return;
    }
    ws.send(frame, { binary: false });
  }

  // ---- bus ----------------------------------------------------------------------------------------

  private onBusMessage(message: DomainMessage): void {
    if (message.type === 'auth.revoked') {
      this.onRevoked(message.data as Revocation);
      return;
    }
    if (!isClientEventType(message.type)) return; // internal kinds are never sent
    const type = message.type;
    const cameraId = cameraIdOf(message);
    let frame: Buffer | undefined;
    for (const client of this.clients) {
      if (!matches(client.subscription, type, cameraId)) continue;
      // Serialised once per message, whatever the number of clients.
      frame ??= Buffer.from(JSON.stringify({ type, data: message.data, timestamp: message.timestamp }));
      this.sendText(client, frame);
    }
  }

  private onRevoked(data: Revocation): void {
    this.revocationSeq++;
    this.revocations.push({ seq: this.revocationSeq, data });
    if (this.revocations.length > REVOCATION_MEMORY) this.revocations.shift();
    for (const client of this.clients) this.revoke(client, data);
  }

  /** Applies one revocation to one client: a key or session closes it; a user change re-checks it. */
  private revoke(client: Client, data: Revocation): void {
    const { principal } = client;
    if (principal.kind === 'api_key') {
      if (data.api_key_id === principal.apiKeyId) this.close(client, CLOSE_UNAUTHORIZED, 'API key revoked');
      return;
    }
    if (data.session_id === principal.sessionId) this.close(client, CLOSE_UNAUTHORIZED, 'Session ended');
    else if (data.user_id === principal.userId) void this.recheck(client);
  }

  /** Authenticates the connection again with its original credentials: closes it, or updates its scopes. */
  private async recheck(client: Client): Promise<void> {
    try {
      const principal = await this.guard.authenticate(client.authRequest);
      if (client.ws.readyState !== WebSocket.OPEN) return;
      const allowed = allowedEventTypes(principal.scopes);
      if (allowed.length === 0) {
        this.close(client, CLOSE_UNAUTHORIZED, 'Insufficient permissions');
        return;
      }
      client.principal = principal;
      client.allowed = allowed;
      client.subscription = effectiveSubscription(client.request, allowed);
    } catch (error) {
      const { body } = toErrorBody(error);
      if (body.status_code === 401) this.close(client, CLOSE_UNAUTHORIZED, 'Credentials no longer valid');
      else if (body.status_code !== 429) {
        // Fail closed: a connection whose credentials cannot be checked does not stay open.
        this.logger.error({
          msg: 'Could not re-check WebSocket credentials',
          error: (error as Error).message,
        });
        this.close(client, CLOSE_INTERNAL_ERROR, 'Could not re-check credentials');
      }
    }
  }

  // ---- liveness and closing -----------------------------------------------------------------------

  private startPings(): void {
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => this.pingAll(), this.pingIntervalMs);
    this.pingTimer.unref();
  }

  /** Drops the clients that did not answer the previous ping, then pings the others. */
  private pingAll(): void {
    for (const client of this.clients) {
      if (!client.alive) {
        client.ws.terminate();
        continue;
      }
      client.alive = false;
      if (client.ws.readyState === WebSocket.OPEN) client.ws.ping();
    }
  }

  private close(client: Client, code: number, reason: string): void {
    clearTimeout(client.expiryTimer);
    const { ws } = client;
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason);
  }
}
