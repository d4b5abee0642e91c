import { format } from 'node:util';
import { Agent, interceptors, Pool, type Dispatcher } from 'undici';
import type { ProtectApi, ProtectEventPacket, ProtectLogging } from 'unifi-protect';
import { stopAllFakeCameras } from './fake-lifecycle';
import { encodeProtectPacket, FAKE_PROTECT_SNAPSHOT_JPEG, FakeProtectConsole } from './protect-console';

// The real unifi-protect 4.28.0 client (ESM-only, hence the dynamic import) against the fake console.
type ProtectModule = typeof import('unifi-protect');

const USERNAME = 'vigil';
const PASSWORD = 'vigil-secret';
const INVALID_CREDENTIALS = 'Invalid login credentials given. Please check your login and password.';

let protect: ProtectModule;
const clients = new Set<ProtectApi>();

/** A logging interface for ProtectApi that keeps every line as `level: message`. */
function captureLog(): { log: ProtectLogging; lines: string[] } {
  const lines: string[] = [];
  const level =
    (name: string) =>
    (message: string, ...parameters: unknown[]): void => {
      lines.push(`${name}: ${format(message, ...parameters)}`);
    };
  return {
    lines,
    log: { debug: level('debug'), info: level('info'), warn: level('warn'), error: level('error') },
  };
}

function newApi(log: ProtectLogging): ProtectApi {
  const api = new protect.ProtectApi(log);
  clients.add(api);
  return api;
}

/** Logged in and bootstrapped (so the updates WebSocket is open), with every message collected. */
async function connected(fake: FakeProtectConsole) {
  const { log, lines } = captureLog();
  const api = newApi(log);
  expect(await api.login(fake.address, USERNAME, PASSWORD)).toBe(true);
  expect(await api.getBootstrap()).toBe(true);
  const packets: ProtectEventPacket[] = [];
  api.on('message', (packet: ProtectEventPacket) => packets.push(packet));
  return { api, lines, packets };
}

/** Resolves once `condition()` holds; fails after `timeoutMs`. */
async function waitUntil(condition: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** Resolves once `packets` holds at least `count` entries. */
function waitForPackets(packets: ProtectEventPacket[], count: number): Promise<void> {
  return waitUntil(() => packets.length >= count, `${count} packets (got ${packets.length})`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The library's private realtime socket (null once it closed): its only trace of a lost connection. */
function eventsSocket(api: ProtectApi): unknown {
  return (api as unknown as { _eventsWs: unknown })._eventsWs;
}

beforeAll(async () => {
  protect = await import('unifi-protect');
});

afterEach(() => {
  for (const api of clients) api.reset();
  clients.clear();
});

afterAll(() => stopAllFakeCameras());

describe('FakeProtectConsole with the real unifi-protect ProtectApi', () => {
  let fake: FakeProtectConsole;

  beforeAll(async () => {
    fake = await FakeProtectConsole.start({
      nvrName: 'Garage NVR',
      nvrVersion: '5.3.48',
      cameras: [
        { name: 'Driveway', model: 'G4 Bullet' },
        { name: 'Front Door', model: 'G4 Doorbell' },
        { name: 'Street', model: 'AI Pro' },
      ],
    });
  });

  afterEach(() => {
    fake.goSilent(false);
    fake.setDeflate(true);
    fake.rejectLogins(null);
    fake.refuseWebsockets(null);
    fake.setMode('protect');
    fake.setCredentials(USERNAME, PASSWORD);
  });

  afterAll(() => fake.stop());

  it('logs in (TOKEN cookie + CSRF token) and bootstraps the NVR and the cameras', async () => {
    const logins = fake.logins;
    const bootstraps = fake.bootstrapRequests;
    const { log, lines } = captureLog();
    const api = newApi(log);
    const loginEvents: boolean[] = [];
    api.on('login', (ok: boolean) => loginEvents.push(ok));
    const bootstrapEvents: unknown[] = [];
    api.on('bootstrap', (bootstrap: unknown) => bootstrapEvents.push(bootstrap));

    expect(await api.login(fake.address, USERNAME, PASSWORD)).toBe(true);
    expect(loginEvents).toEqual([true]);
    expect(api.bootstrap).toBeNull();
    expect(await api.getBootstrap()).toBe(true);

    const bootstrap = api.bootstrap!;
    expect(bootstrapEvents).toEqual([bootstrap]);
    expect(bootstrap.nvr.name).toBe('Garage NVR');
    expect(bootstrap.nvr.version).toBe('5.3.48');
    expect(bootstrap.nvr.mac).toMatch(/^[0-9A-F]{12}$/);
    expect(api.name).toBe('Garage NVR [UNVR]');
    expect(api.isAdminUser).toBe(true);
    expect(bootstrap.cameras.map((c) => [c.name, c.type, c.marketName, c.state, c.isConnected])).toEqual([
      ['Driveway', 'UVC G4 Bullet', 'G4 Bullet', 'CONNECTED', true],
      ['Front Door', 'UVC G4 Doorbell', 'G4 Doorbell', 'CONNECTED', true],
      ['Street', 'UVC AI Pro', 'AI Pro', 'CONNECTED', true],
    ]);
    const door = bootstrap.cameras[1];
    expect(door.featureFlags.isDoorbell && door.featureFlags.hasChime).toBe(true);
    expect(bootstrap.cameras[0].featureFlags.isDoorbell).toBe(false);
    expect(bootstrap.cameras[2].featureFlags.smartDetectTypes).toEqual(
      expect.arrayContaining(['person', 'vehicle', 'licensePlate']),
    );
    expect(lines).toEqual([]);

    // What went over the wire: the login body, then the bootstrap with the cookie and the CSRF token.
    expect(fake.logins - logins).toBe(1);
    expect(fake.bootstrapRequests - bootstraps).toBe(1);
    const [login, bootstrapRequest] = fake.requests.slice(-2);
    expect(login).toMatchObject({ method: 'POST', path: '/api/auth/login' });
    expect(login.body).toEqual({ username: USERNAME, password: PASSWORD, rememberMe: true, token: '' });
    expect(bootstrapRequest.path).toBe('/proxy/protect/api/bootstrap');
    expect(bootstrapRequest.headers.cookie).toMatch(/^TOKEN=[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(bootstrapRequest.headers['x-csrf-token']).toEqual(expect.any(String));
    expect(bootstrapRequest.headers['user-agent']).toBe('unifi-protect');
    // The updates WebSocket is open and asked for the bootstrap's lastUpdateId.
    expect(fake.wsClientCount).toBe(1);
    expect(fake.wsLastUpdateIds.at(-1)).toBe(bootstrap.lastUpdateId);
  });

  it('reports a wrong password as login() === false plus an error log line, never by throwing', async () => {
    const { log, lines } = captureLog();
    const api = newApi(log);
    const loginEvents: boolean[] = [];
    api.on('login', (ok: boolean) => loginEvents.push(ok));
    const before = fake.requests.length;

    expect(await api.login(fake.address, USERNAME, 'wrong')).toBe(false);

    expect(loginEvents).toEqual([false]);
    expect(api.bootstrap).toBeNull();
    // A 401 without a CSRF token makes the library fetch one from `/` and try once more.
    expect(fake.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /api/auth/login',
      'GET /',
      'POST /api/auth/login',
    ]);
    expect(lines).toEqual([
      `error: ${fake.address}: API error: ${INVALID_CREDENTIALS}`,
      `error: ${fake.address}: API error: ${INVALID_CREDENTIALS}`,
    ]);
    // getBootstrap() after a failed login logs in twice more and fails the same way.
    expect(await api.getBootstrap()).toBe(false);
    expect(api.bootstrap).toBeNull();
  });

  it('follows setCredentials() and rejectLogins()', async () => {
    fake.setCredentials('other', 'pass-2');
    const { log } = captureLog();
    expect(await newApi(log).login(fake.address, USERNAME, PASSWORD)).toBe(false);
    expect(await newApi(log).login(fake.address, 'other', 'pass-2')).toBe(true);
    fake.rejectLogins(401);
    const refused = captureLog();
    expect(await newApi(refused.log).login(fake.address, 'other', 'pass-2')).toBe(false);
    expect(refused.lines).toContain(`error: ${fake.address}: API error: ${INVALID_CREDENTIALS}`);
  });

  it('logs in again by itself when the session expires', async () => {
    const { api, lines } = await connected(fake);
    const logins = fake.logins;
    fake.expireSessions();
    api.reset(); // closes the updates socket; the cookie is kept and is now stale
    expect(await api.getBootstrap()).toBe(true);
    expect(fake.logins).toBe(logins + 1);
    // Pitfall: an expired session logs the same line as a wrong password.
    expect(lines).toContain(`error: ${fake.address}: API error: ${INVALID_CREDENTIALS}`);
  });

  describe.each([
    ['deflated', true],
    ['plain', false],
  ])('realtime updates (%s payloads)', (_label, deflate) => {
    beforeEach(() => fake.setDeflate(deflate));

    it('delivers motion start/end as event + camera packets through the message event', async () => {
      const { api, packets } = await connected(fake);
      const camera = fake.cameraByName('Driveway');
      const start = fake.startMotion(camera.id);
      expect(start.delivered).toBe(1);
      await waitForPackets(packets, 2);
      const end = fake.endMotion(start.eventId!);
      await waitForPackets(packets, 4);

      expect(packets.map((p) => p.header)).toEqual([
        { action: 'add', modelKey: 'event', id: start.eventId, newUpdateId: start.updateIds[0] },
        { action: 'update', modelKey: 'camera', id: camera.id, newUpdateId: start.updateIds[1] },
        {
          action: 'update',
          modelKey: 'event',
          id: start.eventId,
          newUpdateId: end.updateIds[0],
          recordModel: 'camera',
          recordId: camera.id,
        },
        { action: 'update', modelKey: 'camera', id: camera.id, newUpdateId: end.updateIds[1] },
      ]);
      expect(packets[0].payload).toMatchObject({
        id: start.eventId,
        modelKey: 'event',
        type: 'motion',
        start: start.start,
        camera: camera.id,
        score: 0,
        smartDetectTypes: [],
      });
      expect(packets[1].payload).toEqual({ isMotionDetected: true, lastMotion: start.start });
      expect(packets[2].payload).toEqual({ end: end.end, score: expect.any(Number) });
      expect(packets[3].payload).toEqual({ isMotionDetected: false });
      // The library does not apply updates to its bootstrap copy; the fake's own state follows them.
      expect(api.bootstrap!.cameras[0].isMotionDetected).toBe(false);
      expect(fake.camera(camera.id).lastMotion).toBe(start.start);
    });

    it('delivers smart detections, with the license plate on the end update', async () => {
      const { packets } = await connected(fake);
      const street = fake.cameraByName('Street');
      const start = fake.startSmartDetection(street.id, ['vehicle', 'licensePlate'], { score: 87 });
      const end = fake.endSmartDetection(start.eventId!, { licensePlate: 'B-XY 123' });
      await waitForPackets(packets, 4);

      expect(packets[0].header).toMatchObject({ action: 'add', modelKey: 'event', id: start.eventId });
      expect(packets[0].payload).toMatchObject({
        type: 'smartDetectZone',
        smartDetectTypes: ['vehicle', 'licensePlate'],
        score: 87,
        camera: street.id,
        start: start.start,
      });
      expect(packets[1].payload).toEqual({ isSmartDetected: true });
      expect(packets[2].header).toMatchObject({ action: 'update', modelKey: 'event', recordId: street.id });
      const ended = packets[2].payload as { end: number; metadata: Record<string, unknown> };
      expect(ended.end).toBe(end.end);
      expect(ended.metadata.licensePlate).toEqual({ name: 'B-XY 123', confidenceLevel: 87 });
      expect(ended.metadata.detectedThumbnails).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'vehicle', name: 'B-XY 123' })]),
      );
      expect(packets[3].payload).toEqual({ isSmartDetected: false });
    });

    it('delivers a doorbell ring and camera disconnect/reconnect', async () => {
      const { packets } = await connected(fake);
      const door = fake.cameraByName('Front Door');
      const ring = fake.ring(door.id);
      const offline = fake.setCameraConnected(door.id, false);
      const online = fake.setCameraConnected(door.id, true);
      await waitForPackets(packets, 4);

      expect(packets[0].header).toMatchObject({ action: 'add', modelKey: 'event', id: ring.eventId });
      expect(packets[0].payload).toMatchObject({ type: 'ring', camera: door.id, start: ring.start });
      expect(packets[0].payload).not.toHaveProperty('end');
      expect(packets[1].payload).toEqual({ lastRing: ring.start });
      expect(packets[2].header).toEqual({
        action: 'update',
        modelKey: 'camera',
        id: door.id,
        newUpdateId: offline.updateIds[0],
      });
      expect(packets[2].payload).toMatchObject({ isConnected: false, state: 'DISCONNECTED' });
      expect(packets[3].payload).toMatchObject({ isConnected: true, state: 'CONNECTED' });
      expect(online.eventId).toBeNull();
      expect(() => fake.ring(fake.cameraByName('Driveway').id)).toThrow(/not a doorbell/);
    });
  });

  it('adds and updates cameras: the bootstrap follows, and emitted changes arrive as packets', async () => {
    const { api, packets } = await connected(fake);
    const garage = fake.addCamera(
      { name: 'Garage', model: 'G4 Doorbell Pro', isConnected: false },
      { emit: true },
    );
    fake.updateCamera(garage.id, { name: 'Garage Door', recordingSettings: { mode: 'always' } });
    await waitForPackets(packets, 2);

    expect(packets[0].header).toMatchObject({ action: 'add', modelKey: 'camera', id: garage.id });
    expect(packets[0].payload).toMatchObject({
      name: 'Garage',
      type: 'UVC G4 Doorbell Pro',
      state: 'DISCONNECTED',
    });
    expect(packets[1].payload).toEqual({ name: 'Garage Door', recordingSettings: { mode: 'always' } });
    expect(fake.camera(garage.id).recordingSettings).toMatchObject({ mode: 'always', prePaddingSecs: 2 });
    api.reset();
    expect(await api.getBootstrap()).toBe(true);
    const listed = api.bootstrap!.cameras.find((c) => c.id === garage.id)!;
    expect([listed.name, listed.isConnected, listed.featureFlags.hasPackageCamera]).toEqual([
      'Garage Door',
      false,
      true,
    ]);
    fake.removeCamera(garage.id);
  });

  it('sends nvr heartbeats and pings when asked to, and nothing while silent', async () => {
    const lively = await FakeProtectConsole.start({ heartbeatMs: 30, pingIntervalMs: 30 });
    try {
      const { packets } = await connected(lively);
      await waitForPackets(packets, 2);
      expect(packets[0].header).toMatchObject({ action: 'update', modelKey: 'nvr', id: lively.nvrId });
      expect(packets[0].payload).toEqual({ lastSeen: expect.any(Number), uptime: expect.any(Number) });
      await waitUntil(() => lively.wsPongsReceived > 0, 'a pong from undici');
      lively.goSilent(true);
      await sleep(50);
      const count = packets.length;
      await sleep(200);
      expect(packets.length).toBe(count);
    } finally {
      await lively.stop();
    }
  });

  it('encodes packets the way the library decodes them (formats, deflate flag, sizes)', async () => {
    const { log, lines } = captureLog();
    const header = { action: 'update', newUpdateId: 'u1', modelKey: 'camera', id: 'c1' };
    for (const deflate of [false, true]) {
      const json = encodeProtectPacket(header, { isMotionDetected: true }, { deflate });
      expect([json[0], json[1], json[2], json[3]]).toEqual([1, 1, deflate ? 1 : 0, 0]);
      const second = 8 + json.readUInt32BE(4);
      expect([json[second], json[second + 1], json[second + 2]]).toEqual([2, 1, deflate ? 1 : 0]);
      expect(json.length).toBe(second + 8 + json.readUInt32BE(second + 4));
      expect(await protect.decodePacket(log, json)).toEqual({ header, payload: { isMotionDetected: true } });
      expect(await protect.decodePacket(log, encodeProtectPacket(header, 'text', { deflate }))).toEqual({
        header,
        payload: 'text',
      });
      const bytes = Buffer.from([0, 1, 2, 255]);
      expect(
        (await protect.decodePacket(log, encodeProtectPacket(header, bytes, { deflate })))?.payload,
      ).toEqual(bytes);
    }
    expect(lines).toEqual([]);
  });

  it('fetches a snapshot JPEG with getSnapshot(camera, {width, height}) and counts the requests', async () => {
    const { api } = await connected(fake);
    const camera = api.bootstrap!.cameras[0];
    const before = fake.snapshotRequests(camera.id);

    const jpeg = await api.getSnapshot(camera, { width: 640, height: 360 });

    expect(jpeg).toEqual(FAKE_PROTECT_SNAPSHOT_JPEG);
    expect(jpeg!.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(fake.snapshotRequests(camera.id)).toBe(before + 1);
    expect(fake.requests.at(-1)).toMatchObject({
      method: 'GET',
      path: `/proxy/protect/api/cameras/${camera.id}/snapshot`,
      query: { h: '360', w: '640' },
    });
    // A package snapshot of a camera without a package camera is refused locally, without a request.
    expect(await api.getSnapshot(camera, { usePackageCamera: true })).toBeNull();
    expect(fake.snapshotRequests(camera.id)).toBe(before + 1);
  });

  it('dropConnections(): the library logs and emits nothing, and only getBootstrap() reconnects', async () => {
    const { api, lines, packets } = await connected(fake);
    const logins = fake.logins;
    expect(eventsSocket(api)).not.toBeNull();

    fake.dropConnections();
    await waitUntil(() => eventsSocket(api) === null, 'the library to see the socket close');

    expect(fake.wsClientCount).toBe(0);
    expect(lines).toEqual([]);
    await sleep(300); // no reconnect attempt of its own
    expect(fake.wsClientCount).toBe(0);
    expect(fake.startMotion(fake.cameraByName('Driveway').id).delivered).toBe(0);
    expect(packets).toEqual([]);

    expect(await api.getBootstrap()).toBe(true);
    expect(fake.wsClientCount).toBe(1);
    expect(fake.logins).toBe(logins); // the session cookie is reused
    expect(fake.wsLastUpdateIds.at(-1)).toBe(api.bootstrap!.lastUpdateId);
    fake.ring(fake.cameraByName('Front Door').id);
    await waitForPackets(packets, 2);
  });

  it('refuseWebsockets(): getBootstrap() is false, silently, although the bootstrap was fetched', async () => {
    const { api, lines } = await connected(fake);
    fake.refuseWebsockets(503);
    fake.dropConnections();
    await waitUntil(() => eventsSocket(api) === null, 'the library to see the socket close');
    expect(await api.getBootstrap()).toBe(false);
    expect(api.bootstrap).not.toBeNull();
    expect(lines).toEqual([]);
  });

  it('goSilent(): the socket stays open and nothing arrives; reset() + getBootstrap() start a new one', async () => {
    const { api, lines, packets } = await connected(fake);
    const total = fake.wsConnectionsTotal;
    fake.goSilent(true);
    expect(fake.startMotion(fake.cameraByName('Driveway').id).delivered).toBe(0);
    await sleep(200);
    expect(packets).toEqual([]);
    expect(eventsSocket(api)).not.toBeNull();
    expect(fake.wsClientCount).toBe(1);
    // getBootstrap() alone keeps the silent socket (it only reconnects when the socket is gone).
    expect(await api.getBootstrap()).toBe(true);
    expect(fake.wsConnectionsTotal).toBe(total);

    fake.goSilent(false);
    api.reset();
    expect(await api.getBootstrap()).toBe(true);
    expect(fake.wsConnectionsTotal).toBe(total + 1);
    await sleep(100);
    expect(fake.wsClientCount).toBe(1);
    fake.ring(fake.cameraByName('Front Door').id);
    await waitForPackets(packets, 2);
    expect(lines).toEqual([]);
  });

  it('a corrupt packet is logged and makes the library close the socket', async () => {
    const { api, lines } = await connected(fake);
    fake.sendRawMessage(Buffer.from([1, 1, 0, 0, 0, 0, 0, 9, 0x7b]));
    await waitUntil(() => eventsSocket(api) === null, 'the library to close the socket');
    expect(lines).toEqual([
      expect.stringContaining('API error: Realtime events API: error decoding update packet'),
      expect.stringContaining('API error: Unable to process message from the realtime update events API.'),
    ]);
  });

  it('answers like a console that wants the CSRF token on the login, and like a viewer-only user', async () => {
    const strict = await FakeProtectConsole.start({ requireCsrfForLogin: true, admin: false, cameras: [] });
    try {
      const { log, lines } = captureLog();
      const api = newApi(log);
      expect(await api.login(strict.address, USERNAME, PASSWORD)).toBe(true);
      expect(strict.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        'POST /api/auth/login',
        'GET /',
        'POST /api/auth/login',
      ]);
      expect(await api.getBootstrap()).toBe(true);
      expect(api.isAdminUser).toBe(false);
      expect(lines).toContain(
        `info: Vigil Test NVR [UNVR]: User '${USERNAME}' requires the Super Admin role in order to change certain settings like camera RTSP stream availability.`,
      );
    } finally {
      await strict.stop();
    }
  });

  it('hangRequests(): requests time out in the library (abort after its timeout), then work again', async () => {
    const { api, lines } = await connected(fake);
    fake.hangRequests(true);
    const started = Date.now();
    // retrieve() is the library's public request helper; its default timeout is 3500 ms, 300 ms here.
    const response = await api.retrieve(api.getApiEndpoint('bootstrap'), { method: 'GET' }, { timeout: 300 });
    expect(response).toBeNull();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(lines).toEqual([
      expect.stringContaining(
        'API error: Protect controller is taking too long to respond to a request. This error can usually be safely ignored.',
      ),
    ]);
    fake.hangRequests(false);
    expect(await api.getSnapshot(api.bootstrap!.cameras[0])).toEqual(FAKE_PROTECT_SNAPSHOT_JPEG);
  });

  it('a non-Protect HTTPS server: login() is false after ~3 s of retried 404s, with a "temporary" log line', async () => {
    fake.setMode('plain-https');
    const { log, lines } = captureLog();
    const api = newApi(log);
    const before = fake.requests.length;
    const started = Date.now();

    expect(await api.login(fake.address, USERNAME, PASSWORD)).toBe(false);

    expect(Date.now() - started).toBeGreaterThan(2500);
    const requests = fake.requests.slice(before).map((r) => `${r.method} ${r.path}`);
    expect(requests.filter((r) => r === 'POST /api/auth/login')).toHaveLength(6); // 1 + 5 retries
    expect(requests.at(-1)).toBe('GET /');
    expect(lines).toEqual([
      `error: ${fake.address}: API error: Unable to connect to the Protect controller. This is temporary and may occur during device reboots.`,
    ]);
  });

  it('TLS: the library takes any certificate; a subclass with its own dispatchers can verify', async () => {
    // What `verify_tls: true` can look like: the same dispatchers as ProtectApi.reset(), but verifying.
    class VerifyingProtectApi extends protect.ProtectApi {
      constructor(
        log: ProtectLogging,
        private readonly ca?: string,
      ) {
        super(log);
      }

      override reset(): void {
        super.reset();
        const self = this as unknown as {
          nvrAddress: string;
          dispatcher?: Dispatcher;
          wsAgent: Agent | null;
        };
        if (!self.nvrAddress) return;
        void self.dispatcher?.destroy();
        void self.wsAgent?.destroy();
        const connect = { rejectUnauthorized: true, ...(this.ca ? { ca: this.ca } : {}) };
        self.dispatcher = new Pool(`https://${self.nvrAddress}`, {
          allowH2: true,
          clientTtl: 60_000,
          connect,
          connections: 5,
        }).compose(
          interceptors.retry({
            maxRetries: 5,
            maxTimeout: 1500,
            methods: ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'],
            minTimeout: 100,
            statusCodes: [400, 404, 429, 500, 502, 503, 504],
            timeoutFactor: 2,
          }),
        );
        self.wsAgent = new Agent({ connect: { keepAlive: true, ...connect }, pipelining: 0 });
      }
    }

    const untrusted = captureLog();
    const strict = new VerifyingProtectApi(untrusted.log);
    clients.add(strict);
    const before = fake.requests.length;
    expect(await strict.login(fake.address, USERNAME, PASSWORD)).toBe(false);
    expect(fake.requests.length).toBe(before); // no request got through the handshake
    expect(untrusted.lines).toHaveLength(1);
    expect(untrusted.lines[0]).toContain('DEPTH_ZERO_SELF_SIGNED_CERT');

    const trusted = captureLog();
    const pinned = new VerifyingProtectApi(trusted.log, fake.certificatePem);
    clients.add(pinned);
    expect(await pinned.login(fake.address, USERNAME, PASSWORD)).toBe(true);
    expect(await pinned.getBootstrap()).toBe(true);
    expect(fake.wsClientCount).toBeGreaterThanOrEqual(1);
    expect(trusted.lines).toEqual([]);
  });
});
