import { createHmac, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainEventMap, DomainEventType } from '../src/modules/realtime/domain-events';
import { RealtimeGateway } from '../src/modules/realtime/realtime.gateway';
import { startTestApp, TestApp } from './support/test-app';

/** The WebSocket at /ws and /api/v1/ws (decisions.md §5), against the real app over real sockets. */

const REDIS_URL = process.env.VIGIL_TEST_REDIS_URL ?? '';
/** Set by the global set-up when Redis answers (always in CI). */
const describeWithRedis = REDIS_URL ? describe : describe.skip;

const PATHS = ['/ws', '/api/v1/ws'];

interface ServerMessage {
  type: string;
  data: Record<string, unknown>;
  timestamp: string;
}

interface Refusal {
  status: number;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** A connected client that records every message (JSON parsed; plain text kept as text). */
class WsClient {
  readonly messages: ServerMessage[] = [];
  readonly texts: string[] = [];
  pings = 0;
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const text = (data as Buffer).toString('utf8');
      if (!isBinary && text.startsWith('{')) this.messages.push(JSON.parse(text) as ServerMessage);
      else this.texts.push(text);
      for (const wake of this.waiters.splice(0)) wake();
    });
    ws.on('ping', () => this.pings++);
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString('utf8') });
        for (const wake of this.waiters.splice(0)) wake();
      }),
    );
  }

  /** Opens a connection; rejects with the HTTP refusal (status, headers, parsed body) if refused. */
  static open(url: string, options: WebSocket.ClientOptions = {}): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, options);
      const client = new WsClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (req, res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (raw += chunk));
        res.on('end', () => {
          let body: unknown = raw;
          try {
            body = JSON.parse(raw);
          } catch {
            // not JSON: keep the text
          }
          reject(
            Object.assign(new Error(`refused ${res.statusCode}`), {
              refusal: { status: res.statusCode ?? 0, headers: res.headers, body } satisfies Refusal,
            }),
          );
          req.destroy();
        });
      });
      ws.once('error', (error) => reject(error));
    });
  }

  /** Waits for the first recorded message that satisfies `predicate`. */
  async next(predicate: (m: ServerMessage) => boolean, timeoutMs = 3000): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(predicate);
      if (found) return found;
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error('connection closed while waiting');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Waits for the next text frame. */
  async nextText(timeoutMs = 3000): Promise<string> {
    const seen = this.texts.length;
    const deadline = Date.now() + timeoutMs;
    while (this.texts.length === seen) {
      if (Date.now() > deadline) throw new Error('no text message');
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.texts[seen];
  }

  send(value: unknown): void {
    this.ws.send(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Sends a subscribe action and returns its ack. */
  async subscribe(body: Record<string, unknown>): Promise<ServerMessage> {
    const before = this.messages.length;
    this.send({ action: 'subscribe', ...body });
    return this.next((m) => this.messages.indexOf(m) >= before && m.type === 'subscribed');
  }

  /** Types received, in order, excluding acks and errors. */
  types(): string[] {
    return this.messages.filter((m) => !['subscribed', 'error'].includes(m.type)).map((m) => m.type);
  }

  close(): void {
    this.ws.close();
  }
}

async function refusal(url: string, options: WebSocket.ClientOptions = {}): Promise<Refusal> {
  try {
    const client = await WsClient.open(url, options);
    client.close();
  } catch (error) {
    const refused = (error as { refusal?: Refusal }).refusal;
    if (refused) return refused;
    throw error;
  }
  throw new Error(`${url} was accepted`);
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const wsUrl = (t: TestApp, path: string, query = '') => `${t.baseUrl.replace(/^http/, 'ws')}${path}${query}`;

/** Realistic payloads for each kind. */
function eventRecord(cameraId: string, id = randomUUID()): DomainEventMap['event.created'] {
  return {
    id,
    camera_id: cameraId,
    camera_name: 'Front door',
    timestamp: new Date().toISOString(),
    detection_type: 'person',
    objects_detected: ['person'],
    confidence: 91,
    description: 'A person walks up to the door.',
    description_status: 'complete',
  };
}

function cameraStatus(cameraId: string): DomainEventMap['camera.status'] {
  return {
    camera_id: cameraId,
    camera_name: 'Front door',
    status: 'running',
    previous_status: 'starting',
    status_message: null,
  };
}

describe('WebSocket (e2e)', () => {
  let t: TestApp;
  let bus: DomainEventBus;
  let adminToken: string;
  const open: WsClient[] = [];

  const publish = <K extends DomainEventType>(type: K, data: DomainEventMap[K]) => bus.publish(type, data);
  async function connect(path: string, query = '', options: WebSocket.ClientOptions = {}) {
    const client = await WsClient.open(wsUrl(t, path, query), options);
    open.push(client);
    return client;
  }
  /** Publishes an admin-visible sentinel and waits for it: everything published before it has arrived. */
  async function settle(...clients: WsClient[]) {
    const id = randomUUID();
    publish('event.created', eventRecord(randomUUID(), id));
    await Promise.all(clients.map((c) => c.next((m) => m.data.id === id)));
  }

  beforeAll(async () => {
    t = await startTestApp();
    bus = t.app.get(DomainEventBus);
    adminToken = await t.adminToken();
  });
  afterEach(() => {
    for (const client of open.splice(0)) client.close();
  });
  afterAll(() => t.close());

  describe('the upgrade', () => {
    it.each(PATHS)('refuses %s without credentials with HTTP 401 and the error envelope', async (path) => {
      const res = await refusal(wsUrl(t, path));
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({ detail: 'Not authenticated', status_code: 401 });
    });

    it.each(PATHS)('refuses %s with bad credentials of every kind with HTTP 401', async (path) => {
      const badKey = 'vgl_' + 'x'.repeat(40);
      const cases: [string, WebSocket.ClientOptions, string][] = [
        ['', { headers: { 'X-API-Key': badKey } }, 'Invalid or expired API key'],
        [`?api_key=${badKey}`, {}, 'Invalid or expired API key'],
        ['', { headers: { Authorization: 'Bearer not.a.jwt' } }, 'Invalid or expired token'],
        ['?token=not.a.jwt', {}, 'Invalid or expired token'],
        ['', { headers: { Cookie: 'vigil_access_token=not.a.jwt' } }, 'Invalid or expired token'],
      ];
      for (const [query, options, detail] of cases) {
        const res = await refusal(wsUrl(t, path, query), options);
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ detail, status_code: 401 });
      }
    });

    it('lets a bad X-API-Key decide even when a valid token is also presented', async () => {
      const res = await refusal(wsUrl(t, '/ws', `?token=${adminToken}`), {
        headers: { 'X-API-Key': 'vgl_' + 'y'.repeat(40) },
      });
      expect(res.status).toBe(401);
    });

    it('answers unknown paths with 404, even with valid credentials', async () => {
      for (const path of ['/wss', '/api/v1/ws/extra', '/api/v2/ws', '/']) {
        const res = await refusal(wsUrl(t, path, `?token=${adminToken}`));
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ detail: 'Not Found', status_code: 404 });
      }
    });

    it.each(PATHS)('accepts %s with each kind of credential', async (path) => {
      const { key } = await t.createApiKey({ name: `ws-key-${path}`, scopes: ['read:events'] });
      const clients = [
        await connect(path, '', { headers: { Cookie: `vigil_access_token=${adminToken}` } }),
        await connect(path, '', { headers: { Authorization: `Bearer ${adminToken}` } }),
        await connect(path, '', { headers: { 'X-API-Key': key } }),
        await connect(path, `?token=${encodeURIComponent(adminToken)}`),
        await connect(path, `?api_key=${key}`),
      ];
      // Each one is a working connection that receives events.
      const record = eventRecord(randomUUID());
      publish('event.created', record);
      for (const client of clients) {
        const message = await client.next((m) => m.data.id === record.id);
        expect(Object.keys(message).sort()).toEqual(['data', 'timestamp', 'type']);
        expect(message.type).toBe('event.created');
        expect(message.data).toEqual(record);
        expect(new Date(message.timestamp).toISOString()).toBe(message.timestamp);
      }
    });

    it('refuses a key whose scopes allow no WebSocket kind with 403', async () => {
      const { key } = await t.createApiKey({ name: 'ws-writer', scopes: ['write:cameras'] });
      const res = await refusal(wsUrl(t, '/ws', `?api_key=${key}`));
      expect(res.status).toBe(403);
      expect(res.body).toEqual({
        detail: 'Insufficient permissions. Required scope: read:events or read:cameras',
        status_code: 403,
      });
    });

    it("counts the upgrade against the key's rate limit (429 with Retry-After)", async () => {
      const { key } = await t.createApiKey({
        name: 'ws-limited',
        scopes: ['read:events'],
        rate_limit_per_minute: 1,
      });
      await connect('/ws', `?api_key=${key}`);
      const res = await refusal(wsUrl(t, '/ws', `?api_key=${key}`));
      expect(res.status).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.headers['x-ratelimit-limit']).toBe('1');
      expect(res.headers['x-ratelimit-remaining']).toBe('0');
      expect((res.body as { detail: string }).detail).toMatch(/^Rate limit exceeded: 1\/minute/);
    });

    it('counts the upgrade as one use of the key, with the client address (X-Forwarded-For ignored)', async () => {
      const { key, id } = await t.createApiKey({ name: 'ws-usage', scopes: ['read:events'] });
      await connect('/ws', `?api_key=${key}`, { headers: { 'X-Forwarded-For': '203.0.113.9' } });
      await new Promise((r) => setTimeout(r, 1000));
      const usage = await t.http
        .get(`/api/v1/api-keys/${id}/usage`)
        .set('Authorization', `Bearer ${adminToken}`)
        .expect(200);
      expect(usage.body).toMatchObject({ usage_count: 1, last_used_ip: '127.0.0.1' });
    });

    it('refuses the session cookie from a foreign Origin, accepts it from its own', async () => {
      const cookie = `vigil_access_token=${adminToken}`;
      const foreign = await refusal(wsUrl(t, '/ws'), {
        headers: { Cookie: cookie, Origin: 'http://evil.example' },
      });
      expect(foreign.status).toBe(403);
      await connect('/ws', '', { headers: { Cookie: cookie, Origin: t.baseUrl } });
      // Explicit credentials are not ambient: any origin may use them.
      await connect('/ws', `?token=${adminToken}`, { headers: { Origin: 'http://evil.example' } });
    });
  });

  describe('delivery', () => {
    it('sends each client only the kinds its scopes allow', async () => {
      const events = await t.createApiKey({ name: 'ws-events', scopes: ['read:events'] });
      const cameras = await t.createApiKey({ name: 'ws-cameras', scopes: ['read:cameras'] });
      const eventsClient = await connect('/ws', `?api_key=${events.key}`);
      const camerasClient = await connect('/api/v1/ws', `?api_key=${cameras.key}`);
      const adminClient = await connect('/ws', `?token=${adminToken}`);
      const cameraId = randomUUID();
      const eventId = randomUUID();
      publish('event.created', eventRecord(cameraId, eventId));
      publish('event.updated', eventRecord(cameraId, eventId));
      publish('event.deleted', { id: eventId, camera_id: cameraId });
      publish('notification.new', { id: randomUUID(), camera_id: cameraId, title: 'Person at the door' });
      publish('camera.status', cameraStatus(cameraId));
      publish('camera.updated', { id: cameraId, name: 'Front door', status: 'running' });
      // Sentinels each client may receive: when they arrive, everything before them has too.
      const last = randomUUID();
      publish('camera.updated', { id: last, name: 'Back yard' });
      publish('event.created', eventRecord(randomUUID(), last));
      await Promise.all([
        eventsClient.next((m) => m.data.id === last),
        camerasClient.next((m) => m.data.id === last),
      ]);
      await adminClient.next((m) => m.type === 'event.created' && m.data.id === last);

      expect(eventsClient.types()).toEqual([
        'event.created',
        'event.updated',
        'event.deleted',
        'notification.new',
        'event.created',
      ]);
      expect(camerasClient.types()).toEqual(['camera.status', 'camera.updated', 'camera.updated']);
      expect(adminClient.types()).toEqual([
        'event.created',
        'event.updated',
        'event.deleted',
        'notification.new',
        'camera.status',
        'camera.updated',
        'camera.updated',
        'event.created',
      ]);
      expect(camerasClient.messages[0].data).toEqual(cameraStatus(cameraId));
    });

    it('never delivers the internal kinds', async () => {
      const client = await connect('/ws', `?token=${adminToken}`);
      publish('settings.changed', { keys: ['ai_providers'] });
      publish('auth.revoked', { user_id: randomUUID() });
      publish('auth.revoked', { api_key_id: randomUUID() });
      await settle(client);
      expect(client.types()).toEqual(['event.created']);
    });

    it('narrows by type with subscribe and acknowledges what it will send', async () => {
      const client = await connect('/ws', `?token=${adminToken}`);
      const ack = await client.subscribe({ types: ['camera.status', 'event.deleted', 'camera.status'] });
      expect(Object.keys(ack).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(ack.data).toEqual({
        types: ['event.deleted', 'camera.status'],
        camera_ids: [],
        ignored_types: [],
      });
      const cameraId = randomUUID();
      publish('event.created', eventRecord(cameraId));
      publish('camera.updated', { id: cameraId, name: 'x' });
      publish('event.deleted', { id: randomUUID(), camera_id: cameraId });
      publish('camera.status', cameraStatus(cameraId));
      await client.next((m) => m.type === 'camera.status');
      expect(client.types()).toEqual(['event.deleted', 'camera.status']);

      // An empty list (or none) means everything again.
      const reset = await client.subscribe({ types: [] });
      expect(reset.data.types).toEqual([
        'event.created',
        'event.updated',
        'event.deleted',
        'notification.new',
        'camera.status',
        'camera.updated',
        'controller.status',
      ]);
      await settle(client);
      expect(client.types().at(-1)).toBe('event.created');
    });

    it('narrows by camera: event.*, camera.status (camera_id) and camera.updated (id)', async () => {
      const client = await connect('/api/v1/ws', `?token=${adminToken}`);
      const mine = randomUUID();
      const other = randomUUID();
      const ack = await client.subscribe({ camera_ids: [mine.toUpperCase()] });
      expect(ack.data.camera_ids).toEqual([mine]);
      expect((ack.data.types as string[]).length).toBe(7);
      const kept = [randomUUID(), randomUUID()];
      publish('event.created', eventRecord(other));
      publish('event.created', eventRecord(mine, kept[0]));
      publish('event.updated', eventRecord(other));
      publish('camera.status', cameraStatus(other));
      publish('camera.status', cameraStatus(mine));
      publish('camera.updated', { id: other, name: 'other' });
      publish('camera.updated', { id: mine, name: 'mine' });
      publish('event.deleted', { id: kept[1], camera_id: mine });
      await client.next((m) => m.data.id === kept[1]);
      expect(client.types()).toEqual(['event.created', 'camera.status', 'camera.updated', 'event.deleted']);
      for (const m of client.messages.filter((x) => x.type !== 'subscribed')) {
        expect(m.data.camera_id ?? m.data.id).toBe(mine);
      }
    });

    it('combines both filters, and ignores (and reports) kinds the scopes do not allow', async () => {
      const cameras = await t.createApiKey({ name: 'ws-cam-only', scopes: ['read:cameras'] });
      const client = await connect('/ws', `?api_key=${cameras.key}`);
      const mine = randomUUID();
      const ack = await client.subscribe({ types: ['event.created', 'camera.status'], camera_ids: [mine] });
      expect(ack.data).toEqual({
        types: ['camera.status'],
        camera_ids: [mine],
        ignored_types: ['event.created'],
      });
      publish('event.created', eventRecord(mine));
      publish('camera.updated', { id: mine, name: 'not subscribed' });
      publish('camera.status', cameraStatus(randomUUID()));
      publish('camera.status', cameraStatus(mine));
      await client.next((m) => m.type === 'camera.status');
      expect(client.types()).toEqual(['camera.status']);
      expect(client.messages.at(-1)?.data.camera_id).toBe(mine);
    });

    it('answers invalid messages with an error and keeps the connection and the subscription', async () => {
      const client = await connect('/ws', `?token=${adminToken}`);
      await client.subscribe({ types: ['camera.status'] });
      const invalid: [unknown, RegExp][] = [
        ['hello', /JSON objects/],
        ['[1,2]', /JSON objects/],
        [{ types: ['camera.status'] }, /Missing "action"/],
        [{ action: 'unsubscribe' }, /Unknown action "unsubscribe"/],
        [{ action: 'subscribe', types: 'camera.status' }, /"types" must be an array/],
        [{ action: 'subscribe', types: ['camera.exploded'] }, /Unknown type\(s\): "camera.exploded"/],
        [{ action: 'subscribe', camera_ids: ['../etc'] }, /must be UUIDs/],
        [{ action: 'subscribe', camera_ids: [42] }, /"camera_ids" must be an array/],
        [{ action: 'subscribe', camera: [] }, /Unknown field\(s\): camera/],
      ];
      for (const [message, detail] of invalid) {
        const before = client.messages.length;
        client.send(message);
        const error = await client.next((m) => client.messages.indexOf(m) >= before && m.type === 'error');
        expect(error.data).toEqual({ detail: expect.stringMatching(detail) });
      }
      client.ws.send(Buffer.from([1, 2, 3]), { binary: true });
      await client.next((m) => m.type === 'error' && /Binary/.test(String(m.data.detail)));
      // Still open, still subscribed to camera.status only.
      publish('event.created', eventRecord(randomUUID()));
      publish('camera.status', cameraStatus(randomUUID()));
      await client.next((m) => m.type === 'camera.status');
      expect(client.types()).toEqual(['camera.status']);
    });

    it('answers the text ping with pong', async () => {
      const client = await connect('/ws', `?token=${adminToken}`);
      client.send('ping');
      expect(await client.nextText()).toBe('pong');
      client.send('ping');
      expect(await client.nextText()).toBe('pong');
      expect(client.messages).toEqual([]);
    });
  });

  describe('liveness', () => {
    afterEach(() => t.app.get(RealtimeGateway).setPingInterval(30_000));

    it('pings clients and drops the ones that do not answer', async () => {
      t.app.get(RealtimeGateway).setPingInterval(100);
      const healthy = await connect('/ws', `?token=${adminToken}`);
      const dead = await connect('/ws', `?token=${adminToken}`, { autoPong: false });
      const closed = await dead.closed;
      expect(closed.code).toBe(1006); // terminated, no close frame
      expect(dead.pings).toBeGreaterThanOrEqual(1);
      await new Promise((r) => setTimeout(r, 300));
      expect(healthy.ws.readyState).toBe(WebSocket.OPEN);
      expect(healthy.pings).toBeGreaterThanOrEqual(3);
    });
  });

  describe('credentials that end', () => {
    it("closes a revoked key's sockets (4401) and refuses it afterwards", async () => {
      const revoked = await t.createApiKey({ name: 'ws-revoke', scopes: ['read:events'] });
      const kept = await t.createApiKey({ name: 'ws-keep', scopes: ['read:events'] });
      const a = await connect('/ws', `?api_key=${revoked.key}`);
      const b = await connect('/api/v1/ws', '', { headers: { 'X-API-Key': revoked.key } });
      const other = await connect('/ws', `?api_key=${kept.key}`);
      await t.http
        .delete(`/api/v1/api-keys/${revoked.id}`)
        .set('Authorization', `Bearer ${adminToken}`)
        .expect(204);
      expect(await a.closed).toEqual({ code: 4401, reason: 'API key revoked' });
      expect(await b.closed).toEqual({ code: 4401, reason: 'API key revoked' });
      await settle(other);
      expect(other.ws.readyState).toBe(WebSocket.OPEN);
      expect((await refusal(wsUrl(t, '/ws', `?api_key=${revoked.key}`))).status).toBe(401);
    });

    it("closes a logged-out session's sockets and no other session's", async () => {
      const token = await t.adminToken();
      const mine = await connect('/ws', '', { headers: { Cookie: `vigil_access_token=${token}` } });
      const other = await connect('/ws', `?token=${adminToken}`);
      await t.http.post('/api/v1/auth/logout').set('Authorization', `Bearer ${token}`).expect(204);
      expect(await mine.closed).toEqual({ code: 4401, reason: 'Session ended' });
      await settle(other);
      expect(other.ws.readyState).toBe(WebSocket.OPEN);
    });

    it("re-checks a user's sockets when the user changes: a password change keeps only the current session", async () => {
      const username = `ws-user-${Date.now()}`;
      const password = 'viewer-password-1';
      await t.http
        .post('/api/v1/users')
        .set('Authorization', `Bearer ${adminToken}`)
        .send({ username, password, role: 'viewer' })
        .expect(201);
      const login = async () =>
        (await t.http.post('/api/v1/auth/login').send({ username, password }).expect(200)).body
          .access_token as string;
      const current = await login();
      const older = await login();
      const currentSocket = await connect('/ws', `?token=${current}`);
      const olderSocket = await connect('/ws', `?token=${older}`);
      await t.http
        .post('/api/v1/auth/change-password')
        .set('Authorization', `Bearer ${current}`)
        .send({ current_password: password, new_password: 'viewer-password-2' })
        .expect(204);
      expect(await olderSocket.closed).toEqual({ code: 4401, reason: 'Credentials no longer valid' });
      await settle(currentSocket);
      expect(currentSocket.ws.readyState).toBe(WebSocket.OPEN);
    });

    it('closes the sockets of a deactivated user', async () => {
      const username = `ws-off-${Date.now()}`;
      const created = await t.http
        .post('/api/v1/users')
        .set('Authorization', `Bearer ${adminToken}`)
        .send({ username, password: 'viewer-password-1', role: 'viewer' })
        .expect(201);
      const token = (
        await t.http.post('/api/v1/auth/login').send({ username, password: 'viewer-password-1' }).expect(200)
      ).body.access_token as string;
      const socket = await connect('/ws', `?token=${token}`);
      await t.http
        .put(`/api/v1/users/${created.body.id as string}`)
        .set('Authorization', `Bearer ${adminToken}`)
        .send({ is_active: false })
        .expect(200);
      expect((await socket.closed).code).toBe(4401);
    });

    it('closes a socket when its session token expires', async () => {
      // A token for a real session that expires in 2 s, signed like the service signs its own.
      const claims = JSON.parse(
        Buffer.from(adminToken.split('.')[1], 'base64url').toString('utf8'),
      ) as object;
      const exp = Math.floor(Date.now() / 1000) + 2;
      const head = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ ...claims, exp })}`;
      const short = `${head}.${createHmac('sha256', t.config.jwtSecret).update(head).digest('base64url')}`;
      const client = await connect('/ws', `?token=${short}`);
      expect(await client.closed).toEqual({ code: 4401, reason: 'Session expired' });
      expect(Date.now()).toBeGreaterThanOrEqual(exp * 1000);
    });

    it('closes a socket when its key expires', async () => {
      const expiresAt = new Date(Date.now() + 2500).toISOString();
      const { key } = await t.createApiKey({
        name: 'ws-expiring',
        scopes: ['read:events'],
        expires_at: expiresAt,
      });
      const client = await connect('/ws', `?api_key=${key}`);
      const closed = await client.closed;
      expect(closed).toEqual({ code: 4401, reason: 'API key expired' });
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    });
  });
});

describe('WebSocket shutdown and proxies (e2e)', () => {
  it('closes every socket with 1001 when the app closes', async () => {
    const t = await startTestApp();
    const token = await t.adminToken();
    const clients = await Promise.all([0, 1, 2].map(() => WsClient.open(wsUrl(t, '/ws', `?token=${token}`))));
    const started = Date.now();
    await t.close();
    for (const client of clients) {
      expect(await client.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    }
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('refuses new upgrades with 503 once shutdown has begun', async () => {
    const t = await startTestApp();
    try {
      const token = await t.adminToken();
      const client = await WsClient.open(wsUrl(t, '/ws', `?token=${token}`));
      const closing = t.app.get(RealtimeGateway).shutdown();
      const refused = await refusal(wsUrl(t, '/ws', `?token=${token}`));
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({ detail: 'The service is shutting down', status_code: 503 });
      await closing;
      expect((await client.closed).code).toBe(1001);
      expect(t.app.get(RealtimeGateway).connectionCount).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('records the client address of a proxied upgrade from X-Forwarded-For only from TRUSTED_PROXIES', async () => {
    const t = await startTestApp({ env: { TRUSTED_PROXIES: '127.0.0.1,::1' } });
    try {
      const { key, id } = await t.createApiKey({ name: 'ws-proxied', scopes: ['read:events'] });
      const client = await WsClient.open(wsUrl(t, '/ws', `?api_key=${key}`), {
        headers: { 'X-Forwarded-For': '203.0.113.9' },
      });
      client.close();
      await new Promise((r) => setTimeout(r, 1000));
      const token = await t.adminToken();
      const usage = await t.http
        .get(`/api/v1/api-keys/${id}/usage`)
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      expect(usage.body).toMatchObject({ usage_count: 1, last_used_ip: '203.0.113.9' });
    } finally {
      await t.close();
    }
  });
});

describeWithRedis('WebSocket across instances on one Redis (e2e)', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startTestApp({ env: { REDIS_URL } });
    b = await startTestApp({ env: { REDIS_URL }, databaseName: a.databaseName });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('delivers a message published on instance A to a client of instance B, once', async () => {
    const { key } = await a.createApiKey({ name: 'ws-redis', scopes: ['read:events'] });
    const onB = await WsClient.open(wsUrl(b, '/ws', `?api_key=${key}`));
    const onA = await WsClient.open(wsUrl(a, '/api/v1/ws', `?api_key=${key}`));
    try {
      const record = eventRecord(randomUUID());
      a.app.get(DomainEventBus).publish('event.created', record);
      const received = await onB.next((m) => m.data.id === record.id);
      expect(received.data).toEqual(record);
      await onA.next((m) => m.data.id === record.id);
      // And the other way round; nobody gets a message twice.
      const back = eventRecord(randomUUID());
      b.app.get(DomainEventBus).publish('event.created', back);
      await onA.next((m) => m.data.id === back.id);
      await onB.next((m) => m.data.id === back.id);
      await new Promise((r) => setTimeout(r, 200));
      expect(onA.types()).toEqual(['event.created', 'event.created']);
      expect(onB.types()).toEqual(['event.created', 'event.created']);
    } finally {
      onA.close();
      onB.close();
    }
  });

  it('closes on instance B the socket of a key revoked on instance A', async () => {
    const { key, id } = await a.createApiKey({ name: 'ws-redis-revoke', scopes: ['read:cameras'] });
    const onB = await WsClient.open(wsUrl(b, '/ws', `?api_key=${key}`));
    const token = await a.adminToken();
    await a.http.delete(`/api/v1/api-keys/${id}`).set('Authorization', `Bearer ${token}`).expect(204);
    expect(await onB.closed).toEqual({ code: 4401, reason: 'API key revoked' });
  });
});
