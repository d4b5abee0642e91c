import Redis from 'ioredis';
import request from 'supertest';
import { startTestApp, TestApp } from './support/test-app';

const REDIS_URL = process.env.VIGIL_TEST_REDIS_URL ?? '';
/** Set by the global set-up when Redis answers (always in CI). */
const describeWithRedis = REDIS_URL ? describe : describe.skip;

/** Sends `count` requests at once (no request waits for another) and returns their responses. */
async function burst(baseUrl: string, key: string, count: number) {
  return Promise.all(
    Array.from({ length: count }, () => request(baseUrl).get('/api/v1/api-keys').set('X-API-Key', key)),
  );
}

const statuses = (responses: { status: number }[]) =>
  responses.reduce<Record<number, number>>(
    (acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }),
    {},
  );

describe('per-key rate limits (one instance, in memory)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('carries X-RateLimit-* on every API-key response and refuses the 101st request with 429', async () => {
    const { key } = await t.createApiKey({ name: 'limited', scopes: ['admin'] });
    const other = await t.createApiKey({ name: 'other', scopes: ['admin'] });
    let lastReset = 0;
    for (let i = 1; i <= 100; i += 1) {
      const res = await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
      expect(res.headers['x-ratelimit-limit']).toBe('100');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(100 - i));
      const reset = Number(res.headers['x-ratelimit-reset']);
      if (i === 1) {
        // Unix epoch seconds at the end of a one-minute window that has just begun.
        expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 58);
        expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
        lastReset = reset;
      }
      expect(reset).toBe(lastReset); // a fixed window: the end does not move
    }
    const refused = await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(429);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual({
      detail: `Rate limit exceeded: 100/minute. Retry after ${retryAfter} seconds.`,
      status_code: 429,
    });
    expect(refused.headers['x-ratelimit-limit']).toBe('100');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(refused.headers['x-ratelimit-reset']).toBe(String(lastReset));

    // Another key and a JWT user are unaffected; JWT responses carry no rate-limit headers.
    const otherRes = await t.http.get('/api/v1/api-keys').set('X-API-Key', other.key).expect(200);
    expect(otherRes.headers['x-ratelimit-remaining']).toBe('99');
    const token = await t.adminToken();
    for (let i = 0; i < 5; i += 1) {
      const res = await t.http.get('/api/v1/api-keys').set('Authorization', `Bearer ${token}`).expect(200);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('puts the headers on 403 and 404 answers to API-key requests too', async () => {
    const { key } = await t.createApiKey({
      name: 'reader',
      scopes: ['read:events'],
      rate_limit_per_minute: 5,
    });
    const forbidden = await t.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(403);
    expect(forbidden.headers['x-ratelimit-remaining']).toBe('4');
    const admin = await t.createApiKey({ name: 'admin5', scopes: ['admin'], rate_limit_per_minute: 5 });
    const missing = await t.http
      .get('/api/v1/api-keys/0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23')
      .set('X-API-Key', admin.key)
      .expect(404);
    expect(missing.headers['x-ratelimit-limit']).toBe('5');
    expect(missing.headers['x-ratelimit-remaining']).toBe('4');
  });

  it('lets exactly the limit through when 300 requests arrive at once', async () => {
    const { key } = await t.createApiKey({ name: 'burst', scopes: ['admin'] });
    const counts = statuses(await burst(t.baseUrl, key, 300));
    expect(counts).toEqual({ 200: 100, 429: 200 });
  });

  it('does not limit requests that are not made with an API key', async () => {
    const token = await t.adminToken();
    const responses = await Promise.all(
      Array.from({ length: 120 }, () => request(t.baseUrl).get('/api/v1/system/health')),
    );
    expect(statuses(responses)).toEqual({ 200: 120 });
    const jwt = await Promise.all(
      Array.from({ length: 120 }, () =>
        request(t.baseUrl).get('/api/v1/api-keys').set('Authorization', `Bearer ${token}`),
      ),
    );
    expect(statuses(jwt)).toEqual({ 200: 120 });
  });
});

describeWithRedis('two instances on one Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let redis: Redis;

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    a = await startTestApp({ env: { REDIS_URL } });
    b = await startTestApp({ env: { REDIS_URL }, databaseName: a.databaseName });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    redis.disconnect();
  });

  it('keeps the counter in Redis', async () => {
    const { key, id } = await a.createApiKey({
      name: 'in redis',
      scopes: ['admin'],
      rate_limit_per_minute: 50,
    });
    await a.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
    expect(await redis.get(`vigil:window:apikey:${id}`)).toBe('1');
    expect(await redis.pttl(`vigil:window:apikey:${id}`)).toBeGreaterThan(55_000);
  });

  it('shares one limit exactly: 300 requests split over both instances let 100 through', async () => {
    const { key } = await a.createApiKey({ name: 'shared', scopes: ['admin'] });
    const [onA, onB] = await Promise.all([burst(a.baseUrl, key, 150), burst(b.baseUrl, key, 150)]);
    expect(statuses([...onA, ...onB])).toEqual({ 200: 100, 429: 200 });
    // Both instances served some of the 100: the limit really was shared, not enforced twice.
    expect(onA.some((r) => r.status === 200) && onB.some((r) => r.status === 200)).toBe(true);
    const resets = new Set([...onA, ...onB].map((r) => r.headers['x-ratelimit-reset']));
    expect(resets.size).toBeLessThanOrEqual(2); // one window end (rounding can straddle a second)
  });

  it('refuses a key revoked on one instance on the other at once, and counts usage from both', async () => {
    const { key, id } = await a.createApiKey({ name: 'both', scopes: ['admin'] });
    await a.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
    await b.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(200);
    await new Promise((r) => setTimeout(r, 1000));
    const token = await a.adminToken();
    const usage = await a.http
      .get(`/api/v1/api-keys/${id}/usage`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(usage.body.usage_count).toBe(2);
    await a.http.delete(`/api/v1/api-keys/${id}`).set('Authorization', `Bearer ${token}`).expect(204);
    const refused = await b.http.get('/api/v1/api-keys').set('X-API-Key', key).expect(401);
    expect(refused.body.detail).toBe('Invalid or expired API key');
  });
});
