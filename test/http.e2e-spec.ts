import { randomUUID } from 'node:crypto';
import request, { Response } from 'supertest';
import { JsonLogger } from '../src/common/logging/json-logger';
import { ADMIN_PASSWORD, startTestApp, TestApp } from './support/test-app';

/**
 * Cross-cutting HTTP behaviour (decisions.md §1): the error envelope and status codes, request ids,
 * security headers, CORS and what the access log may contain.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MIB = 1024 * 1024;

/** The response is exactly the error envelope with this status (plus `errors` on 422). */
function expectEnvelope(res: Response, status: number, detail?: string | RegExp): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const keys = Object.keys(res.body as object).sort();
  expect(keys).toEqual(status === 422 ? ['detail', 'errors', 'status_code'] : ['detail', 'status_code']);
  expect(res.body.status_code).toBe(status);
  expect(typeof res.body.detail).toBe('string');
  expect(res.body.detail.length).toBeGreaterThan(0);
  if (typeof detail === 'string') expect(res.body.detail).toBe(detail);
  else if (detail) expect(res.body.detail).toMatch(detail);
}

describe('HTTP conventions', () => {
  let t: TestApp;
  let token: string;
  let apiKey: { key: string; id: string };

  const countRows = async (table: 'api_keys' | 'users'): Promise<number> =>
    (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0].n;

  beforeAll(async () => {
    t = await startTestApp();
    token = await t.adminToken();
    apiKey = await t.createApiKey({ name: 'http conventions', scopes: ['admin'] });
  });
  afterAll(() => t.close());

  describe('unknown routes', () => {
    const NOT_FOUND = { detail: 'Not Found', status_code: 404 };

    it('answers 404 in the envelope to unauthenticated callers (not 401)', async () => {
      const paths = ['/api/v1/nope', '/api/v1/cameras-that-do-not-exist/1', '/api/v2/events', '/events', '/'];
      for (const path of paths) {
        const res = await t.http.get(path).expect(404);
        expect(res.body).toEqual(NOT_FOUND);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
      }
    });

    it('answers the same 404 with valid credentials, and with a wrong API key', async () => {
      const withJwt = await t.http.get('/api/v1/nope').set('Authorization', `Bearer ${token}`).expect(404);
      expect(withJwt.body).toEqual(NOT_FOUND);
      const withKey = await t.http.get('/api/v1/nope').set('X-API-Key', apiKey.key).expect(404);
      expect(withKey.body).toEqual(NOT_FOUND);
      const withBadKey = await t.http.get('/api/v1/nope').set('X-API-Key', 'vgl_wrong').expect(404);
      expect(withBadKey.body).toEqual(NOT_FOUND);
    });

    it('answers 404 to an unsupported method on a known path, and to POST with a body', async () => {
      const patch = await t.http.patch('/api/v1/api-keys').set('Authorization', `Bearer ${token}`).send({});
      expect(patch.body).toEqual(NOT_FOUND);
      const post = await t.http.post('/api/v1/nope').send({ name: 'x' });
      expect(post.body).toEqual(NOT_FOUND);
    });
  });

  describe('request bodies', () => {
    const create = () => t.http.post('/api/v1/api-keys').set('Authorization', `Bearer ${token}`);

    it('answers 400 to malformed JSON and creates nothing', async () => {
      const before = await countRows('api_keys');
      for (const body of ['{"name": "x", "scopes": ["admin"]', '{name: "x"}', "{'name':'x'}", '{"a":1}}']) {
        const res = await create().set('Content-Type', 'application/json').send(body);
        expectEnvelope(res, 400, 'Malformed JSON in request body');
      }
      // Also before authentication: a public route with a broken body.
      const login = await t.http
        .post('/api/v1/auth/login')
        .set('Content-Type', 'application/json')
        .send('{"username": "admin", "password": ');
      expectEnvelope(login, 400, 'Malformed JSON in request body');
      expect(await countRows('api_keys')).toBe(before);
    });

    it('answers 413 to a body over 1 MiB and creates nothing', async () => {
      const before = await countRows('api_keys');
      const body = JSON.stringify({ name: 'x'.repeat(MIB + 10), scopes: ['admin'] });
      const res = await create().set('Content-Type', 'application/json').send(body);
      expectEnvelope(res, 413, /1 MiB/);
      expect(await countRows('api_keys')).toBe(before);
    });

    it('reads a body just under 1 MiB (and then validates it: 422, not 413)', async () => {
      const before = await countRows('api_keys');
      const body = JSON.stringify({ name: 'x'.repeat(MIB - 100), scopes: ['admin'] });
      expect(Buffer.byteLength(body)).toBeLessThan(MIB);
      const res = await create().set('Content-Type', 'application/json').send(body);
      expectEnvelope(res, 422);
      expect(res.body.errors).toEqual([expect.objectContaining({ field: 'body.name' })]);
      expect(await countRows('api_keys')).toBe(before);
    });

    it('answers 415 to a body that is not JSON and creates nothing', async () => {
      const before = await countRows('api_keys');
      const plain = await create().set('Content-Type', 'text/plain').send('{"name":"x","scopes":["admin"]}');
      expectEnvelope(plain, 415, 'Content-Type must be application/json');
      const form = await create().type('form').send('name=x&scopes=admin');
      expectEnvelope(form, 415, 'Content-Type must be application/json');
      const latin1 = await create()
        .set('Content-Type', 'application/json; charset=latin1')
        .send('{"name":"x","scopes":["admin"]}');
      expectEnvelope(latin1, 415);
      expect(await countRows('api_keys')).toBe(before);
    });

    it('answers 422 to a JSON body that is not an object (array, string, number, null)', async () => {
      const before = await countRows('api_keys');
      for (const body of ['[{"name":"x","scopes":["admin"]}]', '"name"', '42', 'null']) {
        const res = await create().set('Content-Type', 'application/json').send(body);
        expectEnvelope(res, 422);
        expect(res.body.errors).toEqual([{ field: 'body', message: expect.any(String) }]);
      }
      expect(await countRows('api_keys')).toBe(before);
    });

    it('answers 422 with the field to an unknown body field and creates nothing', async () => {
      const before = await countRows('api_keys');
      const res = await create().send({ name: 'sneaky', scopes: ['admin'], key: 'vgl_chosen_by_client' });
      expectEnvelope(res, 422);
      expect(res.body.errors).toEqual([{ field: 'body.key', message: expect.stringContaining('key') }]);
      expect(res.body.detail).toContain('body.key');
      expect(await countRows('api_keys')).toBe(before);

      const usersBefore = await countRows('users');
      const user = await t.http
        .post('/api/v1/users')
        .set('Authorization', `Bearer ${token}`)
        .send({ username: 'mallory', password: 'long-enough-pw', role: 'viewer', is_superuser: true });
      expectEnvelope(user, 422);
      expect(user.body.errors).toEqual([expect.objectContaining({ field: 'body.is_superuser' })]);
      expect(await countRows('users')).toBe(usersBefore);
    });

    it('answers 422 naming each bad field (type, enum, missing) with body.<field>', async () => {
      const res = await create().send({ name: 42, scopes: ['root'] });
      expectEnvelope(res, 422);
      const fields = (res.body.errors as { field: string }[]).map((e) => e.field).sort();
      expect(fields).toEqual(['body.name', 'body.scopes']);

      const missing = await create().send({});
      expectEnvelope(missing, 422);
      expect((missing.body.errors as { field: string }[]).map((e) => e.field).sort()).toEqual([
        'body.name',
        'body.scopes',
      ]);

      const noBody = await create();
      expectEnvelope(noBody, 422);
    });

    it('answers 422 with query.<field> to bad or unknown query parameters', async () => {
      const bad = await t.http
        .get('/api/v1/api-keys?include_revoked=maybe')
        .set('Authorization', `Bearer ${token}`);
      expectEnvelope(bad, 422);
      expect(bad.body.errors).toEqual([{ field: 'query.include_revoked', message: expect.any(String) }]);
      const unknown = await t.http.get('/api/v1/api-keys?colour=red').set('Authorization', `Bearer ${token}`);
      expectEnvelope(unknown, 422);
      expect(unknown.body.errors).toEqual([{ field: 'query.colour', message: expect.any(String) }]);
    });
  });

  describe('ids in the path', () => {
    it('answers 404 (never 422 or 500) to a malformed id', async () => {
      for (const id of ['not-a-uuid', '123', `${randomUUID()}x`, "'%20OR%201=1--", 'x'.repeat(2000)]) {
        for (const path of [
          `/api/v1/api-keys/${id}`,
          `/api/v1/api-keys/${id}/usage`,
          `/api/v1/users/${id}`,
        ]) {
          const res = await t.http.get(path).set('Authorization', `Bearer ${token}`);
          expectEnvelope(res, 404, /not found/i);
        }
      }
    });

    it('answers 404 to a well-formed id that names nothing', async () => {
      const res = await t.http
        .get(`/api/v1/api-keys/${randomUUID()}`)
        .set('Authorization', `Bearer ${token}`);
      expectEnvelope(res, 404, 'API key not found');
    });

    it('changes nothing when DELETE or PUT names a malformed id', async () => {
      const keysBefore = await t.sql('SELECT id, is_active FROM api_keys ORDER BY id');
      const del = await t.http.delete('/api/v1/api-keys/not-a-uuid').set('Authorization', `Bearer ${token}`);
      expectEnvelope(del, 404);
      expect(await t.sql('SELECT id, is_active FROM api_keys ORDER BY id')).toEqual(keysBefore);

      const usersBefore = await t.sql('SELECT id, role, is_active FROM users ORDER BY id');
      const put = await t.http
        .put('/api/v1/users/42')
        .set('Authorization', `Bearer ${token}`)
        .send({ is_active: false });
      expectEnvelope(put, 404);
      expect(await t.sql('SELECT id, role, is_active FROM users ORDER BY id')).toEqual(usersBefore);
    });
  });

  describe('X-Request-Id', () => {
    it('is on every response, a fresh UUID each time', async () => {
      const responses = [
        await t.http.get('/api/v1/system/health'),
        await t.http.get('/api/v1/nope'),
        await t.http.get('/api/v1/api-keys'),
        await t.http.get('/api/v1/api-keys').set('Authorization', `Bearer ${token}`),
        await t.http.get('/api/v1/api-keys').set('X-API-Key', apiKey.key),
        await t.http
          .post('/api/v1/api-keys')
          .set('Authorization', `Bearer ${token}`)
          .set('Content-Type', 'application/json')
          .send('{'),
        await t.http
          .post('/api/v1/api-keys')
          .set('Authorization', `Bearer ${token}`)
          .set('Content-Type', 'text/plain')
          .send('x'),
        await request(t.baseUrl).get('/openapi.json'),
        await request(t.baseUrl).get('/docs'),
        await request(t.baseUrl).get('/redoc'),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 404, 401, 200, 200, 400, 415, 200, 200, 200]);
      const ids = responses.map((r) => r.headers['x-request-id']);
      for (const id of ids) expect(id).toMatch(UUID);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it("echoes the client's id when it is well-formed", async () => {
      for (const id of ['abc-123', 'client.trace_01:span-2', 'A'.repeat(128), randomUUID()]) {
        const ok = await t.http.get('/api/v1/system/health').set('X-Request-Id', id).expect(200);
        expect(ok.headers['x-request-id']).toBe(id);
      }
      const notFound = await t.http.get('/api/v1/nope').set('X-Request-Id', 'trace-404').expect(404);
      expect(notFound.headers['x-request-id']).toBe('trace-404');
      const refused = await t.http.get('/api/v1/api-keys').set('X-Request-Id', 'trace-401').expect(401);
      expect(refused.headers['x-request-id']).toBe('trace-401');
    });

    it('replaces a malformed client id with a new UUID', async () => {
      for (const id of ['has spaces', 'A'.repeat(129), '<script>alert(1)</script>', 'semi;colon', '']) {
        const res = await t.http.get('/api/v1/system/health').set('X-Request-Id', id).expect(200);
        expect(res.headers['x-request-id']).not.toBe(id);
        expect(res.headers['x-request-id']).toMatch(UUID);
      }
    });
  });

  describe('security headers', () => {
    it('are on API answers, errors and the docs; no X-Powered-By, no HSTS over http', async () => {
      const responses = [
        await t.http.get('/api/v1/system/health').expect(200),
        await t.http.get('/api/v1/nope').expect(404),
        await t.http.get('/api/v1/api-keys').expect(401),
        await t.http
          .post('/api/v1/api-keys')
          .set('Authorization', `Bearer ${token}`)
          .set('Content-Type', 'application/json')
          .send('{')
          .expect(400),
        await request(t.baseUrl).get('/docs').expect(200),
        await request(t.baseUrl).get('/redoc').expect(200),
      ];
      for (const res of responses) {
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
        expect(res.headers['referrer-policy']).toBe('no-referrer');
        const csp = String(res.headers['content-security-policy'] ?? '');
        expect(csp).toContain("default-src 'self'");
        expect(csp).toContain("object-src 'none'");
        expect(csp).toContain("frame-ancestors 'self'");
        expect(csp).not.toContain('unsafe-eval');
        expect(res.headers['x-powered-by']).toBeUndefined();
        expect(res.headers['strict-transport-security']).toBeUndefined();
      }
    });
  });

  describe('CORS', () => {
    const ALLOWED = 'https://home.example.com';
    const DISALLOWED = 'https://evil.example.com';

    describe('with CORS_ORIGINS set', () => {
      let cors: TestApp;
      beforeAll(async () => {
        cors = await startTestApp({ env: { CORS_ORIGINS: `${ALLOWED}, http://ha.local:8123` } });
      });
      afterAll(() => cors.close());

      it('allows a listed origin, with credentials and the rate-limit and request-id headers exposed', async () => {
        const res = await cors.http.get('/api/v1/system/health').set('Origin', ALLOWED).expect(200);
        expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
        expect(res.headers['access-control-allow-credentials']).toBe('true');
        expect(res.headers.vary).toMatch(/Origin/i);
        const exposed = String(res.headers['access-control-expose-headers'])
          .toLowerCase()
          .split(/\s*,\s*/);
        expect(exposed).toEqual(
          expect.arrayContaining([
            'x-ratelimit-limit',
            'x-ratelimit-remaining',
            'x-ratelimit-reset',
            'retry-after',
            'x-request-id',
          ]),
        );
        const second = await cors.http.get('/api/v1/nope').set('Origin', 'http://ha.local:8123').expect(404);
        expect(second.headers['access-control-allow-origin']).toBe('http://ha.local:8123');
      });

      it('answers a preflight from a listed origin for an API-key request', async () => {
        const res = await request(cors.baseUrl)
          .options('/api/v1/api-keys')
          .set('Origin', ALLOWED)
          .set('Access-Control-Request-Method', 'POST')
          .set('Access-Control-Request-Headers', 'x-api-key, content-type');
        expect(res.status).toBe(204);
        expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
        expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
        expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('x-api-key');
      });

      it('does not allow an origin that is not listed', async () => {
        const res = await cors.http.get('/api/v1/system/health').set('Origin', DISALLOWED).expect(200);
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
        const preflight = await request(cors.baseUrl)
          .options('/api/v1/api-keys')
          .set('Origin', DISALLOWED)
          .set('Access-Control-Request-Method', 'POST');
        expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
        // Look-alikes of an allowed origin are different origins.
        for (const origin of [`${ALLOWED}.evil.com`, 'http://home.example.com', `${ALLOWED}:8443`]) {
          const r = await cors.http.get('/api/v1/system/health').set('Origin', origin).expect(200);
          expect(r.headers['access-control-allow-origin']).toBeUndefined();
        }
      });
    });

    it('with CORS_ORIGINS=* allows any origin, without credentials', async () => {
      const any = await startTestApp({ env: { CORS_ORIGINS: '*' } });
      try {
        const res = await any.http.get('/api/v1/system/health').set('Origin', DISALLOWED).expect(200);
        expect([DISALLOWED, '*']).toContain(res.headers['access-control-allow-origin']);
        expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      } finally {
        await any.close();
      }
    });

    it('without CORS_ORIGINS sends no CORS headers to any origin', async () => {
      const res = await t.http.get('/api/v1/system/health').set('Origin', ALLOWED).expect(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      const preflight = await request(t.baseUrl)
        .options('/api/v1/api-keys')
        .set('Origin', ALLOWED)
        .set('Access-Control-Request-Method', 'POST');
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
      expect(preflight.headers['access-control-allow-methods']).toBeUndefined();
    });
  });

  describe('logs', () => {
    let logged: TestApp;
    let output = '';
    let stdoutSpy: jest.SpyInstance;

    interface LogLine {
      time: string;
      level: string;
      msg: string;
      request_id?: string;
      method?: string;
      path?: string;
      status?: number;
      auth?: string;
      api_key_id?: string;
    }
    const lines = (): LogLine[] =>
      output
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine);
    const requestLines = () => lines().filter((l) => l.msg === 'request');

    async function waitForRequestLines(count: number): Promise<void> {
      const deadline = Date.now() + 3000;
      while (requestLines().length < count && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    beforeAll(async () => {
      stdoutSpy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        output += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
        return true;
      });
      logged = await startTestApp({ logger: new JsonLogger('debug') });
    });
    afterAll(async () => {
      await logged.close();
      stdoutSpy.mockRestore();
    });

    it('writes one JSON line per request and never a password, token or API key', async () => {
      const wrongPassword = 'not-the-password-417';
      const login = await logged.http
        .post('/api/v1/auth/login')
        .set('X-Request-Id', 'log-trace-42')
        .send({ username: 'admin', password: ADMIN_PASSWORD })
        .expect(200);
      const jwt = login.body.access_token as string;
      await logged.http
        .post('/api/v1/auth/login')
        .send({ username: 'admin', password: wrongPassword })
        .expect(401);
      const created = await logged.http
        .post('/api/v1/api-keys')
        .set('Authorization', `Bearer ${jwt}`)
        .send({ name: 'log test', scopes: ['admin'] })
        .expect(201);
      const key = created.body.key as string;
      const keyId = created.body.id as string;
      await logged.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
      await logged.http
        .get(`/api/v1/api-keys/${keyId}/usage?api_key=${key}&token=${jwt}`)
        .set('X-API-Key', key)
        .expect(200);
      await logged.http
        .get(`/api/v1/system/health?api_key=${key}&token=${jwt}&password=${ADMIN_PASSWORD}`)
        .expect(200);
      await logged.http.get('/api/v1/auth/me').set('Cookie', `vigil_access_token=${jwt}`).expect(200);
      await logged.http.get('/api/v1/api-keys').set('X-API-Key', `${key}x`).expect(401);
      await waitForRequestLines(9);

      // Request lines appear, with method, path, status and the request id...
      const requests = requestLines();
      const summary = requests.map((l) => `${l.method} ${String(l.path).split('?')[0]} ${l.status}`);
      expect(summary).toEqual(
        expect.arrayContaining([
          'POST /api/v1/auth/login 200',
          'POST /api/v1/auth/login 401',
          'POST /api/v1/api-keys 201',
          'GET /api/v1/api-keys 200',
          `GET /api/v1/api-keys/${keyId}/usage 200`,
          'GET /api/v1/system/health 200',
          'GET /api/v1/auth/me 200',
          'GET /api/v1/api-keys 401',
        ]),
      );
      const traced = requests.find((l) => l.request_id === 'log-trace-42');
      expect(traced).toMatchObject({ method: 'POST', path: '/api/v1/auth/login', status: 200 });
      const byKey = requests.find((l) => l.path === '/api/v1/api-keys' && l.status === 200);
      expect(byKey).toMatchObject({ auth: 'api_key', api_key_id: keyId });
      for (const line of requests) {
        expect(line.level).toBe('info');
        expect(Number.isNaN(Date.parse(line.time))).toBe(false);
        expect(line.request_id).toEqual(expect.any(String));
      }
      // ...query parameters that carry credentials keep their name but lose their value...
      const health = requests.find((l) => String(l.path).startsWith('/api/v1/system/health?'));
      expect(health?.path).toMatch(/api_key=/);
      expect(health?.path).toMatch(/token=/);

      // ...and no secret appears anywhere in what was written.
      expect(output.length).toBeGreaterThan(0);
      for (const secret of [ADMIN_PASSWORD, wrongPassword, jwt, jwt.split('.')[2], key, key.slice(12)]) {
        expect(output).not.toContain(secret);
      }
    });
  });
});
