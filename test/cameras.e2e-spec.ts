import { existsSync } from 'node:fs';
import { SecretBox } from '../src/common/crypto/secret-box';
import { ImageStore } from '../src/common/storage/image-store';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainMessage } from '../src/modules/realtime/domain-events';
import { startTestApp, TestApp } from './support/test-app';

/** /cameras: CRUD, validation per source type, encrypted passwords, cascade delete, scopes and bus events. */

const CAMERA_FIELDS = [
  'created_at',
  'detection_types',
  'detection_zones',
  'device',
  'enabled',
  'frame_rate',
  'has_password',
  'id',
  'last_event_at',
  'last_frame_at',
  'motion_cooldown_seconds',
  'motion_sensitivity',
  'name',
  'prompt_override',
  'protect_camera_id',
  'protect_controller_id',
  'source_type',
  'status',
  'status_message',
  'updated_at',
  'url',
  'username',
];
const ALL_TYPES = [
  'person',
  'vehicle',
  'animal',
  'package',
  'face',
  'license_plate',
  'motion',
  'ring',
  'unknown',
];
const UNKNOWN_ID = '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5b';
const MALFORMED_IDS = ['not-a-uuid', '12345', '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5', "1' OR '1'='1"];
const CONTROLLER_ID = '3f6e2a1c-9b7d-4e0a-8c5f-1d2e3f4a5b6c';
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0xff, 0xd9]);

type Camera = Record<string, unknown> & { id: string; name: string };

describe('cameras (e2e)', () => {
  let t: TestApp;
  let admin: string;
  let seq = 0;
  const messages: DomainMessage[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
    unsubscribe = t.app.get(DomainEventBus).subscribe((m) => messages.push(m));
    // A Protect camera must name an existing controller (a disabled one: nothing connects to it here).
    await t.sql(
      `INSERT INTO protect_controllers (id, name, host, username, password_encrypted, enabled)
       VALUES ($1, 'Test console', '127.0.0.1', 'vigil', 'x', false)`,
      [CONTROLLER_ID],
    );
  });
  afterAll(async () => {
    unsubscribe();
    await t.close();
  });

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const adminAuth = (): Record<string, string> => bearer(admin);
  const uniqueName = (base: string) => `${base} ${++seq}`;

  const create = (body: unknown, headers = adminAuth()) =>
    t.http
      .post('/api/v1/cameras')
      .set(headers)
      .send(body as object);
  const update = (id: string, body: unknown, headers = adminAuth()) =>
    t.http
      .put(`/api/v1/cameras/${id}`)
      .set(headers)
      .send(body as object);
  const get = (id: string, headers = adminAuth()) => t.http.get(`/api/v1/cameras/${id}`).set(headers);
  const list = (headers = adminAuth()) => t.http.get('/api/v1/cameras').set(headers);
  const remove = (id: string, headers = adminAuth()) => t.http.delete(`/api/v1/cameras/${id}`).set(headers);

  const rtspBody = (overrides: Record<string, unknown> = {}) => ({
    name: uniqueName('Front door'),
    source_type: 'rtsp',
    url: 'rtsp://192.168.1.20:554/stream1',
    username: 'viewer',
    password: 'rtsp-secret-pw',
    ...overrides,
  });
  const validBodies = () => ({
    rtsp: rtspBody(),
    rtsps: rtspBody({ url: 'rtsps://cam.example.net:7441/abc?enableSrtp', username: null, password: null }),
    mjpeg: {
      name: uniqueName('Garden'),
      source_type: 'mjpeg',
      url: 'http://192.168.1.30/video.mjpg',
      username: 'mjpeg-user',
      password: 'mjpeg-secret-pw',
    },
    mjpegHttps: { name: uniqueName('Porch'), source_type: 'mjpeg', url: 'https://porch.local:8443/stream' },
    usb: { name: uniqueName('Desk'), source_type: 'usb', device: '/dev/video0' },
    protect: {
      name: uniqueName('Doorbell'),
      source_type: 'protect',
      protect_controller_id: CONTROLLER_ID,
      protect_camera_id: '65a1b2c3d4e5f60718293a4b',
    },
  });

  async function newCamera(body: Record<string, unknown> = rtspBody()): Promise<Camera> {
    return (await create(body).expect(201)).body as Camera;
  }
  /** Every camera row, without what live capture changes by itself (status, status_message, last_frame_at). */
  async function rows(): Promise<Record<string, unknown>[]> {
    const all = await t.sql('SELECT * FROM cameras ORDER BY id');
    return all.map(({ status: _s, status_message: _m, last_frame_at: _f, ...rest }) => rest);
  }
  async function row(id: string): Promise<Record<string, unknown> | undefined> {
    return (await t.sql('SELECT * FROM cameras WHERE id = $1', [id]))[0];
  }
  async function waitForMessage(predicate: (m: DomainMessage) => boolean): Promise<DomainMessage> {
    const deadline = Date.now() + 3000;
    for (;;) {
      const found = messages.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error('No matching domain event was published');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  const dataOf = (m: DomainMessage) => m.data as Record<string, unknown>;
  const cameraUpdate =
    (id: string, extra: (data: Record<string, unknown>) => boolean = () => true) =>
    (m: DomainMessage) =>
      m.type === 'camera.updated' && dataOf(m).id === id && extra(dataOf(m));
  const fieldsOf = (res: { body: { errors?: { field: string }[] } }) =>
    (res.body.errors ?? []).map((e) => e.field);

  describe('create, read, update and delete for each source type', () => {
    it.each(Object.keys(validBodies()))('%s', async (kind) => {
      const body = validBodies()[kind as keyof ReturnType<typeof validBodies>] as Record<string, unknown>;
      const created = await create(body).expect(201);
      const camera = created.body as Camera;
      expect(Object.keys(camera).sort()).toEqual(CAMERA_FIELDS);
      const password = body.password as string | undefined;
      expect(camera).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: body.name,
        source_type: body.source_type,
        url: body.url ?? null,
        username: body.username ?? null,
        has_password: Boolean(password),
        device: body.device ?? null,
        protect_controller_id: body.protect_controller_id ?? null,
        protect_camera_id: body.protect_camera_id ?? null,
        enabled: false,
        status: 'stopped',
        status_message: null,
        frame_rate: 5,
        motion_sensitivity: 'medium',
        motion_cooldown_seconds: 30,
        detection_zones: [],
        detection_types: ALL_TYPES,
        prompt_override: null,
        last_frame_at: null,
        last_event_at: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: camera.created_at,
      });

      expect((await get(camera.id).expect(200)).body).toEqual(camera);
      expect((await list().expect(200)).body).toContainEqual(camera);
      expect(await row(camera.id)).toMatchObject({ name: body.name, source_type: body.source_type });

      const renamed = await update(camera.id, { name: `${camera.name} (new)`, frame_rate: 12 }).expect(200);
      expect(renamed.body).toEqual({
        ...camera,
        name: `${camera.name} (new)`,
        frame_rate: 12,
        updated_at: expect.any(String),
      });
      expect((await get(camera.id).expect(200)).body).toEqual(renamed.body);

      await remove(camera.id).expect(204);
      expect((await get(camera.id).expect(404)).body).toEqual({
        detail: 'Camera not found',
        status_code: 404,
      });
      expect((await list().expect(200)).body.map((c: Camera) => c.id)).not.toContain(camera.id);
      expect(await row(camera.id)).toBeUndefined();
    });

    it('stores every optional setting as sent (trimmed name and url; zones enabled by default)', async () => {
      const name = uniqueName('Driveway');
      const zones = [
        {
          name: ' Lawn ',
          points: [
            [0, 0],
            [1, 0],
            [1, 1],
          ],
        },
        {
          name: 'Street',
          enabled: false,
          points: [
            [0.1, 0.25],
            [0.5, 0.125],
            [0.9, 0.3],
            [0.4, 0.9],
          ],
        },
      ];
      const res = await create({
        name: `  ${name}  `,
        source_type: 'rtsp',
        url: '  rtsp://10.0.0.8/h264  ',
        enabled: true,
        frame_rate: 30,
        motion_sensitivity: 'high',
        motion_cooldown_seconds: 3600,
        detection_zones: zones,
        detection_types: ['vehicle', 'person'],
        prompt_override: 'Mention licence plates.',
      }).expect(201);
      expect(res.body).toMatchObject({
        name,
        url: 'rtsp://10.0.0.8/h264',
        username: null,
        has_password: false,
        enabled: true,
        status: 'starting', // an enabled camera starts capture at once
        frame_rate: 30,
        motion_sensitivity: 'high',
        motion_cooldown_seconds: 3600,
        detection_zones: [
          { name: 'Lawn', enabled: true, points: zones[0].points },
          { name: 'Street', enabled: false, points: zones[1].points },
        ],
        detection_types: ['vehicle', 'person'],
        prompt_override: 'Mention licence plates.',
      });
      expect(await row(res.body.id)).toMatchObject({
        enabled: true,
        frame_rate: 30,
        detection_types: ['vehicle', 'person'],
        detection_zones: res.body.detection_zones,
      });
      // Extremes of the ranges are accepted too.
      await create(
        rtspBody({
          frame_rate: 1,
          motion_sensitivity: 'low',
          motion_cooldown_seconds: 0,
          detection_types: ['ring'],
          prompt_override: 'p'.repeat(2000),
          name: 'n'.repeat(100),
        }),
      ).expect(201);
    });

    it('lists every camera as a plain array ordered by name regardless of letter case', async () => {
      await newCamera(rtspBody({ name: 'zz-order Bravo' }));
      await newCamera(rtspBody({ name: 'zz-order alpha' }));
      await newCamera(rtspBody({ name: 'zz-order Charlie' }));
      const res = await list().expect(200);
      expect(Array.isArray(res.body)).toBe(true);
      expect(res.body).toHaveLength((await rows()).length);
      for (const camera of res.body) expect(Object.keys(camera).sort()).toEqual(CAMERA_FIELDS);
      expect(res.body.map((c: Camera) => c.name).filter((n: string) => n.startsWith('zz-order'))).toEqual([
        'zz-order alpha',
        'zz-order Bravo',
        'zz-order Charlie',
      ]);
    });
  });

  describe('validation', () => {
    const points = [
      [0, 0],
      [1, 0],
      [1, 1],
    ];
    const cases: {
      what: string;
      body: Record<string, unknown> | unknown[];
      field: string;
      message?: RegExp;
    }[] = [
      { what: 'no name', body: { ...rtspBody(), name: undefined }, field: 'body.name' },
      { what: 'empty name', body: rtspBody({ name: '' }), field: 'body.name' },
      { what: 'blank name', body: rtspBody({ name: '   ' }), field: 'body.name' },
      { what: 'name over 100', body: rtspBody({ name: 'n'.repeat(101) }), field: 'body.name' },
      { what: 'numeric name', body: rtspBody({ name: 42 }), field: 'body.name' },
      { what: 'null name', body: rtspBody({ name: null }), field: 'body.name' },
      { what: 'no source_type', body: rtspBody({ source_type: undefined }), field: 'body.source_type' },
      { what: 'unknown source_type', body: rtspBody({ source_type: 'http' }), field: 'body.source_type' },
      {
        what: 'rtsp without url',
        body: rtspBody({ url: undefined }),
        field: 'body.url',
        message: /url is required for source_type rtsp/,
      },
      { what: 'rtsp with null url', body: rtspBody({ url: null }), field: 'body.url' },
      { what: 'rtsp with empty url', body: rtspBody({ url: '  ' }), field: 'body.url' },
      {
        what: 'rtsp with http url',
        body: rtspBody({ url: 'http://cam/stream' }),
        field: 'body.url',
        message: /rtsp:\/\/ or rtsps:\/\//,
      },
      { what: 'rtsp without scheme', body: rtspBody({ url: '192.168.1.20:554/x' }), field: 'body.url' },
      { what: 'rtsp without host', body: rtspBody({ url: 'rtsp:///stream' }), field: 'body.url' },
      {
        what: 'user:pass@ in rtsp url',
        body: rtspBody({ url: 'rtsp://admin:hunter2@192.168.1.20/live' }),
        field: 'body.url',
        message: /username and password/,
      },
      {
        what: 'user@ in rtsp url',
        body: rtspBody({ url: 'rtsp://admin@192.168.1.20/live' }),
        field: 'body.url',
        message: /username and password/,
      },
      {
        what: 'mjpeg with rtsp url',
        body: { name: 'm', source_type: 'mjpeg', url: 'rtsp://cam/x' },
        field: 'body.url',
        message: /http:\/\/ or https:\/\//,
      },
      {
        what: 'user:pass@ in mjpeg url',
        body: { name: 'm', source_type: 'mjpeg', url: 'http://admin:hunter2@cam/video.mjpg' },
        field: 'body.url',
        message: /username and password/,
      },
      { what: 'mjpeg without url', body: { name: 'm', source_type: 'mjpeg' }, field: 'body.url' },
      {
        what: 'usb without device',
        body: { name: 'u', source_type: 'usb' },
        field: 'body.device',
        message: /device is required/,
      },
      {
        what: 'usb with a non-video device',
        body: { name: 'u', source_type: 'usb', device: '/dev/sda' },
        field: 'body.device',
      },
      {
        what: 'usb with a path escape',
        body: { name: 'u', source_type: 'usb', device: '/dev/video0/../../etc/passwd' },
        field: 'body.device',
      },
      {
        what: 'usb with a url',
        body: { name: 'u', source_type: 'usb', device: '/dev/video0', url: 'rtsp://cam/x' },
        field: 'body.url',
        message: /url is not allowed for source_type usb/,
      },
      {
        what: 'usb with a password',
        body: { name: 'u', source_type: 'usb', device: '/dev/video0', password: 'x' },
        field: 'body.password',
      },
      {
        what: 'usb with a username',
        body: { name: 'u', source_type: 'usb', device: '/dev/video0', username: 'x' },
        field: 'body.username',
      },
      {
        what: 'protect without controller',
        body: { name: 'p', source_type: 'protect', protect_camera_id: 'abc' },
        field: 'body.protect_controller_id',
      },
      {
        what: 'protect with a malformed controller id',
        body: { name: 'p', source_type: 'protect', protect_controller_id: 'abc', protect_camera_id: 'abc' },
        field: 'body.protect_controller_id',
      },
      {
        what: 'protect without camera id',
        body: { name: 'p', source_type: 'protect', protect_controller_id: CONTROLLER_ID },
        field: 'body.protect_camera_id',
      },
      {
        what: 'protect with a url',
        body: {
          name: 'p',
          source_type: 'protect',
          protect_controller_id: CONTROLLER_ID,
          protect_camera_id: 'abc',
          url: 'rtsps://nvr:7441/x',
        },
        field: 'body.url',
      },
      { what: 'rtsp with a device', body: rtspBody({ device: '/dev/video0' }), field: 'body.device' },
      {
        what: 'rtsp with a controller',
        body: rtspBody({ protect_controller_id: CONTROLLER_ID }),
        field: 'body.protect_controller_id',
      },
      { what: 'numeric url', body: rtspBody({ url: 554 }), field: 'body.url' },
      { what: 'numeric password', body: rtspBody({ password: 1234 }), field: 'body.password' },
      { what: 'empty password', body: rtspBody({ password: '' }), field: 'body.password' },
      { what: 'frame_rate 0', body: rtspBody({ frame_rate: 0 }), field: 'body.frame_rate' },
      { what: 'frame_rate 31', body: rtspBody({ frame_rate: 31 }), field: 'body.frame_rate' },
      { what: 'fractional frame_rate', body: rtspBody({ frame_rate: 2.5 }), field: 'body.frame_rate' },
      { what: 'frame_rate as text', body: rtspBody({ frame_rate: '5' }), field: 'body.frame_rate' },
      { what: 'null frame_rate', body: rtspBody({ frame_rate: null }), field: 'body.frame_rate' },
      { what: 'null enabled', body: rtspBody({ enabled: null }), field: 'body.enabled' },
      { what: 'enabled as text', body: rtspBody({ enabled: 'yes' }), field: 'body.enabled' },
      {
        what: 'unknown sensitivity',
        body: rtspBody({ motion_sensitivity: 'extreme' }),
        field: 'body.motion_sensitivity',
      },
      {
        what: 'negative cooldown',
        body: rtspBody({ motion_cooldown_seconds: -1 }),
        field: 'body.motion_cooldown_seconds',
      },
      {
        what: 'cooldown over an hour',
        body: rtspBody({ motion_cooldown_seconds: 3601 }),
        field: 'body.motion_cooldown_seconds',
      },
      { what: 'zones not a list', body: rtspBody({ detection_zones: {} }), field: 'body.detection_zones' },
      {
        what: 'zone with 2 points',
        body: rtspBody({ detection_zones: [{ name: 'z', points: points.slice(0, 2) }] }),
        field: 'body.detection_zones.0.points',
      },
      {
        what: 'zone with 101 points',
        body: rtspBody({ detection_zones: [{ name: 'z', points: Array(101).fill([0.5, 0.5]) }] }),
        field: 'body.detection_zones.0.points',
      },
      {
        what: 'zone point outside 0..1',
        body: rtspBody({
          detection_zones: [
            { name: 'ok', points },
            { name: 'z', points: [...points, [1.5, 0.2]] },
          ],
        }),
        field: 'body.detection_zones.1.points',
      },
      {
        what: 'negative zone point',
        body: rtspBody({ detection_zones: [{ name: 'z', points: [...points, [0.2, -0.1]] }] }),
        field: 'body.detection_zones.0.points',
      },
      {
        what: 'zone point with one coordinate',
        body: rtspBody({ detection_zones: [{ name: 'z', points: [...points, [0.2]] }] }),
        field: 'body.detection_zones.0.points',
      },
      {
        what: 'zone point as text',
        body: rtspBody({ detection_zones: [{ name: 'z', points: [...points, ['0.2', '0.3']] }] }),
        field: 'body.detection_zones.0.points',
      },
      {
        what: 'zone without name',
        body: rtspBody({ detection_zones: [{ points }] }),
        field: 'body.detection_zones.0.name',
      },
      {
        what: 'zone with unknown field',
        body: rtspBody({ detection_zones: [{ name: 'z', points, color: 'red' }] }),
        field: 'body.detection_zones.0.color',
      },
      {
        what: '21 zones',
        body: rtspBody({
          detection_zones: Array.from({ length: 21 }, (_, i) => ({ name: `z${i}`, points })),
        }),
        field: 'body.detection_zones',
      },
      { what: 'no detection types', body: rtspBody({ detection_types: [] }), field: 'body.detection_types' },
      {
        what: 'repeated detection type',
        body: rtspBody({ detection_types: ['person', 'person'] }),
        field: 'body.detection_types',
      },
      {
        what: 'unknown detection type',
        body: rtspBody({ detection_types: ['person', 'cat'] }),
        field: 'body.detection_types',
      },
      {
        what: 'detection types as text',
        body: rtspBody({ detection_types: 'person' }),
        field: 'body.detection_types',
      },
      {
        what: 'prompt over 2000',
        body: rtspBody({ prompt_override: 'p'.repeat(2001) }),
        field: 'body.prompt_override',
      },
      { what: 'status is read-only', body: rtspBody({ status: 'running' }), field: 'body.status' },
      {
        what: 'has_password is read-only',
        body: rtspBody({ has_password: true }),
        field: 'body.has_password',
      },
      { what: 'id is read-only', body: rtspBody({ id: UNKNOWN_ID }), field: 'body.id' },
      { what: 'an array body', body: [rtspBody()], field: 'body' },
    ];

    it('answers 422 naming the field for every invalid create, and creates nothing', async () => {
      const before = await rows();
      for (const { what, body, field, message } of cases) {
        const res = await create(body);
        expect({ what, status: res.status }).toEqual({ what, status: 422 });
        expect(res.body.status_code).toBe(422);
        expect(res.body.detail).toMatch(/^Request validation failed/);
        expect({ what, fields: fieldsOf(res) }).toEqual({ what, fields: expect.arrayContaining([field]) });
        if (message)
          expect({ what, detail: res.body.detail }).toEqual({ what, detail: expect.stringMatching(message) });
      }
      await t.http
        .post('/api/v1/cameras')
        .set(adminAuth())
        .set('Content-Type', 'application/json')
        .send('{"name": "x", "source_type": "usb"')
        .expect(400);
      await t.http
        .post('/api/v1/cameras')
        .set(adminAuth())
        .set('Content-Type', 'text/plain')
        .send('name=x')
        .expect(415);
      expect(await rows()).toEqual(before);
    });

    it('reports every source-type problem at once', async () => {
      const res = await create({
        name: 'several problems',
        source_type: 'usb',
        url: 'rtsp://cam/x',
        username: 'u',
        protect_camera_id: 'abc',
      }).expect(422);
      expect(res.body.errors).toEqual([
        { field: 'body.url', message: 'url is not allowed for source_type usb' },
        { field: 'body.username', message: 'username is not allowed for source_type usb' },
        { field: 'body.device', message: 'device is required for source_type usb' },
        { field: 'body.protect_camera_id', message: 'protect_camera_id is not allowed for source_type usb' },
      ]);
    });

    it('answers 422 for invalid updates (also of the merged camera) and changes nothing', async () => {
      const camera = await newCamera();
      const updates: { what: string; body: unknown; field: string; message?: RegExp }[] = [
        { what: 'null name', body: { name: null }, field: 'body.name' },
        { what: 'blank name', body: { name: ' ' }, field: 'body.name' },
        { what: 'null source_type', body: { source_type: null }, field: 'body.source_type' },
        { what: 'null enabled', body: { enabled: null }, field: 'body.enabled' },
        { what: 'null frame_rate', body: { frame_rate: null }, field: 'body.frame_rate' },
        { what: 'null detection types', body: { detection_types: null }, field: 'body.detection_types' },
        { what: 'null zones', body: { detection_zones: null }, field: 'body.detection_zones' },
        { what: 'frame_rate 31', body: { frame_rate: 31 }, field: 'body.frame_rate' },
        { what: 'clearing the url', body: { url: null }, field: 'body.url', message: /url is required/ },
        { what: 'an http url', body: { url: 'http://cam/x' }, field: 'body.url' },
        {
          what: 'credentials in the url',
          body: { url: 'rtsps://me:pw@cam/x' },
          field: 'body.url',
          message: /username and password/,
        },
        { what: 'a device on rtsp', body: { device: '/dev/video1' }, field: 'body.device' },
        {
          what: 'switching to usb without a device',
          body: { source_type: 'usb' },
          field: 'body.device',
          message: /device is required for source_type usb/,
        },
        {
          what: 'switching to mjpeg keeping the rtsp url',
          body: { source_type: 'mjpeg' },
          field: 'body.url',
          message: /http:\/\/ or https:\/\//,
        },
        {
          what: 'switching to usb while sending a url',
          body: { source_type: 'usb', device: '/dev/video1', url: 'rtsp://cam/x' },
          field: 'body.url',
        },
        {
          what: 'switching to protect with half the ids',
          body: { source_type: 'protect', protect_controller_id: CONTROLLER_ID },
          field: 'body.protect_camera_id',
        },
        { what: 'an unknown field', body: { status: 'running' }, field: 'body.status' },
      ];
      const before = await rows();
      for (const { what, body, field, message } of updates) {
        const res = await update(camera.id, body);
        expect({ what, status: res.status }).toEqual({ what, status: 422 });
        expect({ what, fields: fieldsOf(res) }).toEqual({ what, fields: expect.arrayContaining([field]) });
        if (message)
          expect({ what, detail: res.body.detail }).toEqual({ what, detail: expect.stringMatching(message) });
      }
      await t.http
        .put(`/api/v1/cameras/${camera.id}`)
        .set(adminAuth())
        .set('Content-Type', 'application/json')
        .send('{"name": ')
        .expect(400);
      expect(await rows()).toEqual(before);
      expect((await get(camera.id).expect(200)).body).toEqual(camera);
    });
  });

  describe('names', () => {
    it('answers 409 for a name that exists in any letter case, and keeps the original', async () => {
      const name = uniqueName('Garage');
      const original = await newCamera(rtspBody({ name }));
      const before = await rows();
      for (const taken of [name, name.toUpperCase(), `  ${name.toLowerCase()} `]) {
        const res = await create({ name: taken, source_type: 'usb', device: '/dev/video4' }).expect(409);
        expect(res.body).toEqual({
          detail: `A camera named "${taken.trim()}" already exists`,
          status_code: 409,
        });
      }
      expect(await rows()).toEqual(before);
      expect((await get(original.id).expect(200)).body).toEqual(original);
    });

    it('answers 409 when renaming onto another camera, and allows re-casing its own name', async () => {
      const first = await newCamera(rtspBody({ name: uniqueName('Shed') }));
      const second = await newCamera(rtspBody({ name: uniqueName('Barn') }));
      const res = await update(second.id, { name: first.name.toLowerCase(), frame_rate: 9 }).expect(409);
      expect(res.body).toEqual({
        detail: `A camera named "${first.name.toLowerCase()}" already exists`,
        status_code: 409,
      });
      // Nothing of the refused update was applied.
      expect((await get(second.id).expect(200)).body).toEqual(second);

      const recased = await update(second.id, { name: second.name.toUpperCase() }).expect(200);
      expect(recased.body.name).toBe(second.name.toUpperCase());
      await update(second.id, { name: second.name.toUpperCase() }).expect(200);
    });

    it('lets only one of two concurrent creates take a name', async () => {
      const name = uniqueName('Race');
      const results = await Promise.all([
        create(rtspBody({ name })),
        create(rtspBody({ name: name.toLowerCase() })),
        create(rtspBody({ name: name.toUpperCase() })),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      expect(await t.sql('SELECT id FROM cameras WHERE lower(name) = lower($1)', [name])).toHaveLength(1);
    });
  });

  describe('passwords', () => {
    it('are encrypted at rest, never returned, replaced and cleared through PUT', async () => {
      const secretBox = t.app.get(SecretBox);
      const camera = await create(rtspBody({ password: 'first-Secret-123' })).expect(201);
      const id = camera.body.id as string;
      expect(camera.body.has_password).toBe(true);

      const responses = [camera.body, (await get(id).expect(200)).body, (await list().expect(200)).body];
      for (const body of responses) expect(JSON.stringify(body)).not.toMatch(/first-Secret-123|"password"/);

      const stored = await row(id);
      expect(JSON.stringify(await rows())).not.toContain('first-Secret-123');
      expect(stored?.password_encrypted).toMatch(/^v1:/);
      expect(secretBox.decrypt(stored!.password_encrypted as string)).toBe('first-Secret-123');

      // An update that does not mention the password keeps it.
      await update(id, { frame_rate: 7, username: 'other' }).expect(200);
      expect((await row(id))?.password_encrypted).toBe(stored?.password_encrypted);

      const replaced = await update(id, { password: 'second-Secret-456' }).expect(200);
      expect(replaced.body.has_password).toBe(true);
      expect(JSON.stringify(replaced.body)).not.toMatch(/Secret|"password"/);
      const after = await row(id);
      expect(JSON.stringify(await rows())).not.toMatch(/first-Secret-123|second-Secret-456/);
      expect(secretBox.decrypt(after!.password_encrypted as string)).toBe('second-Secret-456');

      const cleared = await update(id, { password: null }).expect(200);
      expect(cleared.body.has_password).toBe(false);
      expect(cleared.body.username).toBe('other');
      expect((await row(id))?.password_encrypted).toBeNull();
    });

    it('are encrypted with a fresh nonce each time (the same password never stores the same text)', async () => {
      const a = await newCamera(rtspBody({ password: 'same-password' }));
      const b = await newCamera(rtspBody({ password: 'same-password' }));
      const [ra, rb] = [await row(a.id), await row(b.id)];
      expect(ra?.password_encrypted).not.toBe(rb?.password_encrypted);
    });
  });

  describe('partial update', () => {
    it('changes only the fields it sends', async () => {
      // Not enabled: capture would change `status` between the steps (tested in capture.e2e-spec.ts).
      const camera = await newCamera(
        rtspBody({
          motion_sensitivity: 'low',
          detection_types: ['person'],
          prompt_override: 'Be brief.',
          detection_zones: [
            {
              name: 'Door',
              points: [
                [0, 0],
                [0.5, 0],
                [0.5, 0.5],
              ],
            },
          ],
        }),
      );
      const steps: Record<string, unknown>[] = [
        { frame_rate: 15 },
        { motion_cooldown_seconds: 0 },
        { enabled: false },
        { detection_types: ['vehicle', 'animal'] },
        { detection_zones: [] },
        { prompt_override: null },
        { url: 'rtsps://10.1.1.1:7441/main', username: null },
        {},
      ];
      let expected = camera;
      for (const step of steps) {
        const res = await update(camera.id, step).expect(200);
        expected = { ...expected, ...step, updated_at: res.body.updated_at };
        expect(res.body).toEqual(expected);
        expect((await get(camera.id).expect(200)).body).toEqual(expected);
      }
      expect(expected).toMatchObject({ name: camera.name, has_password: true, motion_sensitivity: 'low' });
      // An empty prompt clears it like null.
      await update(camera.id, { prompt_override: 'Look for bikes.' }).expect(200);
      expect((await update(camera.id, { prompt_override: '' }).expect(200)).body.prompt_override).toBeNull();
    });

    it("switches source type, clearing the old type's fields, and back", async () => {
      const camera = await newCamera();
      const usb = await update(camera.id, { source_type: 'usb', device: '/dev/video3' }).expect(200);
      expect(usb.body).toMatchObject({
        source_type: 'usb',
        device: '/dev/video3',
        url: null,
        username: null,
        has_password: false,
        name: camera.name,
      });
      expect((await row(camera.id))?.password_encrypted).toBeNull();

      const protect = await update(camera.id, {
        source_type: 'protect',
        protect_controller_id: CONTROLLER_ID,
        protect_camera_id: 'cam-1',
      }).expect(200);
      expect(protect.body).toMatchObject({
        source_type: 'protect',
        device: null,
        protect_controller_id: CONTROLLER_ID,
        protect_camera_id: 'cam-1',
      });

      const mjpeg = await update(camera.id, {
        source_type: 'mjpeg',
        url: 'https://cam.local/mjpg',
        password: 'pw-for-mjpeg',
      }).expect(200);
      expect(mjpeg.body).toMatchObject({
        source_type: 'mjpeg',
        url: 'https://cam.local/mjpg',
        has_password: true,
        protect_controller_id: null,
        protect_camera_id: null,
      });
      expect(t.app.get(SecretBox).decrypt((await row(camera.id))!.password_encrypted as string)).toBe(
        'pw-for-mjpeg',
      );
    });
  });

  describe('delete', () => {
    it("removes the camera's events and their image files, and nothing of other cameras", async () => {
      const store = t.app.get(ImageStore);
      const doomed = await newCamera();
      const kept = await newCamera();
      const doomedImages = [await store.save(JPEG), await store.save(JPEG)];
      const keptImage = await store.save(JPEG);
      const insert = (cameraId: string, image: string | null) =>
        t.sql(
          `INSERT INTO events (camera_id, timestamp, detection_type, source_type, image_file)
           VALUES ($1, now(), 'person', 'rtsp', $2) RETURNING id`,
          [cameraId, image],
        );
      await insert(doomed.id, doomedImages[0]);
      await insert(doomed.id, doomedImages[1]);
      await insert(doomed.id, null);
      await insert(kept.id, keptImage);
      for (const name of [...doomedImages, keptImage]) expect(existsSync(store.path(name))).toBe(true);

      await remove(doomed.id).expect(204);

      expect(await t.sql('SELECT id FROM events WHERE camera_id = $1', [doomed.id])).toEqual([]);
      expect(await t.sql('SELECT id FROM events WHERE camera_id = $1', [kept.id])).toHaveLength(1);
      for (const name of doomedImages) expect(existsSync(store.path(name))).toBe(false);
      expect(existsSync(store.path(keptImage))).toBe(true);
      expect(await row(doomed.id)).toBeUndefined();
      expect((await get(kept.id).expect(200)).body).toEqual(kept);

      // Deleting again: nothing to delete. The name is free again.
      expect((await remove(doomed.id).expect(404)).body).toEqual({
        detail: 'Camera not found',
        status_code: 404,
      });
      await create(rtspBody({ name: doomed.name })).expect(201);
    });
  });

  describe('ids', () => {
    it('answers 404 for unknown and malformed ids on every endpoint, and changes nothing', async () => {
      const camera = await newCamera();
      const before = await rows();
      for (const id of [UNKNOWN_ID, ...MALFORMED_IDS.map(encodeURIComponent)]) {
        for (const res of [await get(id), await update(id, { frame_rate: 10 }), await remove(id)]) {
          expect({ id, status: res.status, body: res.body }).toEqual({
            id,
            status: 404,
            body: { detail: 'Camera not found', status_code: 404 },
          });
        }
      }
      expect(await rows()).toEqual(before);
      // An upper-case spelling of a real id names the same camera.
      expect((await get(camera.id.toUpperCase()).expect(200)).body.id).toBe(camera.id);
    });
  });

  describe('scopes', () => {
    const keyHeaders = async (scopes: string[]) => {
      const { key } = await t.createApiKey({ name: scopes.join('+'), scopes, rate_limit_per_minute: 10000 });
      return { 'X-API-Key': key };
    };
    const expectForbidden = (res: { status: number; body: unknown }, scope: string) =>
      expect({ status: res.status, body: res.body }).toEqual({
        status: 403,
        body: { detail: `Insufficient permissions. Required scope: ${scope}`, status_code: 403 },
      });

    it('read:events alone reaches no camera endpoint', async () => {
      const camera = await newCamera();
      const before = await rows();
      const key = await keyHeaders(['read:events']);
      expectForbidden(await list(key), 'read:cameras');
      expectForbidden(await get(camera.id, key), 'read:cameras');
      expectForbidden(await create(rtspBody(), key), 'write:cameras');
      expectForbidden(await update(camera.id, { frame_rate: 10 }, key), 'write:cameras');
      expectForbidden(await remove(camera.id, key), 'write:cameras');
      expect(await rows()).toEqual(before);
    });

    it('read:cameras reads but does not write', async () => {
      const camera = await newCamera();
      const key = await keyHeaders(['read:cameras']);
      expect((await list(key).expect(200)).body).toContainEqual(camera);
      expect((await get(camera.id, key).expect(200)).body).toEqual(camera);
      const before = await rows();
      expectForbidden(await create(rtspBody(), key), 'write:cameras');
      expectForbidden(await update(camera.id, { frame_rate: 10 }, key), 'write:cameras');
      expectForbidden(await remove(camera.id, key), 'write:cameras');
      expect(await rows()).toEqual(before);
    });

    it('write:cameras writes but does not read (it does not imply read:cameras)', async () => {
      const key = await keyHeaders(['write:cameras']);
      const created = await create(rtspBody(), key).expect(201);
      const id = created.body.id as string;
      expect((await update(id, { frame_rate: 20 }, key).expect(200)).body.frame_rate).toBe(20);
      expectForbidden(await list(key), 'read:cameras');
      expectForbidden(await get(id, key), 'read:cameras');
      await remove(id, key).expect(204);
      expect(await row(id)).toBeUndefined();
    });

    it('admin keys, viewers and anonymous callers get what their role allows', async () => {
      const camera = await newCamera();
      const adminKey = await keyHeaders(['admin']);
      await get(camera.id, adminKey).expect(200);
      await update(camera.id, { frame_rate: 6 }, adminKey).expect(200);

      await t.http
        .post('/api/v1/users')
        .set(adminAuth())
        .send({ username: 'cam-viewer', password: 'cam-viewer-password', role: 'viewer' })
        .expect(201);
      const login = await t.http
        .post('/api/v1/auth/login')
        .send({ username: 'cam-viewer', password: 'cam-viewer-password' })
        .expect(200);
      const viewer = bearer(login.body.access_token as string);
      await list(viewer).expect(200);
      expectForbidden(await update(camera.id, { frame_rate: 8 }, viewer), 'write:cameras');

      const anonymous = await t.http.get('/api/v1/cameras').expect(401);
      expect(anonymous.body).toEqual({ detail: 'Not authenticated', status_code: 401 });
      await t.http.post('/api/v1/cameras').send(rtspBody()).expect(401);
      await t.http.delete(`/api/v1/cameras/${camera.id}`).expect(401);
      expect(await row(camera.id)).toBeDefined();
    });
  });

  describe('domain events', () => {
    it("publishes 'camera.updated' with the record after create and update, and deleted: true after delete", async () => {
      const created = await newCamera(rtspBody({ password: 'bus-secret-pw' }));
      const onCreate = await waitForMessage(cameraUpdate(created.id));
      expect(onCreate.data).toEqual(created);
      expect(JSON.stringify(onCreate)).not.toContain('bus-secret-pw');
      expect(onCreate.timestamp).toMatch(/Z$/);

      const updated = (await update(created.id, { frame_rate: 25 }).expect(200)).body as Camera;
      const onUpdate = await waitForMessage(cameraUpdate(created.id, (d) => d.frame_rate === 25));
      expect(onUpdate.data).toEqual(updated);

      await remove(created.id).expect(204);
      const onDelete = await waitForMessage(cameraUpdate(created.id, (d) => d.deleted === true));
      expect(onDelete.data).toEqual({ ...updated, deleted: true });
    });

    it('publishes nothing for refused requests', async () => {
      const camera = await newCamera();
      await waitForMessage(cameraUpdate(camera.id));
      const count = () => messages.filter((m) => dataOf(m).id === camera.id).length;
      const seen = count();
      await update(camera.id, { frame_rate: 99 }).expect(422);
      await update(camera.id, { source_type: 'usb' }).expect(422);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(count()).toBe(seen);
    });
  });
});
