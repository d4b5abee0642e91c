import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminQuery, testServerUrl } from './support/database';
import { startTestApp, TestApp } from './support/test-app';

/** GET /system/health: public, reports version, uptime and the database, 503 when the database is gone. */
describe('GET /api/v1/system/health', () => {
  const VERSION = (
    JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
  ).version;
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers 200 without credentials: status ok, the package version, uptime and the database latency', async () => {
    const res = await t.http.get('/api/v1/system/health').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      status: 'ok',
      version: VERSION,
      uptime_seconds: expect.any(Number),
      database: { status: 'up', latency_ms: expect.any(Number) },
    });
    expect(Number.isInteger(res.body.uptime_seconds)).toBe(true);
    expect(res.body.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(res.body.database.latency_ms).toBeGreaterThanOrEqual(0);
    expect(res.body.database.latency_ms).toBeLessThan(2000);
  });

  it('ignores credentials, even wrong ones (it is public)', async () => {
    const res = await t.http
      .get('/api/v1/system/health')
      .set('X-API-Key', 'vgl_not_a_real_key')
      .set('Authorization', 'Bearer nonsense')
      .expect(200);
    expect(res.body.status).toBe('ok');
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('counts uptime in seconds since the service started', async () => {
    const first = (await t.http.get('/api/v1/system/health').expect(200)).body.uptime_seconds as number;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const second = (await t.http.get('/api/v1/system/health').expect(200)).body.uptime_seconds as number;
    expect(second).toBeGreaterThanOrEqual(first + 1);
    expect(second).toBeLessThanOrEqual(first + 3);
  });

  describe('when the database is unreachable', () => {
    const server = testServerUrl();
    const allowConnections = (allow: boolean) =>
      adminQuery(server, `ALTER DATABASE ${t.databaseName} WITH ALLOW_CONNECTIONS ${allow}`);
    const dropConnections = () =>
      adminQuery(
        server,
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [t.databaseName],
      );

    afterEach(async () => {
      await allowConnections(true);
    });

    it('answers 503 in time, with the envelope fields, and 200 again once the database is back', async () => {
      await allowConnections(false);
      await dropConnections();

      const started = Date.now();
      const down = await t.http.get('/api/v1/system/health').expect(503);
      expect(Date.now() - started).toBeLessThan(4000);
      expect(down.body).toMatchObject({
        status: 'unhealthy',
        version: VERSION,
        uptime_seconds: expect.any(Number),
        database: { status: 'down', latency_ms: null, error: expect.any(String) },
        detail: 'Database unreachable',
        status_code: 503,
      });
      expect(down.headers['x-request-id']).toEqual(expect.any(String));
      // It stays down while the database refuses connections (not a one-off).
      await t.http.get('/api/v1/system/health').expect(503);

      await allowConnections(true);
      // The pool reconnects on its own: no restart needed.
      let status = 0;
      const deadline = Date.now() + 10_000;
      while (status !== 200 && Date.now() < deadline) {
        status = (await t.http.get('/api/v1/system/health')).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(status).toBe(200);
      const up = await t.http.get('/api/v1/system/health').expect(200);
      expect(up.body).toMatchObject({ status: 'ok', database: { status: 'up' } });
      expect(up.body.detail).toBeUndefined();
      // The rest of the API works again too.
      await t.http
        .get('/api/v1/api-keys')
        .set('Authorization', `Bearer ${await t.adminToken()}`)
        .expect(200);
    });
  });
});
