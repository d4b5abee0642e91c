import { CREDENTIAL_CACHE_MS } from '../src/common/auth/credential-cache';
import { createHash } from 'node:crypto';
import { startTestApp, TestApp } from './support/test-app';

const KEY_FORMAT = /^vgl_[0-9A-Za-z]{40}$/;
const LIST_FIELDS = [
  'created_at',
  'expires_at',
  'id',
  'is_active',
  'last_used_at',
  'name',
  'prefix',
  'rate_limit_per_minute',
  'scopes',
  'usage_count',
].sort();

describe('API keys', () => {
  let t: TestApp;
  let admin: string;
  const auth = () => ({ Authorization: `Bearer ${admin}` });

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
  });
  afterAll(() => t.close());

  const countKeys = async () =>
    Number((await t.sql<{ n: string }>('SELECT count(*) AS n FROM api_keys'))[0].n);

  describe('create', () => {
    it('returns the full key once, in the documented format, and stores only its SHA-256', async () => {
      const res = await t.http
        .post('/api/v1/api-keys')
        .set(auth())
        .send({ name: 'Home Assistant', scopes: ['read:events', 'read:cameras'] })
        .expect(201);
      expect(Object.keys(res.body).sort()).toEqual(
        ['created_at', 'expires_at', 'id', 'key', 'name', 'prefix', 'rate_limit_per_minute', 'scopes'].sort(),
      );
      expect(res.body.key).toMatch(KEY_FORMAT);
      expect(res.body.prefix).toBe(res.body.key.slice(0, 12));
      expect(res.body.rate_limit_per_minute).toBe(100);
      expect(res.body.expires_at).toBeNull();
      expect(res.body.scopes).toEqual(['read:events', 'read:cameras']);

      const rows = await t.sql<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [
        res.body.id,
      ]);
      expect(rows[0].key_hash).toBe(createHash('sha256').update(res.body.key).digest('hex'));
      const stored = JSON.stringify(rows[0]);
      expect(stored).not.toContain(res.body.key);

      const list = await t.http.get('/api/v1/api-keys').set(auth()).expect(200);
      expect(JSON.stringify(list.body)).not.toContain(res.body.key);
      const usage = await t.http.get(`/api/v1/api-keys/${res.body.id}/usage`).set(auth()).expect(200);
      expect(JSON.stringify(usage.body)).not.toContain(res.body.key);
    });

    it('makes a different key every time', async () => {
      const a = await t.createApiKey({ name: 'a', scopes: ['read:events'] });
      const b = await t.createApiKey({ name: 'a', scopes: ['read:events'] });
      expect(a.key).not.toBe(b.key);
    });

    it('accepts an expiry in the future and a custom limit', async () => {
      const expires = new Date(Date.now() + 3600_000).toISOString();
      const res = await t.http
        .post('/api/v1/api-keys')
        .set(auth())
        .send({ name: 'n8n', scopes: ['admin'], expires_at: expires, rate_limit_per_minute: 10000 })
        .expect(201);
      expect(res.body.expires_at).toBe(expires);
      expect(res.body.rate_limit_per_minute).toBe(10000);
    });

    it.each([
      ['no name', { scopes: ['read:events'] }, 'body.name'],
      ['an empty name', { name: '   ', scopes: ['read:events'] }, 'body.name'],
      ['a name over 100 characters', { name: 'x'.repeat(101), scopes: ['read:events'] }, 'body.name'],
      ['no scopes', { name: 'k' }, 'body.scopes'],
      ['empty scopes', { name: 'k', scopes: [] }, 'body.scopes'],
      ['an unknown scope', { name: 'k', scopes: ['read:everything'] }, 'body.scopes'],
      ['scopes as a string', { name: 'k', scopes: 'admin' }, 'body.scopes'],
      [
        'a limit of 0',
        { name: 'k', scopes: ['admin'], rate_limit_per_minute: 0 },
        'body.rate_limit_per_minute',
      ],
      [
        'a limit of 10001',
        { name: 'k', scopes: ['admin'], rate_limit_per_minute: 10001 },
        'body.rate_limit_per_minute',
      ],
      [
        'a fractional limit',
        { name: 'k', scopes: ['admin'], rate_limit_per_minute: 1.5 },
        'body.rate_limit_per_minute',
      ],
      [
        'a limit as text',
        { name: 'k', scopes: ['admin'], rate_limit_per_minute: '100' },
        'body.rate_limit_per_minute',
      ],
      [
        'an expiry in the past',
        { name: 'k', scopes: ['admin'], expires_at: '2020-01-01T00:00:00Z' },
        'body.expires_at',
      ],
      [
        'an expiry that is not a date',
        { name: 'k', scopes: ['admin'], expires_at: 'tomorrow' },
        'body.expires_at',
      ],
      ['an unknown field', { name: 'k', scopes: ['admin'], owner: 'me' }, 'body.owner'],
    ])('refuses %s with 422 and creates nothing', async (_case, body, field) => {
      const before = await countKeys();
      const res = await t.http.post('/api/v1/api-keys').set(auth()).send(body).expect(422);
      expect(res.body.status_code).toBe(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(await countKeys()).toBe(before);
    });
  });

  describe('list, get, revoke', () => {
    it('lists active keys with the list fields, hides revoked keys unless include_revoked=true', async () => {
      const kept = await t.createApiKey({ name: 'kept', scopes: ['read:events'] });
      const revoked = await t.createApiKey({ name: 'revoked', scopes: ['read:events'] });
      await t.http.delete(`/api/v1/api-keys/${revoked.id}`).set(auth()).expect(204);

      const active = await t.http.get('/api/v1/api-keys').set(auth()).expect(200);
      const ids = active.body.map((k: { id: string }) => k.id);
      expect(ids).toContain(kept.id);
      expect(ids).not.toContain(revoked.id);
      for (const record of active.body) expect(Object.keys(record).sort()).toEqual(LIST_FIELDS);

      const all = await t.http.get('/api/v1/api-keys?include_revoked=true').set(auth()).expect(200);
      const record = all.body.find((k: { id: string }) => k.id === revoked.id);
      expect(record.is_active).toBe(false);
      const explicitFalse = await t.http
        .get('/api/v1/api-keys?include_revoked=false')
        .set(auth())
        .expect(200);
      expect(explicitFalse.body.map((k: { id: string }) => k.id)).not.toContain(revoked.id);
    });

    it('refuses a non-boolean include_revoked with 422', async () => {
      const res = await t.http.get('/api/v1/api-keys?include_revoked=maybe').set(auth()).expect(422);
      expect(res.body.errors[0].field).toBe('query.include_revoked');
    });

    it('gets one key as its list record; unknown and malformed ids are 404', async () => {
      const { id } = await t.createApiKey({ name: 'one', scopes: ['read:cameras'] });
      const res = await t.http.get(`/api/v1/api-keys/${id}`).set(auth()).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(LIST_FIELDS);
      expect(res.body).toMatchObject({
        id,
        name: 'one',
        scopes: ['read:cameras'],
        is_active: true,
        usage_count: 0,
      });

      for (const bad of ['0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23', 'not-a-uuid', '1']) {
        for (const path of [`/api/v1/api-keys/${bad}`, `/api/v1/api-keys/${bad}/usage`]) {
          const missing = await t.http.get(path).set(auth()).expect(404);
          expect(missing.body).toEqual({ detail: 'API key not found', status_code: 404 });
        }
        await t.http.delete(`/api/v1/api-keys/${bad}`).set(auth()).expect(404);
      }
    });

    it('revokes at once and idempotently', async () => {
      const { key, id } = await t.createApiKey({ name: 'to revoke', scopes: ['admin'] });
      await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
      await t.http.delete(`/api/v1/api-keys/${id}`).set(auth()).expect(204);
      const refused = await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(401);
      expect(refused.body).toEqual({ detail: 'Invalid or expired API key', status_code: 401 });
      await t.http.delete(`/api/v1/api-keys/${id}`).set(auth()).expect(204);
      const record = await t.http.get(`/api/v1/api-keys/${id}`).set(auth()).expect(200);
      expect(record.body.is_active).toBe(false);
    });
  });

  describe('authentication with a key', () => {
    it('refuses an expired key with 401', async () => {
      const { key, id } = await t.createApiKey({ name: 'expiring', scopes: ['admin'] });
      await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
      await t.sql(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
      // A change made behind the service's back is seen once the checked key is no longer trusted (1 s).
      await new Promise((resolve) => setTimeout(resolve, CREDENTIAL_CACHE_MS + 100));
      const res = await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(401);
      expect(res.body.detail).toBe('Invalid or expired API key');
    });

    it('refuses wrong and badly copied keys with 401 and no rate-limit headers', async () => {
      const { key } = await t.createApiKey({ name: 'real', scopes: ['admin'] });
      for (const bad of [
        key.slice(0, -1),
        `${key}x`,
        key.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a')),
        'vgl_',
        '',
        'Bearer x',
      ]) {
        const res = await t.http.get('/api/v1/api-keys').set('X-API-Key', bad).expect(401);
        expect(res.body).toEqual({ detail: 'Invalid or expired API key', status_code: 401 });
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      }
    });

    it('lets X-API-Key alone decide, even next to a valid session', async () => {
      const res = await t.http
        .get('/api/v1/api-keys')
        .set('X-API-Key', 'vgl_wrong')
        .set('Authorization', `Bearer ${admin}`)
        .set('Cookie', `vigil_access_token=${admin}`)
        .expect(401);
      expect(res.body.detail).toBe('Invalid or expired API key');
    });

    it('says "Not authenticated" without credentials', async () => {
      const res = await t.http.get('/api/v1/api-keys').expect(401);
      expect(res.body).toEqual({ detail: 'Not authenticated', status_code: 401 });
    });

    it.each([['read:events'], ['read:cameras'], ['write:cameras']])(
      'refuses a %s key on admin endpoints with 403 naming the scope',
      async (scope) => {
        const { key, id } = await t.createApiKey({ name: scope, scopes: [scope] });
        const before = await countKeys();
        for (const [method, path] of [
          ['get', '/api/v1/api-keys'],
          ['post', '/api/v1/api-keys'],
          ['get', `/api/v1/api-keys/${id}`],
          ['get', `/api/v1/api-keys/${id}/usage`],
          ['delete', `/api/v1/api-keys/${id}`],
          ['get', '/api/v1/users'],
        ] as const) {
          const req = t.http[method](path).set('X-API-Key', key);
          const res = await (method === 'post' ? req.send({ name: 'x', scopes: ['admin'] }) : req).expect(
            403,
          );
          expect(res.body).toEqual({
            detail: 'Insufficient permissions. Required scope: admin',
            status_code: 403,
          });
        }
        expect(await countKeys()).toBe(before);
        const still = await t.http.get(`/api/v1/api-keys/${id}`).set(auth()).expect(200);
        expect(still.body.is_active).toBe(true);
      },
    );

    it('lets an admin-scoped key manage keys', async () => {
      const { key } = await t.createApiKey({ name: 'admin key', scopes: ['admin'] });
      const created = await t.http
        .post('/api/v1/api-keys')
        .set('X-API-Key', key)
        .send({ name: 'made by a key', scopes: ['read:events'] })
        .expect(201);
      await t.http.delete(`/api/v1/api-keys/${created.body.id}`).set('X-API-Key', key).expect(204);
      const rows = await t.sql<{ created_by: string | null }>(
        'SELECT created_by FROM api_keys WHERE id = $1',
        [created.body.id],
      );
      expect(rows[0].created_by).toBeNull();
    });
  });

  describe('usage', () => {
    it('counts every request that presented the key, with time and IP, within one second', async () => {
      const { key, id } = await t.createApiKey({ name: 'counted', scopes: ['read:events'] });
      const started = Date.now();
      // Refused for scope (403) still counts: the key was valid and presented.
      for (let i = 0; i < 3; i += 1) await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(403);
      await new Promise((r) => setTimeout(r, 1000));
      const res = await t.http.get(`/api/v1/api-keys/${id}/usage`).set(auth()).expect(200);
      expect(res.body).toMatchObject({
        id,
        name: 'counted',
        prefix: key.slice(0, 12),
        usage_count: 3,
        last_used_ip: '127.0.0.1',
      });
      expect(Date.parse(res.body.last_used_at)).toBeGreaterThanOrEqual(started - 1000);
      expect(Object.keys(res.body).sort()).toEqual(
        [
          'id',
          'last_used_at',
          'last_used_ip',
          'name',
          'prefix',
          'rate_limit_per_minute',
          'usage_count',
        ].sort(),
      );
    });

    it('ignores X-Forwarded-For from a proxy that is not trusted', async () => {
      const { key, id } = await t.createApiKey({ name: 'xff', scopes: ['admin'] });
      await t.http
        .get('/api/v1/api-keys')
        .set('X-API-Key', key)
        .set('X-Forwarded-For', '203.0.113.9')
        .expect(200);
      await new Promise((r) => setTimeout(r, 1000));
      const res = await t.http.get(`/api/v1/api-keys/${id}/usage`).set(auth()).expect(200);
      expect(res.body.last_used_ip).toBe('127.0.0.1');
    });
  });
});

describe('API keys behind a trusted proxy', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { TRUSTED_PROXIES: '127.0.0.1,::1' } });
  });
  afterAll(() => t.close());

  it('records the client address from X-Forwarded-For', async () => {
    const { key, id } = await t.createApiKey({ name: 'proxied', scopes: ['admin'] });
    await t.http
      .get('/api/v1/api-keys')
      .set('X-API-Key', key)
      .set('X-Forwarded-For', '203.0.113.9')
      .expect(200);
    await new Promise((r) => setTimeout(r, 1000));
    const token = await t.adminToken();
    const res = await t.http
      .get(`/api/v1/api-keys/${id}/usage`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(res.body.last_used_ip).toBe('203.0.113.9');
  });
});
