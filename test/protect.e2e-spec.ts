import { createServer, type Server, type Socket } from 'node:net';
import WebSocket from 'ws';
import { SecretBox } from '../src/common/crypto/secret-box';
import { ProtectConnections } from '../src/modules/protect/protect-connections.service';
import { stopAllFakeCameras } from './fakes/fake-lifecycle';
import {
  FAKE_PROTECT_SNAPSHOT_JPEG,
  FakeProtectConsole,
  type FakeProtectEmission,
  type FakeSmartDetectType,
} from './fakes/protect-console';
import { sleep, waitFor } from './support/processes';
import { binaryBody, startTestApp, TestApp } from './support/test-app';

/**
 * UniFi Protect controllers (decisions.md §4) against the loopback fake console (test/fakes/protect-console.ts),
 * through the whole app: controller CRUD, the status of a saved controller's connection, the connection test,
 * the console's cameras and their adoption, realtime detections becoming events (with the console's snapshot),
 * camera and controller statuses, reconnects, disabling and deleting a controller, a burst of detections, and
 * a service restart.
 */

const API = '/api/v1';
const USERNAME = 'vigil';
const PASSWORD = 'vigil-secret';
const UNKNOWN_ID = '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5b';
const MALFORMED_IDS = ['not-a-uuid', '12345', '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5'];
const CONTROLLER_FIELDS = [
  'camera_count',
  'console_name',
  'created_at',
  'enabled',
  'host',
  'id',
  'last_connected_at',
  'name',
  'port',
  'status',
  'status_message',
  'updated_at',
  'username',
  'verify_tls',
  'version',
];
/** Polls fast: everything here is loopback. */
const POLL_MS = 50;

/** A JSON body (its shape is checked by the contract checker on every response). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

interface ServerMessage {
  type: string;
  data: Body;
  timestamp: string;
}

/** A WebSocket client of the app that records every JSON message. */
class WsClient {
  readonly messages: ServerMessage[] = [];

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary) => {
      const text = data.toString('utf8');
      if (!isBinary && text.startsWith('{')) this.messages.push(JSON.parse(text) as ServerMessage);
    });
  }

  static open(url: string): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const client = new WsClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`WebSocket refused: ${res.statusCode}`)),
      );
      ws.once('error', reject);
    });
  }

  /** The first message (recorded at or after `from`) that satisfies `predicate`. */
  next(predicate: (m: ServerMessage) => boolean, from = 0, timeoutMs = 5000): Promise<ServerMessage> {
    return waitFor(
      'a WebSocket message',
      () => this.messages.slice(from).find(predicate),
      timeoutMs,
      POLL_MS,
    );
  }

  close(): void {
    this.ws.close();
  }
}

describe('protect (e2e)', () => {
  let t: TestApp;
  /** The console most tests use; the controller "Home" stays connected to it. */
  let fake: FakeProtectConsole;
  let admin: string;
  /** A key with every scope but admin. */
  let viewerKey: string;
  let home: Body;
  /** Console camera ids of `fake`, by name. */
  const cam: Record<string, string> = {};
  const clients: WsClient[] = [];
  /** Every app started (a restart adds one on the same database); closed last first. */
  const apps: TestApp[] = [];

  const auth = () => ({ Authorization: `Bearer ${admin}` });
  const wsUrl = (query: string) => `${t.baseUrl.replace(/^http/, 'ws')}/ws?${query}`;
  const openWs = async (query = `token=${admin}`) => {
    const client = await WsClient.open(wsUrl(query));
    clients.push(client);
    return client;
  };

  const createController = (body: Body) => t.http.post(`${API}/protect/controllers`).set(auth()).send(body);
  const getController = async (id: string): Promise<Body> =>
    (await t.http.get(`${API}/protect/controllers/${id}`).set(auth()).expect(200)).body;
  const updateController = (id: string, body: Body) =>
    t.http.put(`${API}/protect/controllers/${id}`).set(auth()).send(body);
  const testConnection = (body: Body) =>
    t.http.post(`${API}/protect/controllers/test`).set(auth()).send(body);
  const consoleCameras = async (controllerId: string): Promise<Body[]> =>
    (await t.http.get(`${API}/protect/controllers/${controllerId}/cameras`).set(auth()).expect(200)).body;
  const controllerRows = async () =>
    Number((await t.sql<{ n: string }>('SELECT count(*) AS n FROM protect_controllers'))[0].n);

  /** Adopts a console camera (POST /cameras, enabled unless told otherwise). */
  const adopt = async (controllerId: string, protectCameraId: string, name: string, extra: Body = {}) =>
    (
      await t.http
        .post(`${API}/cameras`)
        .set(auth())
        .send({
          name,
          source_type: 'protect',
          protect_controller_id: controllerId,
          protect_camera_id: protectCameraId,
          enabled: true,
          ...extra,
        })
        .expect(201)
    ).body as Body;
  const getCamera = async (id: string): Promise<Body> =>
    (await t.http.get(`${API}/cameras/${id}`).set(auth()).expect(200)).body;

  /** Every event of these cameras. */
  const eventsOf = async (...cameraIds: string[]): Promise<Body[]> =>
    (
      await t.http
        .get(`${API}/events?camera_id=${cameraIds.join(',')}&limit=500`)
        .set(auth())
        .expect(200)
    ).body.items;
  /** Waits for the event of a console event and checks it is the only one. */
  const eventFor = async (cameraId: string, protectEventId: string): Promise<Body> => {
    const matches = await waitFor(
      `the event of Protect event ${protectEventId}`,
      async () => {
        const found = (await eventsOf(cameraId)).filter((e) => e.protect_event_id === protectEventId);
        return found.length > 0 ? found : undefined;
      },
      5000,
      POLL_MS,
    );
    expect(matches).toHaveLength(1);
    return matches[0];
  };
  const eventById = async (id: string): Promise<Body> =>
    (await t.http.get(`${API}/events/${id}`).set(auth()).expect(200)).body;
  /** A JPEG the API serves (an event's thumbnail, a camera's snapshot). */
  const jpeg = async (path: string): Promise<Buffer> => {
    const res = await t.http.get(`${API}${path}`).set(auth()).buffer(true).parse(binaryBody).expect(200);
    expect(res.headers['content-type']).toBe('image/jpeg');
    return res.body as Buffer;
  };
  const thumbnail = (eventId: string) => jpeg(`/events/${eventId}/thumbnail`);
  /**
   * Proves that detections sent before it were ignored: a person detection on an adopted camera, sent last,
   * becomes an event (the console's packets are handled in order), and anything sent before has had time to
   * land as well.
   */
  const marker = async (source: FakeProtectConsole, cameraId: string, protectCameraId: string) => {
    const sent = source.startSmartDetection(protectCameraId, ['person'], { score: 51 });
    await eventFor(cameraId, sent.eventId!);
    await sleep(150);
  };
  const waitForControllerStatus = (id: string, status: string, timeoutMs = 8000) =>
    waitFor(
      `controller status ${status}`,
      async () => {
        const c = await getController(id);
        return c.status === status ? c : undefined;
      },
      timeoutMs,
      POLL_MS,
    );
  const waitForCameraStatus = (id: string, status: string, timeoutMs = 8000) =>
    waitFor(
      `camera status ${status}`,
      async () => {
        const c = await getCamera(id);
        return c.status === status ? c : undefined;
      },
      timeoutMs,
      POLL_MS,
    );

  beforeAll(async () => {
    fake = await FakeProtectConsole.start({
      cameras: [
        { name: 'Driveway', model: 'G4 Bullet' },
        { name: 'Front Door', model: 'G4 Doorbell' },
        { name: 'Street', model: 'AI Pro' },
        { name: 'Garage', model: 'G4 Dome' },
        { name: 'Backyard', model: 'G5 Turret Ultra' },
        { name: 'Shed', model: 'G4 Bullet', isConnected: false },
      ],
    });
    for (const c of fake.listCameras()) cam[c.name] = c.id;
    t = await startTestApp();
    apps.push(t);
    admin = await t.adminToken();
    viewerKey = (
      await t.createApiKey({
        name: 'integration',
        scopes: ['read:cameras', 'read:events', 'write:cameras'],
        rate_limit_per_minute: 10000,
      })
    ).key;
    home = (
      await createController({
        name: 'Home',
        host: '127.0.0.1',
        port: fake.port,
        username: USERNAME,
        password: PASSWORD,
      }).expect(201)
    ).body;
  });

  afterAll(async () => {
    for (const client of clients) client.close();
    try {
      // An app on a borrowed database first; the owner drops it.
      for (const app of apps.reverse()) await app.close();
    } finally {
      await stopAllFakeCameras();
    }
  });

  describe('controller records', () => {
    it('creates a controller with the defaults, connected before answering, and never returns the password', async () => {
      expect(Object.keys(home).sort()).toEqual(CONTROLLER_FIELDS);
      expect(home).toMatchObject({
        name: 'Home',
        host: '127.0.0.1',
        port: fake.port,
        username: USERNAME,
        verify_tls: false,
        enabled: true,
        status: 'connected',
        status_message: null,
        console_name: 'Vigil Test NVR',
        version: '5.3.48',
        camera_count: 6,
      });
      expect(Date.parse(home.last_connected_at)).toBeGreaterThan(Date.now() - 60_000);
      expect(JSON.stringify(home)).not.toContain(PASSWORD);

      // port defaults to 443 (disabled: nothing listens there, nothing connects).
      const office = await createController({
        name: 'Office',
        host: 'office.example',
        username: 'u',
        password: 'office-password',
        enabled: false,
      }).expect(201);
      expect(office.body).toMatchObject({
        port: 443,
        verify_tls: false,
        enabled: false,
        status: 'disconnected',
        console_name: null,
        camera_count: null,
        last_connected_at: null,
      });
      expect(JSON.stringify(office.body)).not.toContain('office-password');
      await t.http.delete(`${API}/protect/controllers/${office.body.id}`).set(auth()).expect(204);
    });

    it('stores the password encrypted, and no answer ever carries it', async () => {
      const secret = 'S3cret-Console-Pass';
      const created = await createController({
        name: 'Cabin',
        host: 'cabin.example',
        port: 7443,
        username: 'viewer',
        password: secret,
        enabled: false,
      }).expect(201);
      const id = created.body.id as string;
      const [row] = await t.sql<{ password_encrypted: string }>(
        'SELECT password_encrypted FROM protect_controllers WHERE id = $1',
        [id],
      );
      expect(row.password_encrypted).not.toContain(secret);
      expect(t.app.get(SecretBox).decrypt(row.password_encrypted)).toBe(secret);

      const bodies = [
        created.text,
        (await t.http.get(`${API}/protect/controllers`).set(auth()).expect(200)).text,
        (await t.http.get(`${API}/protect/controllers/${id}`).set(auth()).expect(200)).text,
        (await updateController(id, { password: `${secret}-2`, port: 7444 }).expect(200)).text,
        (await updateController(id, { name: 'Cabin 2' }).expect(200)).text,
        (await testConnection({ host: '127.0.0.1', port: fake.port, username: USERNAME, password: secret }))
          .text,
      ];
      for (const text of bodies) {
        expect(text).not.toContain(secret);
        expect(text).not.toMatch(/"password/);
      }
      const [updated] = await t.sql<{ password_encrypted: string }>(
        'SELECT password_encrypted FROM protect_controllers WHERE id = $1',
        [id],
      );
      expect(t.app.get(SecretBox).decrypt(updated.password_encrypted)).toBe(`${secret}-2`);
      await t.http.delete(`${API}/protect/controllers/${id}`).set(auth()).expect(204);
    });

    it('lists, gets, partially updates and deletes', async () => {
      const created = (
        await createController({
          name: 'Lake House',
          host: 'lake.example',
          username: 'lake',
          password: 'lake-password',
          enabled: false,
        }).expect(201)
      ).body;

      const list = (await t.http.get(`${API}/protect/controllers`).set(auth()).expect(200)).body;
      expect(Array.isArray(list)).toBe(true);
      expect(list.map((c: Body) => c.name)).toEqual(['Home', 'Lake House']);
      expect(list.find((c: Body) => c.id === created.id)).toEqual(created);
      expect(await getController(created.id)).toEqual(created);

      const updated = (await updateController(created.id, { host: '10.0.0.9', port: 8443 }).expect(200)).body;
      expect(updated).toMatchObject({
        id: created.id,
        name: 'Lake House',
        host: '10.0.0.9',
        port: 8443,
        username: 'lake',
        verify_tls: false,
        enabled: false,
      });
      expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      const renamed = (await updateController(created.id, { name: 'Lake', verify_tls: true }).expect(200))
        .body;
      expect(renamed).toMatchObject({ name: 'Lake', host: '10.0.0.9', port: 8443, verify_tls: true });
      expect(await getController(created.id)).toEqual(renamed);

      await t.http.delete(`${API}/protect/controllers/${created.id}`).set(auth()).expect(204);
      await t.http.get(`${API}/protect/controllers/${created.id}`).set(auth()).expect(404);
      await t.http.delete(`${API}/protect/controllers/${created.id}`).set(auth()).expect(404);
      expect((await t.http.get(`${API}/protect/controllers`).set(auth()).expect(200)).body).toHaveLength(1);
    });

    it('answers 404 for unknown and malformed ids', async () => {
      for (const id of [UNKNOWN_ID, ...MALFORMED_IDS]) {
        const res = await t.http.get(`${API}/protect/controllers/${id}`).set(auth()).expect(404);
        expect(res.body).toEqual({ detail: expect.any(String), status_code: 404 });
        await updateController(id, { host: '10.0.0.1' }).expect(404);
        await t.http.delete(`${API}/protect/controllers/${id}`).set(auth()).expect(404);
        await t.http.get(`${API}/protect/controllers/${id}/cameras`).set(auth()).expect(404);
      }
      // Even with a name that is taken: the controller does not exist.
      await updateController(UNKNOWN_ID, { name: 'Home' }).expect(404);
    });

    it('refuses a duplicate name, also differing only in case (409)', async () => {
      const base = { host: 'dup.example', username: 'u', password: 'p', enabled: false };
      for (const name of ['Home', 'HOME', 'home', '  home  ']) {
        const res = await createController({ ...base, name }).expect(409);
        expect(res.body).toEqual({ detail: expect.stringContaining('already exists'), status_code: 409 });
      }
      const other = (await createController({ ...base, name: 'Barn' }).expect(201)).body;
      await updateController(other.id, { name: 'hOmE' }).expect(409);
      // Its own name in another case is fine.
      expect((await updateController(other.id, { name: 'BARN' }).expect(200)).body.name).toBe('BARN');
      await t.http.delete(`${API}/protect/controllers/${other.id}`).set(auth()).expect(204);
      expect(await controllerRows()).toBe(1);
    });

    it('rejects invalid bodies with 422 and the field at fault', async () => {
      const valid = { name: 'Valid', host: 'console.example', username: 'u', password: 'p', enabled: false };
      const cases: [Body, string][] = [
        [{ ...valid, name: undefined }, 'body.name'],
        [{ ...valid, host: undefined }, 'body.host'],
        [{ ...valid, username: undefined }, 'body.username'],
        [{ ...valid, password: undefined }, 'body.password'],
        [{ ...valid, name: '' }, 'body.name'],
        [{ ...valid, name: 'x'.repeat(101) }, 'body.name'],
        [{ ...valid, host: 'https://x/' }, 'body.host'],
        [{ ...valid, host: 'console.example/path' }, 'body.host'],
        [{ ...valid, host: 'console.example:443' }, 'body.host'],
        [{ ...valid, host: '' }, 'body.host'],
        [{ ...valid, port: 0 }, 'body.port'],
        [{ ...valid, port: 70000 }, 'body.port'],
        [{ ...valid, port: 443.5 }, 'body.port'],
        [{ ...valid, port: '443' }, 'body.port'],
        [{ ...valid, verify_tls: 'yes' }, 'body.verify_tls'],
        [{ ...valid, enabled: 1 }, 'body.enabled'],
        [{ ...valid, unknown_field: 1 }, 'body.unknown_field'],
      ];
      for (const [body, field] of cases) {
        const res = await createController(body).expect(422);
        expect(res.body.status_code).toBe(422);
        expect(res.body.errors.map((e: Body) => e.field)).toContain(field);
      }
      for (const [body, field] of [
        [{ port: 0 }, 'body.port'],
        [{ port: 70000 }, 'body.port'],
        [{ host: 'https://x/' }, 'body.host'],
        [{ name: null }, 'body.name'],
        [{ password: '' }, 'body.password'],
        [{ is_admin: true }, 'body.is_admin'],
      ] as [Body, string][]) {
        const res = await updateController(home.id, body).expect(422);
        expect(res.body.errors.map((e: Body) => e.field)).toContain(field);
      }
      expect(await controllerRows()).toBe(1);
      expect(await getController(home.id)).toMatchObject({
        name: 'Home',
        port: fake.port,
        status: 'connected',
      });
    });

    it('is admin-only: 403 for a key without admin, 401 without credentials', async () => {
      const routes: ['get' | 'post' | 'put' | 'delete', string, Body?][] = [
        ['get', '/protect/controllers'],
        ['post', '/protect/controllers', { name: 'X', host: 'x.example', username: 'u', password: 'p' }],
        ['get', `/protect/controllers/${home.id}`],
        ['put', `/protect/controllers/${home.id}`, { enabled: false }],
        ['delete', `/protect/controllers/${home.id}`],
        ['post', '/protect/controllers/test', { host: '127.0.0.1', username: 'u', password: 'p' }],
        ['get', `/protect/controllers/${home.id}/cameras`],
      ];
      for (const [method, path, body] of routes) {
        const forbidden = await t.http[method](`${API}${path}`)
          .set('X-API-Key', viewerKey)
          .send(body)
          .expect(403);
        expect(forbidden.body).toEqual({
          detail: 'Insufficient permissions. Required scope: admin',
          status_code: 403,
        });
        const anonymous = await t.http[method](`${API}${path}`).send(body).expect(401);
        expect(anonymous.body).toEqual({ detail: 'Not authenticated', status_code: 401 });
      }
      expect(await controllerRows()).toBe(1);
      expect(await getController(home.id)).toMatchObject({ enabled: true, status: 'connected' });
    });
  });

  describe('connection of a saved controller', () => {
    it('says in one line why it cannot connect, and reconnects when its settings are fixed', async () => {
      const gatehouse = await FakeProtectConsole.start({ cameras: [{ name: 'Gate' }] });
      const ws = await openWs();
      try {
        const created = (
          await createController({
            name: 'Gatehouse',
            host: '127.0.0.1',
            port: gatehouse.port,
            username: USERNAME,
            password: 'wrong-password',
          }).expect(201)
        ).body;
        expect(created).toMatchObject({ status: 'error', console_name: null, last_connected_at: null });
        expect(created.status_message).toMatch(/^Authentication failed/);
        // Adoptable while not connected; offline, saying why.
        const gate = await adopt(created.id, gatehouse.cameraByName('Gate').id, 'Gate');
        expect(gate.status).toBe('offline');
        expect(gate.status_message).toMatch(/Authentication failed/);

        const fixed = (await updateController(created.id, { password: PASSWORD }).expect(200)).body;
        expect(fixed).toMatchObject({
          status: 'connected',
          status_message: null,
          console_name: 'Vigil Test NVR',
          camera_count: 1,
        });
        expect(await getCamera(gate.id)).toMatchObject({ status: 'running', status_message: null });

        // A certificate the service cannot verify: a precise message, no stack trace.
        const from = ws.messages.length;
        const strict = (await updateController(created.id, { verify_tls: true }).expect(200)).body;
        expect(strict.status).toBe('error');
        expect(strict.status_message).toMatch(/^TLS verification failed/);
        expect(strict.status_message).not.toContain('\n');
        const camera = await getCamera(gate.id);
        expect(camera.status).toBe('offline');
        expect(camera.status_message).toContain('TLS verification failed');
        expect(camera.status_message).not.toContain('\n');
        const message = await ws.next(
          (m) =>
            m.type === 'controller.status' &&
            m.data.controller_id === created.id &&
            m.data.status === 'error',
          from,
        );
        expect(message.data.status_message).toMatch(/^TLS verification failed/);
        expect(message.data.previous_status).toBe('connecting');

        const relaxed = (await updateController(created.id, { verify_tls: false }).expect(200)).body;
        expect(relaxed).toMatchObject({ status: 'connected', verify_tls: false });
        expect((await getCamera(gate.id)).status).toBe('running');

        await t.http.delete(`${API}/cameras/${gate.id}`).set(auth()).expect(204);
        await t.http.delete(`${API}/protect/controllers/${created.id}`).set(auth()).expect(204);
        expect(gatehouse.wsClientCount).toBe(0);
      } finally {
        await gatehouse.stop();
      }
    });

    it('says at once that a closed port is unreachable', async () => {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const started = Date.now();
      const created = (
        await createController({
          name: 'Closed',
          host: '127.0.0.1',
          port,
          username: USERNAME,
          password: PASSWORD,
        }).expect(201)
      ).body;
      expect(Date.now() - started).toBeLessThan(2000);
      expect(created.status).toBe('error');
      expect(created.status_message).toMatch(/^Host unreachable/);
      await t.http.delete(`${API}/protect/controllers/${created.id}`).set(auth()).expect(204);
    });

    it('answers within seconds when the host accepts connections and never answers', async () => {
      const held: Socket[] = [];
      const server = createServer((socket) => held.push(socket));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      try {
        const started = Date.now();
        const created = (
          await createController({
            name: 'Black hole',
            host: '127.0.0.1',
            port,
            username: USERNAME,
            password: PASSWORD,
          }).expect(201)
        ).body;
        expect(Date.now() - started).toBeLessThan(7000);
        expect(created.status).toBe('error');
        expect(created.status_message).toMatch(/^Connection timed out/);
        const disabled = (await updateController(created.id, { enabled: false }).expect(200)).body;
        expect(disabled).toMatchObject({ status: 'disconnected', enabled: false });
        await t.http.delete(`${API}/protect/controllers/${created.id}`).set(auth()).expect(204);
      } finally {
        for (const socket of held) socket.destroy();
        server.close();
      }
    }, 8_000);
  });

  describe('connection test', () => {
    /** A second console, whose failure modes do not disturb "Home". */
    let spare: FakeProtectConsole;
    const servers: Server[] = [];

    beforeAll(async () => {
      spare = await FakeProtectConsole.start({ nvrName: 'Spare NVR', cameras: [{ name: 'Attic' }] });
    });
    afterAll(async () => {
      for (const server of servers) server.close();
      await spare.stop();
    });

    const target = (source: FakeProtectConsole, extra: Body = {}) => ({
      host: '127.0.0.1',
      port: source.port,
      username: USERNAME,
      password: PASSWORD,
      ...extra,
    });
    /** Runs a test that must fail and checks that nothing was saved and the password is not echoed. */
    const failing = async (body: Body, prefix: string) => {
      const before = await controllerRows();
      const res = await testConnection(body).expect(200);
      expect(res.body).toMatchObject({
        success: false,
        console_name: null,
        version: null,
        camera_count: null,
      });
      expect(res.body.message).toMatch(new RegExp(`^${prefix}: `));
      expect(res.body.latency_ms).toEqual(expect.any(Number));
      expect(JSON.stringify(res.body)).not.toContain(body.password ?? PASSWORD);
      expect(await controllerRows()).toBe(before);
      return res.body as Body;
    };

    it('reports the console on success and saves nothing', async () => {
      const before = await controllerRows();
      const res = await testConnection(target(spare)).expect(200);
      expect(res.body).toEqual({
        success: true,
        message: expect.stringContaining('Spare NVR'),
        console_name: 'Spare NVR',
        version: '5.3.48',
        camera_count: 1,
        latency_ms: expect.any(Number),
      });
      expect(res.body.latency_ms).toBeGreaterThanOrEqual(0);
      expect(res.body.latency_ms).toBeLessThan(15_000);
      expect(await controllerRows()).toBe(before);
      expect(spare.logins).toBeGreaterThanOrEqual(1);
    });

    it('says "Authentication failed" for a wrong password', async () => {
      await failing(target(spare, { password: 'wrong-password' }), 'Authentication failed');
      await failing(target(spare, { username: 'nobody' }), 'Authentication failed');
    });

    it('says "TLS verification failed" with verify_tls against the self-signed certificate', async () => {
      const logins = spare.loginAttempts;
      await failing(target(spare, { verify_tls: true }), 'TLS verification failed');
      expect(spare.loginAttempts).toBe(logins); // the password never went to an unverified server
    });

    it('says "Host unreachable" for a closed port', async () => {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await failing({ host: '127.0.0.1', port, username: USERNAME, password: PASSWORD }, 'Host unreachable');
    });

    it('says "Connection timed out" for a server that accepts and never answers', async () => {
      const held: Socket[] = [];
      const server = createServer((socket) => held.push(socket));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      const started = Date.now();
      await failing(
        { host: '127.0.0.1', port, username: USERNAME, password: PASSWORD },
        'Connection timed out',
      );
      expect(Date.now() - started).toBeLessThan(7_500);
      expect(held.length).toBeGreaterThanOrEqual(1);
      for (const socket of held) socket.destroy();
    }, 8_000);

    it('says "Not a UniFi Protect console" for another HTTPS server and for UniFi OS without Protect', async () => {
      try {
        spare.setMode('plain-https');
        await failing(target(spare), 'Not a UniFi Protect console');
        spare.setMode('unifi-os-without-protect');
        await failing(target(spare), 'Not a UniFi Protect console');
      } finally {
        spare.setMode('protect');
      }
    }, 15_000);

    it("uses a saved controller's password when only controller_id is given", async () => {
      const saved = (
        await createController({
          name: 'Saved',
          host: '127.0.0.1',
          port: spare.port,
          username: USERNAME,
          password: PASSWORD,
          enabled: false,
        }).expect(201)
      ).body;
      try {
        const before = await controllerRows();
        const ok = await testConnection({
          ...target(spare, { password: undefined }),
          controller_id: saved.id,
        }).expect(200);
        expect(ok.body).toMatchObject({ success: true, console_name: 'Spare NVR' });
        // Its stored password, not any password: a wrong stored one fails.
        await updateController(saved.id, { password: 'stale-password' }).expect(200);
        await failing(
          { ...target(spare, { password: undefined }), controller_id: saved.id },
          'Authentication failed',
        );
        // A given password wins over the stored one.
        const given = await testConnection({ ...target(spare), controller_id: saved.id }).expect(200);
        expect(given.body.success).toBe(true);
        // The stored password is never sent to another host, port or user (an admin key could collect it).
        for (const other of [{ host: 'localhost' }, { port: spare.port + 1 }, { username: 'someone' }]) {
          const refused = await testConnection({
            ...target(spare, { password: undefined, ...other }),
            controller_id: saved.id,
          }).expect(422);
          expect(refused.body.errors[0].field).toBe('body.controller_id');
        }
        expect(await controllerRows()).toBe(before);
      } finally {
        await t.http.delete(`${API}/protect/controllers/${saved.id}`).set(auth()).expect(204);
      }
    });

    it('rejects a test without password or controller_id, or with bad fields (422)', async () => {
      const cases: [Body, string][] = [
        [target(spare, { password: undefined }), 'body.password'],
        [{ ...target(spare, { password: undefined }), controller_id: UNKNOWN_ID }, 'body.controller_id'],
        [{ ...target(spare, { password: undefined }), controller_id: 'not-a-uuid' }, 'body.controller_id'],
        [target(spare, { host: 'https://x/' }), 'body.host'],
        [target(spare, { host: undefined }), 'body.host'],
        [target(spare, { username: undefined }), 'body.username'],
        [target(spare, { port: 0 }), 'body.port'],
        [target(spare, { port: 70000 }), 'body.port'],
        [target(spare, { name: 'extra' }), 'body.name'],
      ];
      for (const [body, field] of cases) {
        const res = await testConnection(body).expect(422);
        expect(res.body.errors.map((e: Body) => e.field)).toContain(field);
      }
    });
  });

  describe("the console's cameras and adoption", () => {
    it('lists the console cameras with their Vigil types, and the adopting camera once adopted', async () => {
      const before = await consoleCameras(home.id);
      expect(before.map((c) => c.name)).toEqual([
        'Backyard',
        'Driveway',
        'Front Door',
        'Garage',
        'Shed',
        'Street',
      ]);
      const byName = Object.fromEntries(before.map((c) => [c.name, c]));
      expect(byName.Street).toEqual({
        protect_camera_id: cam.Street,
        name: 'Street',
        model: 'AI Pro',
        type: 'camera',
        online: true,
        smart_detect_types: ['person', 'vehicle', 'animal', 'face', 'license_plate'],
        camera_id: null,
      });
      expect(byName['Front Door']).toMatchObject({ type: 'doorbell', model: 'G4 Doorbell', online: true });
      expect(byName.Driveway).toMatchObject({ type: 'camera', smart_detect_types: ['person', 'vehicle'] });
      expect(byName.Shed.online).toBe(false);
      expect(before.every((c) => c.camera_id === null)).toBe(true);

      const street = await adopt(home.id, cam.Street, 'Street');
      expect(street).toMatchObject({
        source_type: 'protect',
        protect_controller_id: home.id,
        protect_camera_id: cam.Street,
        enabled: true,
        status: 'running',
      });
      const after = await consoleCameras(home.id);
      expect(after.find((c) => c.name === 'Street')!.camera_id).toBe(street.id);
      expect(after.filter((c) => c.camera_id !== null)).toHaveLength(1);
    });

    it('shows a camera added on the console while connected, and lets it be adopted', async () => {
      const added = fake.addCamera({ name: 'Carport', model: 'G4 Bullet' }, { emit: true });
      cam.Carport = added.id;
      const listed = await waitFor(
        'the new camera in the list',
        async () => (await consoleCameras(home.id)).find((c) => c.protect_camera_id === added.id),
        3000,
        POLL_MS,
      );
      expect(listed).toMatchObject({ name: 'Carport', online: true, camera_id: null });
      const carport = await adopt(home.id, added.id, 'Carport');
      expect(carport.status).toBe('running');
      const sent = fake.startSmartDetection(added.id, ['vehicle'], { score: 70 });
      const event = await eventFor(carport.id, sent.eventId!);
      expect(Buffer.compare(await thumbnail(event.id), FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);

      // Renamed on the console: the list follows.
      fake.updateCamera(added.id, { name: 'Carport East' });
      await waitFor(
        'the new name',
        async () =>
          (await consoleCameras(home.id)).find((c) => c.protect_camera_id === added.id)?.name ===
          'Carport East',
        3000,
        POLL_MS,
      );
      // Removed from the console: gone from the list, and the adopting camera says so.
      fake.removeCamera(added.id, { emit: true });
      const gone = await waitForCameraStatus(carport.id, 'error');
      expect(gone.status_message).toMatch(/no camera/i);
      expect((await consoleCameras(home.id)).map((c) => c.protect_camera_id)).not.toContain(added.id);
      await t.http.delete(`${API}/cameras/${carport.id}`).set(auth()).expect(204);
    });

    it('lists the cameras of a disabled controller with a one-off login, and says 502 when the login is refused', async () => {
      const spare = await FakeProtectConsole.start({
        cameras: [{ name: 'Attic', model: 'G4 Doorbell Pro' }],
      });
      try {
        const disabled = (
          await createController({
            name: 'Disabled console',
            host: '127.0.0.1',
            port: spare.port,
            username: USERNAME,
            password: PASSWORD,
            enabled: false,
          }).expect(201)
        ).body;
        expect(spare.loginAttempts).toBe(0);
        const cameras = await consoleCameras(disabled.id);
        expect(cameras).toEqual([
          {
            protect_camera_id: spare.cameraByName('Attic').id,
            name: 'Attic',
            model: 'G4 Doorbell Pro',
            type: 'doorbell',
            online: true,
            smart_detect_types: ['person', 'vehicle', 'package'],
            camera_id: null,
          },
        ]);
        expect(spare.logins).toBe(1);
        // Nothing stays connected.
        await waitFor('the one-off socket to close', () => spare.wsClientCount === 0, 2000, POLL_MS);
        expect((await getController(disabled.id)).status).toBe('disconnected');

        spare.rejectLogins(401);
        const refused = await t.http
          .get(`${API}/protect/controllers/${disabled.id}/cameras`)
          .set(auth())
          .expect(502);
        expect(refused.body).toEqual({
          detail: expect.stringContaining('Authentication failed'),
          status_code: 502,
        });
        expect(refused.text).not.toContain(PASSWORD);
        await t.http.delete(`${API}/protect/controllers/${disabled.id}`).set(auth()).expect(204);
      } finally {
        await spare.stop();
      }
    });

    it('refuses adopting from an unknown controller or an unknown console camera (422), or twice (409)', async () => {
      const body = (controllerId: string, protectCameraId: string, name: string) => ({
        name,
        source_type: 'protect',
        protect_controller_id: controllerId,
        protect_camera_id: protectCameraId,
        enabled: true,
      });
      const unknownController = await t.http
        .post(`${API}/cameras`)
        .set(auth())
        .send(body(UNKNOWN_ID, cam.Garage, 'Nowhere'))
        .expect(422);
      expect(unknownController.body.errors.map((e: Body) => e.field)).toContain('body.protect_controller_id');

      const unknownCamera = await t.http
        .post(`${API}/cameras`)
        .set(auth())
        .send(body(home.id, 'ffffffffffffffffffffffff', 'Phantom'))
        .expect(422);
      expect(unknownCamera.body.errors.map((e: Body) => e.field)).toContain('body.protect_camera_id');

      const twice = await t.http
        .post(`${API}/cameras`)
        .set(auth())
        .send(body(home.id, cam.Street, 'Street again'))
        .expect(409);
      expect(twice.body.status_code).toBe(409);

      // Moving another camera onto an adopted console camera is refused too.
      const driveway = await adopt(home.id, cam.Driveway, 'Driveway', { detection_types: ['person'] });
      await t.http
        .put(`${API}/cameras/${driveway.id}`)
        .set(auth())
        .send({ protect_camera_id: cam.Street })
        .expect(409);
      const cameras = (await t.http.get(`${API}/cameras`).set(auth()).expect(200)).body as Body[];
      expect(cameras.map((c) => c.name).sort()).toEqual(['Driveway', 'Street']);
    });
  });

  describe('realtime detections', () => {
    let ws: WsClient;
    let street: Body;
    let frontDoor: Body;
    let driveway: Body;

    beforeAll(async () => {
      ws = await openWs();
      const cameras = (await t.http.get(`${API}/cameras`).set(auth()).expect(200)).body as Body[];
      street = cameras.find((c) => c.name === 'Street')!;
      driveway = cameras.find((c) => c.name === 'Driveway')!;
      frontDoor = await adopt(home.id, cam['Front Door'], 'Front Door');
    });

    /** Checks the event a console detection became: one event, the console's snapshot, its score. */
    const expectEvent = async (cameraId: string, sent: FakeProtectEmission, expected: Body) => {
      const event = await eventFor(cameraId, sent.eventId!);
      expect(event).toMatchObject({
        camera_id: cameraId,
        source_type: 'protect',
        protect_event_id: sent.eventId,
        thumbnail_url: `/api/v1/events/${event.id}/thumbnail`,
        ...expected,
      });
      expect(Date.parse(event.timestamp)).toBe(sent.start);
      expect(Buffer.compare(await thumbnail(event.id), FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);
      await ws.next((m) => m.type === 'event.created' && m.data.id === event.id);
      return event;
    };
    /** Waits for the event's update and its `event.updated` message. */
    const expectUpdate = async (eventId: string, expected: Body) => {
      const updated = await waitFor(
        'the event update',
        async () => {
          const e = await eventById(eventId);
          return e.confidence === expected.confidence ? e : undefined;
        },
        5000,
        POLL_MS,
      );
      expect(updated).toMatchObject(expected);
      const message = await ws.next(
        (m) =>
          m.type === 'event.updated' && m.data.id === eventId && m.data.confidence === expected.confidence,
      );
      expect(message.data).toMatchObject(expected);
      return updated;
    };

    const smartKinds: [FakeSmartDetectType, string][] = [
      ['person', 'person'],
      ['vehicle', 'vehicle'],
      ['animal', 'animal'],
      ['package', 'package'],
      ['face', 'face'],
      ['licensePlate', 'license_plate'],
    ];

    it.each(smartKinds)(
      'turns a %s smart detection into one event with the snapshot, then applies its end',
      async (kind, type) => {
        const count = (await eventsOf(street.id)).length;
        const sent = fake.startSmartDetection(cam.Street, [kind], { score: 62 });
        const event = await expectEvent(street.id, sent, {
          detection_type: type,
          confidence: 62,
          objects_detected: [type],
        });
        const plate = kind === 'licensePlate' ? { licensePlate: 'ABC123' } : {};
        fake.endSmartDetection(sent.eventId!, { score: 91, ...plate });
        await expectUpdate(event.id, {
          detection_type: type,
          confidence: 91,
          objects_detected: kind === 'licensePlate' ? [type, 'plate:ABC123'] : [type],
        });
        expect(await eventsOf(street.id)).toHaveLength(count + 1);
      },
    );

    it('reads the plate of a vehicle detection from its thumbnails, and follows a lower final score', async () => {
      const sent = fake.startSmartDetection(cam.Street, ['vehicle', 'licensePlate'], { score: 88 });
      const event = await expectEvent(street.id, sent, {
        detection_type: 'vehicle',
        confidence: 88,
        objects_detected: ['vehicle', 'license_plate'],
      });
      fake.endSmartDetection(sent.eventId!, {
        score: 74,
        detectedThumbnails: [{ type: 'vehicle', confidence: 74, name: 'XYZ987' }],
      });
      await expectUpdate(event.id, {
        confidence: 74,
        objects_detected: ['vehicle', 'license_plate', 'plate:XYZ987'],
      });
    });

    it('turns motion into one event, and applies the final score at its end', async () => {
      const count = (await eventsOf(street.id)).length;
      const sent = fake.startMotion(cam.Street, { score: 35 });
      const event = await expectEvent(street.id, sent, {
        detection_type: 'motion',
        confidence: 35,
        objects_detected: [],
      });
      fake.endMotion(sent.eventId!, { score: 77 });
      await expectUpdate(event.id, { detection_type: 'motion', confidence: 77, objects_detected: [] });
      expect(await eventsOf(street.id)).toHaveLength(count + 1);
    });

    it('turns a doorbell ring into one event (a ring has no end and no score)', async () => {
      const sent = fake.ring(cam['Front Door']);
      await expectEvent(frontDoor.id, sent, {
        detection_type: 'ring',
        confidence: null,
        objects_detected: [],
        camera_name: 'Front Door',
      });
      expect(await eventsOf(frontDoor.id)).toHaveLength(1);
    });

    it('does not duplicate an event when the console resends its start', async () => {
      const sent = fake.startSmartDetection(cam.Street, ['person'], { score: 66 });
      const start = {
        id: sent.eventId,
        modelKey: 'event',
        type: 'smartDetectZone',
        start: sent.start,
        score: 66,
        smartDetectTypes: ['person'],
        smartDetectEvents: [],
        metadata: {},
        camera: cam.Street,
      };
      const header = { action: 'add', modelKey: 'event', id: sent.eventId };
      fake.sendPacket(header, start); // at once, while the first is being recorded
      const event = await eventFor(street.id, sent.eventId!);
      fake.sendPacket(header, start); // again once recorded
      fake.sendPacket(header, { ...start, score: 70 }, { deflate: false });
      await marker(fake, street.id, cam.Street);
      expect((await eventsOf(street.id)).filter((e) => e.protect_event_id === sent.eventId)).toHaveLength(1);
      expect((await eventById(event.id)).confidence).toBe(66);
      // Created once on the WebSocket too.
      expect(ws.messages.filter((m) => m.type === 'event.created' && m.data.id === event.id)).toHaveLength(1);
    });

    it("makes no event for detection types outside the camera's detection_types", async () => {
      // Driveway makes events of people only.
      expect(driveway.detection_types).toEqual(['person']);
      const vehicle = fake.startSmartDetection(cam.Driveway, ['vehicle'], { score: 90 });
      const motion = fake.startMotion(cam.Driveway, { score: 50 });
      await marker(fake, driveway.id, cam.Driveway);
      const events = await eventsOf(driveway.id);
      expect(events.map((e) => e.detection_type)).toEqual(['person']);
      expect(events.map((e) => e.protect_event_id)).not.toContain(vehicle.eventId);
      expect(events.map((e) => e.protect_event_id)).not.toContain(motion.eventId);
      // The end of an ignored detection does not make one either.
      fake.endSmartDetection(vehicle.eventId!, { score: 95 });
      await marker(fake, driveway.id, cam.Driveway);
      expect((await eventsOf(driveway.id)).map((e) => e.detection_type)).toEqual(['person', 'person']);

      // A change of detection_types applies at once.
      await t.http
        .put(`${API}/cameras/${driveway.id}`)
        .set(auth())
        .send({ detection_types: ['person', 'vehicle'] })
        .expect(200);
      const now = fake.startSmartDetection(cam.Driveway, ['vehicle'], { score: 81 });
      await expectEvent(driveway.id, now, { detection_type: 'vehicle', confidence: 81 });
      await t.http
        .put(`${API}/cameras/${driveway.id}`)
        .set(auth())
        .send({ detection_types: ['person'] })
        .expect(200);
    });

    it('makes no event for a stopped camera until it is started again', async () => {
      const stopped = (await t.http.post(`${API}/cameras/${street.id}/stop`).set(auth()).expect(200)).body;
      expect(stopped).toMatchObject({ enabled: false, status: 'stopped' });
      const count = (await eventsOf(street.id)).length;
      const ignored = [
        fake.startSmartDetection(cam.Street, ['person'], { score: 90 }),
        fake.startMotion(cam.Street, { score: 40 }),
      ];
      await marker(fake, frontDoor.id, cam['Front Door']);
      expect(await eventsOf(street.id)).toHaveLength(count);

      const started = (await t.http.post(`${API}/cameras/${street.id}/start`).set(auth()).expect(200)).body;
      expect(started).toMatchObject({ enabled: true, status: 'running' });
      fake.endSmartDetection(ignored[0].eventId!, { score: 95 });
      const sent = fake.startSmartDetection(cam.Street, ['animal'], { score: 58 });
      await expectEvent(street.id, sent, { detection_type: 'animal', confidence: 58 });
      expect(await eventsOf(street.id)).toHaveLength(count + 1);
    });

    it('makes no event for console cameras nobody adopted', async () => {
      const all = async () =>
        (await t.http.get(`${API}/events?limit=500`).set(auth()).expect(200)).body.total;
      const before = await all();
      const sent = [
        fake.startSmartDetection(cam.Backyard, ['person'], { score: 90 }),
        fake.startMotion(cam.Garage, { score: 40 }),
        fake.startSmartDetection(cam.Shed, ['vehicle'], { score: 70 }),
      ];
      await marker(fake, frontDoor.id, cam['Front Door']);
      expect(await all()).toBe(before + 1);
      const [row] = await t.sql<{ n: string }>(
        'SELECT count(*) AS n FROM events WHERE protect_event_id = ANY($1)',
        [sent.map((s) => s.eventId)],
      );
      expect(Number(row.n)).toBe(0);
    });
  });

  describe('statuses', () => {
    it('follows a console camera going offline and back, with camera.status messages', async () => {
      const ws = await openWs();
      const driveway = ((await t.http.get(`${API}/cameras`).set(auth()).expect(200)).body as Body[]).find(
        (c) => c.name === 'Driveway',
      )!;
      expect(driveway.status).toBe('running');
      // Its live snapshot is the console's.
      const snapshot = await jpeg(`/cameras/${driveway.id}/snapshot`);
      expect(Buffer.compare(snapshot, FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);

      fake.setCameraConnected(cam.Driveway, false);
      const offline = await ws.next((m) => m.type === 'camera.status' && m.data.camera_id === driveway.id);
      expect(offline.data).toEqual({
        camera_id: driveway.id,
        camera_name: 'Driveway',
        status: 'offline',
        previous_status: 'running',
        status_message: expect.any(String),
      });
      expect(await getCamera(driveway.id)).toMatchObject({ status: 'offline' });
      expect((await consoleCameras(home.id)).find((c) => c.name === 'Driveway')!.online).toBe(false);

      const from = ws.messages.length;
      fake.setCameraConnected(cam.Driveway, true);
      const online = await ws.next(
        (m) => m.type === 'camera.status' && m.data.camera_id === driveway.id,
        from,
      );
      expect(online.data).toMatchObject({
        status: 'running',
        previous_status: 'offline',
        status_message: null,
      });
      expect(await getCamera(driveway.id)).toMatchObject({ status: 'running', status_message: null });
      expect((await consoleCameras(home.id)).find((c) => c.name === 'Driveway')!.online).toBe(true);
    });

    it('marks a camera adopted while its console camera is offline as offline', async () => {
      const shed = await adopt(home.id, cam.Shed, 'Shed');
      expect(shed.status).toBe('offline');
      fake.setCameraConnected(cam.Shed, true);
      await waitForCameraStatus(shed.id, 'running');
      await t.http.delete(`${API}/cameras/${shed.id}`).set(auth()).expect(204);
    });
  });

  describe('reconnects, disabling and deleting', () => {
    /** A console that sends a heartbeat, for a controller with a short silence timeout. */
    let lively: FakeProtectConsole;
    let controller: Body;
    let porch: Body;
    let porchId: string;

    beforeAll(async () => {
      lively = await FakeProtectConsole.start({ heartbeatMs: 200, cameras: [{ name: 'Porch' }] });
      porchId = lively.cameraByName('Porch').id;
      const connections = t.app.get(ProtectConnections);
      const defaultSilence = connections.silenceTimeoutMs;
      connections.silenceTimeoutMs = 1500;
      try {
        controller = (
          await createController({
            name: 'Lively',
            host: '127.0.0.1',
            port: lively.port,
            username: USERNAME,
            password: PASSWORD,
          }).expect(201)
        ).body;
      } finally {
        connections.silenceTimeoutMs = defaultSilence;
      }
      expect(controller.status).toBe('connected');
      porch = await adopt(controller.id, porchId, 'Porch');
      expect(porch.status).toBe('running');
    });
    afterAll(async () => {
      lively.goSilent(false);
      await lively.stop();
    });

    /** Waits until the connection is back and stable (one socket, connected, the camera running). */
    const reconnected = async (before: number) => {
      await waitFor('a new realtime socket', () => lively.wsConnectionsTotal > before, 8000, POLL_MS);
      await waitForControllerStatus(controller.id, 'connected');
      await waitFor('one socket', () => lively.wsClientCount === 1, 3000, POLL_MS);
      await waitForCameraStatus(porch.id, 'running');
    };

    it('reconnects after the console drops the realtime connection, and events flow again', async () => {
      const before = lively.wsConnectionsTotal;
      const bootstraps = lively.bootstrapRequests;
      lively.dropConnections();
      await reconnected(before);
      expect(lively.bootstrapRequests).toBeGreaterThan(bootstraps); // resynced from a fresh bootstrap
      const sent = lively.startSmartDetection(porchId, ['person'], { score: 73 });
      const event = await eventFor(porch.id, sent.eventId!);
      expect(event).toMatchObject({ detection_type: 'person', confidence: 73, source_type: 'protect' });
      expect(Buffer.compare(await thumbnail(event.id), FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);
    });

    it('logs in again when the console rebooted (sockets dropped, sessions gone)', async () => {
      const before = lively.wsConnectionsTotal;
      const logins = lively.logins;
      lively.expireSessions();
      lively.dropConnections({ includeHttp: true });
      await reconnected(before);
      expect(lively.logins).toBeGreaterThan(logins);
      const sent = lively.startSmartDetection(porchId, ['animal'], { score: 57 });
      expect(await eventFor(porch.id, sent.eventId!)).toMatchObject({
        detection_type: 'animal',
        confidence: 57,
      });
    });

    it('reconnects when the realtime connection goes silent, and events flow once the console speaks', async () => {
      const before = lively.wsConnectionsTotal;
      lively.goSilent(true);
      // Nothing arrives for the silence timeout (1.5 s): the watchdog opens a new socket.
      await waitFor(
        'a reconnect of the silent socket',
        () => lively.wsConnectionsTotal > before,
        6000,
        POLL_MS,
      );
      lively.goSilent(false);
      await reconnected(before);
      // Heartbeats keep the connection: no more reconnects.
      const settled = lively.wsConnectionsTotal;
      await sleep(2000);
      expect(lively.wsConnectionsTotal).toBe(settled);
      const sent = lively.startSmartDetection(porchId, ['vehicle'], { score: 64 });
      expect(sent.delivered).toBe(1);
      const event = await eventFor(porch.id, sent.eventId!);
      expect(event).toMatchObject({ detection_type: 'vehicle', confidence: 64 });
    }, 20_000);

    it('disconnects a disabled controller (cameras offline) and reconnects it when enabled; controller.status is for admins only', async () => {
      const adminWs = await openWs();
      const viewerWs = await openWs(`api_key=${viewerKey}`);

      const disabled = (await updateController(controller.id, { enabled: false }).expect(200)).body;
      expect(disabled).toMatchObject({ enabled: false, status: 'disconnected' });
      expect(lively.wsClientCount).toBe(0);
      expect(await getCamera(porch.id)).toMatchObject({ status: 'offline' });

      const controllerMessage = await adminWs.next(
        (m) => m.type === 'controller.status' && m.data.controller_id === controller.id,
      );
      expect(controllerMessage.data).toEqual({
        controller_id: controller.id,
        controller_name: 'Lively',
        status: 'disconnected',
        previous_status: 'connected',
        status_message: expect.any(String),
      });
      // The viewer key gets the camera's status but never the controller's.
      const cameraMessage = await viewerWs.next(
        (m) => m.type === 'camera.status' && m.data.camera_id === porch.id,
      );
      expect(cameraMessage.data).toMatchObject({ status: 'offline', previous_status: 'running' });
      await adminWs.next((m) => m.type === 'camera.status' && m.data.camera_id === porch.id);

      // No events while disabled.
      const count = (await eventsOf(porch.id)).length;
      lively.startSmartDetection(porchId, ['person'], { score: 90 });

      // The one-off login still lists its cameras.
      expect((await consoleCameras(controller.id)).map((c) => c.camera_id)).toEqual([porch.id]);

      const from = adminWs.messages.length;
      const enabled = (await updateController(controller.id, { enabled: true }).expect(200)).body;
      expect(enabled).toMatchObject({ enabled: true, status: 'connected' });
      expect(await getCamera(porch.id)).toMatchObject({ status: 'running' });
      const back = await adminWs.next(
        (m) =>
          m.type === 'controller.status' &&
          m.data.controller_id === controller.id &&
          m.data.status === 'connected',
        from,
      );
      expect(back.data.controller_name).toBe('Lively');
      expect(await eventsOf(porch.id)).toHaveLength(count);
      const sent = lively.startSmartDetection(porchId, ['person'], { score: 67 });
      await eventFor(porch.id, sent.eventId!);
      expect(viewerWs.messages.some((m) => m.type === 'controller.status')).toBe(false);
      expect(viewerWs.messages.some((m) => m.type === 'event.created')).toBe(true);
    });

    it('keeps the cameras (offline, "deleted") and their events when the controller is deleted', async () => {
      const events = await eventsOf(porch.id);
      expect(events.length).toBeGreaterThan(0);
      await t.http.delete(`${API}/protect/controllers/${controller.id}`).set(auth()).expect(204);
      await t.http.get(`${API}/protect/controllers/${controller.id}`).set(auth()).expect(404);
      expect(lively.wsClientCount).toBe(0);
      const camera = await getCamera(porch.id);
      expect(camera).toMatchObject({
        status: 'offline',
        protect_controller_id: controller.id,
        protect_camera_id: porchId,
      });
      expect(camera.status_message).toMatch(/deleted/i);
      expect(await eventsOf(porch.id)).toEqual(events);
      // Nothing listens any more.
      lively.startSmartDetection(porchId, ['person'], { score: 99 });
      await sleep(300);
      expect(await eventsOf(porch.id)).toHaveLength(events.length);
    });
  });

  describe('burst', () => {
    it('turns 200 quick smart detections across 10 cameras into exactly 200 events, each with an image', async () => {
      const busy = await FakeProtectConsole.start({
        cameras: Array.from({ length: 10 }, (_, i) => ({ name: `Lane ${i + 1}` })),
      });
      try {
        const controller = (
          await createController({
            name: 'Busy',
            host: '127.0.0.1',
            port: busy.port,
            username: USERNAME,
            password: PASSWORD,
          }).expect(201)
        ).body;
        expect(controller.status).toBe('connected');
        const lanes = busy.listCameras();
        const adopted = new Map<string, string>();
        for (const lane of lanes) adopted.set(lane.id, (await adopt(controller.id, lane.id, lane.name)).id);

        const sent = new Map<string, { cameraId: string; score: number }>();
        for (let i = 0; i < 200; i++) {
          const lane = lanes[i % lanes.length];
          const score = 40 + (i % 60);
          const emission = busy.startSmartDetection(lane.id, [i % 2 ? 'vehicle' : 'person'], { score });
          sent.set(emission.eventId!, { cameraId: adopted.get(lane.id)!, score });
        }
        const ids = [...adopted.values()];
        const events = await waitFor(
          '200 events',
          async () => {
            const items = await eventsOf(...ids);
            return items.length >= 200 ? items : undefined;
          },
          20_000,
          200,
        );
        await sleep(300); // nothing late
        const final = await eventsOf(...ids);
        expect(final).toHaveLength(200);
        expect(new Set(final.map((e) => e.protect_event_id)).size).toBe(200);
        for (const event of events) {
          const origin = sent.get(event.protect_event_id);
          expect(origin).toBeDefined();
          expect(event.camera_id).toBe(origin!.cameraId);
          expect(event.confidence).toBe(origin!.score);
          expect(event.thumbnail_url).toBe(`/api/v1/events/${event.id}/thumbnail`);
        }
        const [row] = await t.sql<{ n: string }>(
          'SELECT count(*) AS n FROM events WHERE camera_id = ANY($1) AND image_file IS NOT NULL',
          [ids],
        );
        expect(Number(row.n)).toBe(200);
        expect(Buffer.compare(await thumbnail(final[0].id), FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);
        expect(Buffer.compare(await thumbnail(final[199].id), FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);
      } finally {
        await busy.stop();
      }
    }, 40_000);
  });

  describe('service restart', () => {
    it('reconnects after a restart, and ends a detection that started before it without duplicating it', async () => {
      const street = ((await t.http.get(`${API}/cameras`).set(auth()).expect(200)).body as Body[]).find(
        (c) => c.name === 'Street',
      )!;
      const sent = fake.startSmartDetection(cam.Street, ['licensePlate'], { score: 55 });
      const event = await eventFor(street.id, sent.eventId!);

      const first = t;
      await first.stopApp();
      await waitFor('the console connection to close', () => fake.wsClientCount === 0, 3000, POLL_MS);
      t = await startTestApp({ databaseName: first.databaseName, env: { DATA_DIR: first.config.dataDir } });
      apps.push(t);
      admin = await t.adminToken();
      expect(await getController(home.id)).toMatchObject({ status: 'connected', status_message: null });
      expect(await getCamera(street.id)).toMatchObject({ status: 'running' });

      // The console sends the start again (as after a reconnect), then the end.
      fake.sendPacket(
        { action: 'add', modelKey: 'event', id: sent.eventId },
        {
          id: sent.eventId,
          modelKey: 'event',
          type: 'smartDetectZone',
          start: sent.start,
          score: 55,
          smartDetectTypes: ['licensePlate'],
          metadata: {},
          camera: cam.Street,
        },
      );
      fake.endSmartDetection(sent.eventId!, { score: 93, licensePlate: 'RST42' });
      const updated = await waitFor(
        'the end applied after the restart',
        async () => {
          const e = await eventById(event.id);
          return e.confidence === 93 ? e : undefined;
        },
        5000,
        POLL_MS,
      );
      expect(updated.objects_detected).toEqual(['license_plate', 'plate:RST42']);
      await marker(fake, street.id, cam.Street);
      expect((await eventsOf(street.id)).filter((e) => e.protect_event_id === sent.eventId)).toHaveLength(1);
      expect(Buffer.compare(await thumbnail(event.id), FAKE_PROTECT_SNAPSHOT_JPEG)).toBe(0);
    });
  });
});
