import { FakeMjpegCamera } from './fakes/mjpeg-camera';
import { freePort, startHttpServer, startSilentTcpServer } from './fakes/misc-servers';
import { FakeRtspCamera, stopAllFakeCameras } from './fakes/rtsp-camera';
import { JsonLogger } from '../src/common/logging/json-logger';
import { describeWithMedia } from './support/media';
import { childProcessIds } from './support/processes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * POST /cameras/test against real servers on 127.0.0.1: a working RTSP and MJPEG camera, one that wants a
 * password, a closed port, a server that never answers, and a web page that is not video. Nothing is saved,
 * and neither the answer nor the logs ever contain the password.
 */

const PASSWORD = 's3cret:p@ss/word%';

describeWithMedia('POST /cameras/test (e2e)', () => {
  let t: TestApp;
  let admin: string;
  const logLines: string[] = [];
  let rtsp: FakeRtspCamera;
  let rtspAuth: FakeRtspCamera;
  let mjpeg: FakeMjpegCamera;

  beforeAll(async () => {
    const logger = new JsonLogger('debug');
    // Capture what the service logs (the JSON logger writes to stdout) to check that no secret appears.
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      logLines.push(String(chunk));
      return true;
    });
    t = await startTestApp({ logger, env: { LOG_LEVEL: 'debug' } });
    admin = `Bearer ${await t.adminToken()}`;
    [rtsp, rtspAuth, mjpeg] = await Promise.all([
      FakeRtspCamera.start({ width: 320, height: 180, fps: 10, pattern: 'still' }),
      FakeRtspCamera.start({
        width: 320,
        height: 180,
        fps: 10,
        auth: { username: 'viewer', password: PASSWORD },
      }),
      FakeMjpegCamera.start({ width: 320, height: 180, fps: 5, pattern: 'still' }),
    ]);
  });

  afterAll(async () => {
    try {
      await t?.close();
    } finally {
      await stopAllFakeCameras();
    }
    await mjpeg?.stop();
    jest.restoreAllMocks();
  });

  const test = (body: Record<string, unknown>, token = admin) =>
    t.http.post('/api/v1/cameras/test').set('Authorization', token).send(body);

  it('reports format, latency and a thumbnail for a working RTSP camera, and saves nothing', async () => {
    const started = Date.now();
    const res = await test({ source_type: 'rtsp', url: rtsp.url() }).expect(200);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(res.body).toMatchObject({ success: true, resolution: '320x180', codec: 'h264', fps: 10 });
    expect(res.body.message).toMatch(/^Connected/);
    expect(res.body.latency_ms).toBeGreaterThan(0);
    expect(res.body.thumbnail).toMatch(/^data:image\/jpeg;base64,/);
    const jpeg = Buffer.from((res.body.thumbnail as string).split(',')[1], 'base64');
    expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(await t.sql('SELECT id FROM cameras')).toEqual([]);
    expect(childProcessIds('ffmpeg')).toEqual([]);
  });

  it('tests an MJPEG camera over HTTP', async () => {
    const res = await test({ source_type: 'mjpeg', url: mjpeg.url() }).expect(200);
    expect(res.body).toMatchObject({ success: true, resolution: '320x180', codec: 'mjpeg' });
    expect(res.body.thumbnail).toMatch(/^data:image\/jpeg;base64,/);
  });

  it('says authentication failed for a wrong or missing password, and succeeds with the right one', async () => {
    for (const credentials of [{}, { username: 'viewer', password: 'wrong-password-1' }]) {
      const res = await test({ source_type: 'rtsp', url: rtspAuth.url(), ...credentials }).expect(200);
      expect(res.body).toMatchObject({ success: false, resolution: null, codec: null, thumbnail: null });
      expect(res.body.message).toMatch(/^Authentication failed/);
    }
    const ok = await test({
      source_type: 'rtsp',
      url: rtspAuth.url(),
      username: 'viewer',
      password: PASSWORD,
    }).expect(200);
    expect(ok.body.success).toBe(true);
  });

  it('says connection refused for a closed port', async () => {
    const port = await freePort();
    const res = await test({ source_type: 'rtsp', url: `rtsp://127.0.0.1:${port}/cam` }).expect(200);
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/^Connection refused/);
  });

  it('says the connection timed out for a server that never answers, within 15 s', async () => {
    const silent = await startSilentTcpServer();
    try {
      const started = Date.now();
      const res = await test({ source_type: 'rtsp', url: `rtsp://127.0.0.1:${silent.port}/cam` }).expect(200);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(res.body.success).toBe(false);
      expect(res.body.message).toMatch(/^Connection timed out/);
    } finally {
      await silent.close();
    }
  }, 30_000);

  it('says a web page is not a video stream', async () => {
    const page = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<html><body>Router login</body></html>');
    });
    try {
      const res = await test({ source_type: 'mjpeg', url: `http://127.0.0.1:${page.port}/` }).expect(200);
      expect(res.body.success).toBe(false);
      expect(res.body.message).toMatch(/^Not a video stream/);
    } finally {
      await page.close();
    }
  });

  it('says a missing video device is not found', async () => {
    const res = await test({ source_type: 'usb', device: '/dev/video99' }).expect(200);
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/^Device not found/);
  });

  it('refuses invalid requests with 422 and needs write:cameras', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ source_type: 'protect', protect_controller_id: 'x' }, 'body.source_type'],
      [{ source_type: 'rtsp' }, 'body.url'],
      [{ source_type: 'rtsp', url: 'http://127.0.0.1/x' }, 'body.url'],
      [{ source_type: 'rtsp', url: 'rtsp://user:pw@127.0.0.1/x' }, 'body.url'],
      [{ source_type: 'usb', device: '/etc/passwd' }, 'body.device'],
      [{ source_type: 'usb', device: '/dev/video0', url: 'rtsp://127.0.0.1/x' }, 'body.url'],
    ];
    for (const [body, field] of cases) {
      const res = await test(body).expect(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const reader = await t.createApiKey({ name: 'reader', scopes: ['read:cameras'] });
    const refused = await t.http
      .post('/api/v1/cameras/test')
      .set('X-API-Key', reader.key)
      .send({ source_type: 'rtsp', url: rtsp.url() })
      .expect(403);
    expect(refused.body.detail).toBe('Insufficient permissions. Required scope: write:cameras');
    const writer = await t.createApiKey({ name: 'writer', scopes: ['write:cameras'] });
    await t.http
      .post('/api/v1/cameras/test')
      .set('X-API-Key', writer.key)
      .send({ source_type: 'rtsp', url: rtsp.url() })
      .expect(200);
  });

  it('answers 404 to start, stop and snapshot of an unknown or malformed camera id, and checks scopes', async () => {
    for (const id of ['6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5b', 'not-a-uuid']) {
      for (const action of ['start', 'stop']) {
        const res = await t.http
          .post(`/api/v1/cameras/${id}/${action}`)
          .set('Authorization', admin)
          .expect(404);
        expect(res.body).toEqual({ detail: 'Camera not found', status_code: 404 });
      }
      await t.http.get(`/api/v1/cameras/${id}/snapshot`).set('Authorization', admin).expect(404);
    }
    const camera = await t.http
      .post('/api/v1/cameras')
      .set('Authorization', admin)
      .send({ name: 'Scoped', source_type: 'rtsp', url: rtsp.url() })
      .expect(201);
    const reader = await t.createApiKey({ name: 'camera reader', scopes: ['read:cameras'] });
    for (const action of ['start', 'stop'])
      await t.http
        .post(`/api/v1/cameras/${camera.body.id}/${action}`)
        .set('X-API-Key', reader.key)
        .expect(403);
    const writer = await t.createApiKey({ name: 'camera writer', scopes: ['write:cameras'] });
    await t.http.get(`/api/v1/cameras/${camera.body.id}/snapshot`).set('X-API-Key', writer.key).expect(403);
    await t.http.get(`/api/v1/cameras/${camera.body.id}/snapshot`).set('X-API-Key', reader.key).expect(409);
    expect((await t.sql('SELECT enabled FROM cameras WHERE id = $1', [camera.body.id]))[0]).toEqual({
      enabled: false,
    });
    await t.http.delete(`/api/v1/cameras/${camera.body.id}`).set('Authorization', admin).expect(204);
  });

  it('never logs or returns the password', () => {
    const logs = logLines.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [PASSWORD, encodeURIComponent(PASSWORD), 'wrong-password-1'])
      expect(logs).not.toContain(secret);
  });
});
