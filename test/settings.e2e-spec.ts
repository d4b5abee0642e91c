import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { SecretBox } from '../src/common/crypto/secret-box';
import { ImageStore } from '../src/common/storage/image-store';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainMessage } from '../src/modules/realtime/domain-events';
import { SettingsService } from '../src/modules/settings/settings.service';
import { EventRetentionService } from '../src/modules/system/event-retention.service';
import { startTestApp, TestApp } from './support/test-app';

const REDIS_URL = process.env.VIGIL_TEST_REDIS_URL ?? '';
/** Set by the global set-up when Redis answers (always in CI). */
const describeWithRedis = REDIS_URL ? describe : describe.skip;

const PROVIDERS = ['openai', 'anthropic', 'gemini', 'grok', 'ollama', 'openai_compatible'];
const KEYS = [
  'ai_providers',
  'ai_provider_order',
  'ai_prompt',
  'ai_context_enabled',
  'ai_daily_cost_cap_usd',
  'ai_monthly_cost_cap_usd',
  'timezone',
  'event_retention_days',
];
const SECRET = 'sk-test-Very-Secret-Key-0123456789';
const DAY_MS = 86_400_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 5000) {
  const until = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < until) {
    await sleep(50);
    value = await probe();
  }
  return value;
}

/** Collects the bus messages of one type that an app's DomainEventBus delivers. */
function collect(t: TestApp, type: DomainMessage['type']) {
  const messages: DomainMessage[] = [];
  const stop = t.app.get(DomainEventBus).subscribe((m) => {
    if (m.type === type) messages.push(m);
  });
  return { messages, stop };
}

describe('system settings', () => {
  let t: TestApp;
  let admin: string;
  const auth = () => ({ Authorization: `Bearer ${admin}` });
  const getSettings = async () => (await t.http.get('/api/v1/system/settings').set(auth()).expect(200)).body;
  const put = (body: unknown) =>
    t.http
      .put('/api/v1/system/settings')
      .set(auth())
      .send(body as object);
  const rows = () => t.sql<{ key: string; value: unknown }>('SELECT key, value FROM settings ORDER BY key');
  const settings = () => t.app.get(SettingsService);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON response body
  let defaults: Record<string, any>;

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
    defaults = await getSettings();
  });
  afterAll(() => t.close());

  /** Each test starts from the defaults. */
  afterEach(async () => {
    await t.sql('DELETE FROM settings');
    t.app.get(DomainEventBus).publish('settings.changed', { keys: KEYS });
    await sleep(20);
  });

  describe('GET', () => {
    it('returns every setting with its default, as one flat object, and stores nothing', async () => {
      const body = await getSettings();
      expect(Object.keys(body)).toEqual(KEYS);
      expect(Object.keys(body.ai_providers)).toEqual(PROVIDERS);
      for (const name of PROVIDERS) {
        expect(body.ai_providers[name]).toEqual({
          enabled: false,
          api_key: null,
          api_key_set: false,
          model: expect.any(String),
          base_url: null,
          timeout_ms: 30000,
        });
      }
      expect(body.ai_providers.openai.model).toBe('gpt-4o-mini');
      expect(body.ai_provider_order).toEqual(PROVIDERS);
      expect(typeof body.ai_prompt).toBe('string');
      expect(body.ai_prompt.length).toBeGreaterThan(50);
      expect(body.ai_prompt.length).toBeLessThanOrEqual(4000);
      expect(body.ai_context_enabled).toBe(true);
      expect(body.ai_daily_cost_cap_usd).toBeNull();
      expect(body.ai_monthly_cost_cap_usd).toBeNull();
      expect(body.timezone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
      expect(body.event_retention_days).toBeNull();
      expect(await rows()).toEqual([]);
    });

    it('is documented with a schema that names every setting', async () => {
      const doc = (await t.http.get('/openapi.json').expect(200)).body;
      const schemas = doc.components.schemas;
      expect(Object.keys(schemas.SettingsResponseDto.properties)).toEqual(KEYS);
      expect(schemas.SettingsResponseDto.required).toEqual(KEYS);
      expect(Object.keys(schemas.SettingsUpdateDto.properties)).toEqual(KEYS);
      expect(schemas.SettingsUpdateDto.required ?? []).toEqual([]);
      expect(Object.keys(schemas.AiProvidersSettingsDto.properties)).toEqual(PROVIDERS);
      expect(schemas.AiProviderSettingsDto.properties.timeout_ms).toMatchObject({
        minimum: 1000,
        maximum: 120000,
      });
      const put = doc.paths['/api/v1/system/settings'].put;
      expect(put.requestBody.content['application/json'].schema.$ref).toBe(
        '#/components/schemas/SettingsUpdateDto',
      );
      expect(Object.keys(put.responses).sort()).toEqual(
        ['200', '400', '401', '403', '413', '415', '422', '429'].sort(),
      );
    });
  });

  describe('PUT', () => {
    it('updates only the fields sent for one provider and keeps every other field (deep merge)', async () => {
      const first = await put({ ai_providers: { openai: { model: 'gpt-4o', timeout_ms: 20000 } } }).expect(
        200,
      );
      expect(first.body.ai_providers.openai).toEqual({
        ...defaults.ai_providers.openai,
        model: 'gpt-4o',
        timeout_ms: 20000,
      });
      const second = await put({ ai_providers: { openai: { enabled: true } } }).expect(200);
      expect(second.body.ai_providers.openai).toMatchObject({
        enabled: true,
        model: 'gpt-4o',
        timeout_ms: 20000,
      });
      for (const name of PROVIDERS.filter((p) => p !== 'openai')) {
        expect(second.body.ai_providers[name]).toEqual(defaults.ai_providers[name]);
      }
      const body = await getSettings();
      expect(body).toEqual(second.body);
      expect(body.ai_provider_order).toEqual(defaults.ai_provider_order);
      // Only what differs from the defaults is stored.
      expect(await rows()).toEqual([
        { key: 'ai_providers', value: { openai: { enabled: true, model: 'gpt-4o', timeout_ms: 20000 } } },
      ]);
    });

    it('removes the stored row when a value is set back to its default', async () => {
      await put({
        ai_providers: { ollama: { base_url: 'http://192.168.1.5:11434' } },
        ai_prompt: 'Short.',
      }).expect(200);
      expect((await rows()).map((r) => r.key)).toEqual(['ai_prompt', 'ai_providers']);
      const res = await put({
        ai_providers: { ollama: { base_url: null } },
        ai_prompt: defaults.ai_prompt,
      }).expect(200);
      expect(res.body).toEqual(defaults);
      expect(await rows()).toEqual([]);
    });

    it('sets every other kind of setting, normalising the time zone name', async () => {
      const res = await put({
        ai_provider_order: ['ollama', 'openai'],
        ai_prompt: 'Describe the scene.\nBe brief.',
        ai_context_enabled: false,
        ai_daily_cost_cap_usd: 1.5,
        ai_monthly_cost_cap_usd: 0,
        timezone: 'europe/berlin',
        event_retention_days: 3650,
      }).expect(200);
      const expected = {
        ...defaults,
        ai_provider_order: ['ollama', 'openai'],
        ai_prompt: 'Describe the scene.\nBe brief.',
        ai_context_enabled: false,
        ai_daily_cost_cap_usd: 1.5,
        ai_monthly_cost_cap_usd: 0,
        timezone: 'Europe/Berlin',
        event_retention_days: 3650,
      };
      expect(res.body).toEqual(expected);
      expect(await getSettings()).toEqual(expected);
      expect(await settings().get('timezone')).toBe('Europe/Berlin');
      expect(await settings().get('ai_provider_order')).toEqual(['ollama', 'openai']);

      // null lifts caps and retention; an empty order is allowed (AI off).
      const cleared = await put({
        ai_daily_cost_cap_usd: null,
        event_retention_days: null,
        ai_provider_order: [],
      }).expect(200);
      expect(cleared.body).toMatchObject({
        ai_daily_cost_cap_usd: null,
        event_retention_days: null,
        ai_provider_order: [],
      });
    });

    it('accepts an empty body and changes nothing', async () => {
      const res = await put({}).expect(200);
      expect(res.body).toEqual(defaults);
      expect(await rows()).toEqual([]);
    });

    const invalid: [string, Record<string, unknown>, string][] = [
      [
        'timeout below 1000',
        { ai_providers: { openai: { timeout_ms: 999 } } },
        'body.ai_providers.openai.timeout_ms',
      ],
      [
        'timeout above 120000',
        { ai_providers: { gemini: { timeout_ms: 120001 } } },
        'body.ai_providers.gemini.timeout_ms',
      ],
      [
        'fractional timeout',
        { ai_providers: { grok: { timeout_ms: 1500.5 } } },
        'body.ai_providers.grok.timeout_ms',
      ],
      [
        'ftp base_url',
        { ai_providers: { ollama: { base_url: 'ftp://host/' } } },
        'body.ai_providers.ollama.base_url',
      ],
      [
        'non-URL base_url',
        { ai_providers: { ollama: { base_url: 'localhost:11434' } } },
        'body.ai_providers.ollama.base_url',
      ],
      [
        'base_url with credentials',
        { ai_providers: { openai_compatible: { base_url: 'http://u:p@host/v1' } } },
        'body.ai_providers.openai_compatible.base_url',
      ],
      [
        'enabled as text',
        { ai_providers: { openai: { enabled: 'yes' } } },
        'body.ai_providers.openai.enabled',
      ],
      [
        'model too long',
        { ai_providers: { openai: { model: 'm'.repeat(201) } } },
        'body.ai_providers.openai.model',
      ],
      [
        'api_key of a number',
        { ai_providers: { openai: { api_key: 12345 } } },
        'body.ai_providers.openai.api_key',
      ],
      [
        'api_key too long',
        { ai_providers: { openai: { api_key: 'k'.repeat(1001) } } },
        'body.ai_providers.openai.api_key',
      ],
      ['unknown provider', { ai_providers: { mistral: { enabled: true } } }, 'body.ai_providers.mistral'],
      [
        'unknown provider field',
        { ai_providers: { openai: { temperature: 1 } } },
        'body.ai_providers.openai.temperature',
      ],
      ['provider not an object', { ai_providers: { openai: true } }, 'body.ai_providers.openai'],
      ['ai_providers not an object', { ai_providers: [] }, 'body.ai_providers'],
      ['duplicate in the order', { ai_provider_order: ['openai', 'openai'] }, 'body.ai_provider_order.1'],
      ['unknown name in the order', { ai_provider_order: ['mistral'] }, 'body.ai_provider_order.0'],
      ['order not an array', { ai_provider_order: 'openai' }, 'body.ai_provider_order'],
      ['empty prompt', { ai_prompt: '   ' }, 'body.ai_prompt'],
      ['prompt over 4000 characters', { ai_prompt: 'p'.repeat(4001) }, 'body.ai_prompt'],
      ['null prompt', { ai_prompt: null }, 'body.ai_prompt'],
      ['context flag as text', { ai_context_enabled: 'true' }, 'body.ai_context_enabled'],
      ['negative daily cap', { ai_daily_cost_cap_usd: -1 }, 'body.ai_daily_cost_cap_usd'],
      ['monthly cap as text', { ai_monthly_cost_cap_usd: '30' }, 'body.ai_monthly_cost_cap_usd'],
      ['unknown time zone', { timezone: 'Mars/Olympus_Mons' }, 'body.timezone'],
      ['offset instead of a zone', { timezone: '+05:00' }, 'body.timezone'],
      ['retention of 0 days', { event_retention_days: 0 }, 'body.event_retention_days'],
      ['retention above 3650 days', { event_retention_days: 3651 }, 'body.event_retention_days'],
      ['fractional retention', { event_retention_days: 1.5 }, 'body.event_retention_days'],
      ['retention as text', { event_retention_days: '30' }, 'body.event_retention_days'],
      ['an unknown key', { retention: 30 }, 'body.retention'],
      [
        'a __proto__ provider',
        { ai_providers: JSON.parse('{"__proto__": {"enabled": true}}') as unknown },
        'body.ai_providers.__proto__',
      ],
      [
        'a __proto__ key',
        JSON.parse('{"__proto__": {"ai_prompt": "x"}}') as Record<string, unknown>,
        'body.__proto__',
      ],
    ];
    it.each(invalid)(
      'refuses %s with 422 naming the field, and changes nothing',
      async (_case, body, field) => {
        await put({ ai_prompt: 'Kept.', ai_providers: { openai: { model: 'kept-model' } } }).expect(200);
        const before = await rows();
        const res = await put(body).expect(422);
        expect(res.body).toMatchObject({ status_code: 422, detail: expect.stringContaining(field) });
        expect(res.body.errors).toEqual([{ field, message: expect.any(String) }]);
        expect(await rows()).toEqual(before);
      },
    );

    it('stores nothing when one of several values fails, and names every bad field', async () => {
      const changes = collect(t, 'settings.changed');
      const res = await put({
        ai_prompt: 'A valid prompt.',
        ai_providers: { openai: { model: 'gpt-4o', timeout_ms: 5 }, anthropic: { enabled: 1 } },
        timezone: 'Nowhere/Land',
      }).expect(422);
      expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(
        [
          'body.ai_providers.anthropic.enabled',
          'body.ai_providers.openai.timeout_ms',
          'body.timezone',
        ].sort(),
      );
      expect(await rows()).toEqual([]);
      expect(await getSettings()).toEqual(defaults);
      await sleep(100);
      expect(changes.messages).toEqual([]);
      changes.stop();
    });

    it('refuses unknown keys even next to valid ones (422, nothing stored)', async () => {
      const res = await put({ ai_prompt: 'A valid prompt.', foo: 1, bar: { x: 1 } }).expect(422);
      expect(res.body.errors).toEqual([
        { field: 'body.foo', message: expect.stringContaining('not a known setting') },
        { field: 'body.bar', message: expect.stringContaining('not a known setting') },
      ]);
      expect(await rows()).toEqual([]);
    });

    it.each([
      ['an array', []],
      ['a string', 'settings'],
      ['null', null],
    ])('refuses a body that is %s (422)', async (_case, body) => {
      const res = await t.http
        .put('/api/v1/system/settings')
        .set(auth())
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(body))
        .expect(422);
      expect(res.body.errors).toEqual([{ field: 'body', message: 'the request body must be a JSON object' }]);
    });

    it('answers malformed JSON with 400', async () => {
      await t.http
        .put('/api/v1/system/settings')
        .set(auth())
        .set('Content-Type', 'application/json')
        .send('{"ai_prompt": ')
        .expect(400);
    });
  });

  describe('secrets', () => {
    const openaiKey = async () => (await settings().get('ai_providers')).openai.api_key;

    it('are write-only: masked on read, stored encrypted, available decrypted to the service', async () => {
      const res = await put({ ai_providers: { openai: { api_key: SECRET, enabled: true } } }).expect(200);
      expect(res.body.ai_providers.openai).toMatchObject({
        api_key: '********',
        api_key_set: true,
        enabled: true,
      });
      expect(res.body.ai_providers.anthropic).toMatchObject({ api_key: null, api_key_set: false });
      const body = await getSettings();
      expect(body.ai_providers.openai).toMatchObject({ api_key: '********', api_key_set: true });
      expect(JSON.stringify(res.body)).not.toContain(SECRET);
      expect(JSON.stringify(body)).not.toContain(SECRET);

      const [row] = await t.sql<{ value: { openai: { api_key: string } }; raw: string }>(
        "SELECT value, value::text AS raw FROM settings WHERE key = 'ai_providers'",
      );
      expect(row.raw).not.toContain(SECRET);
      expect(row.raw).not.toContain(Buffer.from(SECRET).toString('base64'));
      expect(row.value.openai.api_key).toMatch(/^v1:/);
      expect(t.app.get(SecretBox).decrypt(row.value.openai.api_key)).toBe(SECRET);
      expect(await openaiKey()).toBe(SECRET);
    });

    it('keep their stored value when the mask is sent back, also when the whole GET body is sent back', async () => {
      await put({ ai_providers: { openai: { api_key: SECRET } } }).expect(200);

      const res = await put({ ai_providers: { openai: { api_key: '********', model: 'gpt-4.1' } } }).expect(
        200,
      );
      expect(res.body.ai_providers.openai).toMatchObject({
        api_key: '********',
        api_key_set: true,
        model: 'gpt-4.1',
      });
      expect(await openaiKey()).toBe(SECRET);

      const [before] = await rows();
      const changes = collect(t, 'settings.changed');
      const current = await getSettings();
      const roundTrip = await put(current).expect(200);
      expect(roundTrip.body).toEqual(current);
      expect(await openaiKey()).toBe(SECRET);
      const [after] = await rows();
      expect((after.value as { openai: { api_key: string } }).openai.api_key).toBe(
        (before.value as { openai: { api_key: string } }).openai.api_key,
      );
      await sleep(100);
      expect(changes.messages).toEqual([]); // nothing changed, nothing published
      changes.stop();
    });

    it('are replaced by a new value and removed by null or ""', async () => {
      await put({ ai_providers: { openai: { api_key: SECRET }, gemini: { api_key: 'gm-key' } } }).expect(200);
      await put({ ai_providers: { openai: { api_key: 'sk-new-key' } } }).expect(200);
      expect(await openaiKey()).toBe('sk-new-key');

      const res = await put({ ai_providers: { openai: { api_key: null }, gemini: { api_key: '' } } }).expect(
        200,
      );
      expect(res.body.ai_providers.openai).toMatchObject({ api_key: null, api_key_set: false });
      expect(res.body.ai_providers.gemini).toMatchObject({ api_key: null, api_key_set: false });
      expect(await openaiKey()).toBeNull();
      expect(await rows()).toEqual([]);
    });

    it('never appear in error answers', async () => {
      const res = await put({ ai_providers: { openai: { api_key: SECRET, timeout_ms: 1 } } }).expect(422);
      expect(JSON.stringify(res.body)).not.toContain(SECRET);
      expect(await rows()).toEqual([]);
    });

    it('refuses a non-boolean read-only *_set flag', async () => {
      const res = await put({ ai_providers: { openai: { api_key_set: 'yes' } } }).expect(422);
      expect(res.body.errors[0].field).toBe('body.ai_providers.openai.api_key_set');
    });

    it('fall back to "not set" when they cannot be decrypted (ENCRYPTION_KEY changed)', async () => {
      await t.sql(
        `INSERT INTO settings (key, value) VALUES ('ai_providers', '{"openai":{"api_key":"v1:AAAA","model":"m1"}}')`,
      );
      t.app.get(DomainEventBus).publish('settings.changed', { keys: ['ai_providers'] });
      await sleep(20);
      const body = await getSettings();
      expect(body.ai_providers.openai).toMatchObject({ api_key: null, api_key_set: false, model: 'm1' });
      expect(await openaiKey()).toBeNull();
    });
  });

  describe('changes', () => {
    it('publish settings.changed with exactly the changed keys after the commit', async () => {
      const changes = collect(t, 'settings.changed');
      let storedWhenPublished: unknown[] | undefined;
      const stop = t.app.get(DomainEventBus).subscribe((m) => {
        if (m.type === 'settings.changed' && !storedWhenPublished) {
          void t.sql('SELECT key FROM settings').then((r) => {
            storedWhenPublished = r;
          });
        }
      });
      await put({ ai_prompt: 'New prompt.', timezone: defaults.timezone, ai_context_enabled: false }).expect(
        200,
      );
      await eventually(
        async () => changes.messages.length,
        (n) => n > 0,
      );
      expect(changes.messages.map((m) => m.data)).toEqual([{ keys: ['ai_prompt', 'ai_context_enabled'] }]);
      await eventually(
        async () => storedWhenPublished,
        (r) => r !== undefined,
      );
      expect(storedWhenPublished).toHaveLength(2);
      stop();
      changes.stop();
    });

    it('serve get() from memory until a settings.changed message drops the cache', async () => {
      await put({ ai_prompt: 'Through the API.' }).expect(200);
      expect(await settings().get('ai_prompt')).toBe('Through the API.');
      // Written behind the service's back: the cached value stays...
      await t.sql("UPDATE settings SET value = '\"Behind its back.\"' WHERE key = 'ai_prompt'");
      expect(await settings().get('ai_prompt')).toBe('Through the API.');
      // ...until the bus says it changed.
      t.app.get(DomainEventBus).publish('settings.changed', { keys: ['ai_prompt'] });
      const value = await eventually(
        () => settings().get('ai_prompt'),
        (v) => v === 'Behind its back.',
      );
      expect(value).toBe('Behind its back.');
    });

    it('tell onChange listeners, which already read the new value', async () => {
      const seen: { keys: string[]; value: unknown }[] = [];
      const stop = settings().onChange((keys) => {
        void settings()
          .get('ai_daily_cost_cap_usd')
          .then((value) => seen.push({ keys, value }));
      });
      await put({ ai_daily_cost_cap_usd: 2.25 }).expect(200);
      await eventually(
        async () => seen.length,
        (n) => n > 0,
      );
      expect(seen).toEqual([{ keys: ['ai_daily_cost_cap_usd'], value: 2.25 }]);
      stop();
    });

    it('hands out frozen values, so no caller can change the shared cache', async () => {
      const providers = await settings().get('ai_providers');
      expect(Object.isFrozen(providers)).toBe(true);
      expect(Object.isFrozen(providers.openai)).toBe(true);
      expect(() => {
        (providers.openai as { model: string }).model = 'hacked';
      }).toThrow(TypeError);
    });

    it('merge concurrent partial updates of different providers instead of losing one', async () => {
      await Promise.all(
        PROVIDERS.map((name, i) => put({ ai_providers: { [name]: { timeout_ms: 2000 + i } } }).expect(200)),
      );
      const body = await getSettings();
      PROVIDERS.forEach((name, i) => expect(body.ai_providers[name].timeout_ms).toBe(2000 + i));
    });
  });

  describe('access', () => {
    it('needs the admin scope', async () => {
      const { key } = await t.createApiKey({
        name: 'ro',
        scopes: ['read:events', 'read:cameras', 'write:cameras'],
      });
      for (const req of [
        t.http.get('/api/v1/system/settings').set('X-API-Key', key),
        t.http.put('/api/v1/system/settings').set('X-API-Key', key).send({ ai_prompt: 'x' }),
      ]) {
        const res = await req.expect(403);
        expect(res.body).toEqual({
          detail: 'Insufficient permissions. Required scope: admin',
          status_code: 403,
        });
      }
      await t.http.get('/api/v1/system/settings').expect(401);
      await t.http.put('/api/v1/system/settings').send({ ai_prompt: 'x' }).expect(401);
      expect(await rows()).toEqual([]);

      const adminKey = await t.createApiKey({ name: 'admin', scopes: ['admin'] });
      await t.http
        .put('/api/v1/system/settings')
        .set('X-API-Key', adminKey.key)
        .send({ ai_prompt: 'x' })
        .expect(200);
      const res = await t.http.get('/api/v1/system/settings').set('X-API-Key', adminKey.key).expect(200);
      expect(res.body.ai_prompt).toBe('x');
    });
  });

  describe('event retention', () => {
    let cameraId: string;
    const images = () => t.app.get(ImageStore);
    const retention = () => t.app.get(EventRetentionService);

    beforeAll(async () => {
      [{ id: cameraId }] = await t.sql<{ id: string }>(
        "INSERT INTO cameras (name, source_type, url) VALUES ('Retention cam', 'rtsp', 'rtsp://127.0.0.1/x') RETURNING id",
      );
    });
    afterEach(() => t.sql('DELETE FROM events'));

    /** Inserts an event `ageDays` old, with an image, and returns its id and image name. */
    async function insertEvent(ageDays: number) {
      const image = await images().save(Buffer.from(`jpeg-${ageDays}-${Math.random()}`));
      const [{ id }] = await t.sql<{ id: string }>(
        `INSERT INTO events (camera_id, "timestamp", detection_type, source_type, image_file)
         VALUES ($1, $2, 'person', 'rtsp', $3) RETURNING id`,
        [cameraId, new Date(Date.now() - ageDays * DAY_MS), image],
      );
      return { id, image };
    }
    const eventIds = async () =>
      (await t.sql<{ id: string }>('SELECT id FROM events')).map((r) => r.id).sort();

    it('keeps everything while no retention is set', async () => {
      const old = await insertEvent(4000);
      expect(await retention().purge()).toBe(0);
      expect(await eventIds()).toEqual([old.id]);
      expect(existsSync(images().path(old.image))).toBe(true);
    });

    it('deletes events older than the retention, with their images, as soon as the setting changes', async () => {
      const old = await Promise.all([insertEvent(45), insertEvent(31), insertEvent(400)]);
      const recent = await Promise.all([insertEvent(29), insertEvent(0.5)]);
      const deleted = collect(t, 'event.deleted');

      await put({ event_retention_days: 30 }).expect(200);

      const remaining = await eventually(eventIds, (ids) => ids.length === recent.length);
      expect(remaining).toEqual(recent.map((e) => e.id).sort());
      // Images are removed after the rows' transaction commits: wait for that step too.
      const oldImagesLeft = async () => old.filter((e) => existsSync(images().path(e.image))).length;
      expect(await eventually(oldImagesLeft, (n) => n === 0)).toBe(0);
      for (const e of recent) expect(existsSync(images().path(e.image))).toBe(true);
      await eventually(
        async () => deleted.messages.length,
        (n) => n >= old.length,
      );
      expect(deleted.messages.map((m) => (m.data as { id: string }).id).sort()).toEqual(
        old.map((e) => e.id).sort(),
      );
      expect(deleted.messages[0].data).toEqual({ id: expect.any(String), camera_id: cameraId });
      deleted.stop();
    });

    it('deletes in batches until nothing older is left (the hourly pass)', async () => {
      await put({ event_retention_days: 7 }).expect(200);
      await sleep(100); // let the pass that the change started finish
      const old = await Promise.all(Array.from({ length: 7 }, (_, i) => insertEvent(8 + i)));
      const recent = await insertEvent(6);
      const service = retention();
      const batchSize = service.batchSize;
      service.batchSize = 2;
      try {
        expect(await service.purge()).toBe(old.length);
      } finally {
        service.batchSize = batchSize;
      }
      expect(await eventIds()).toEqual([recent.id]);
      for (const e of old) expect(existsSync(images().path(e.image))).toBe(false);
      expect(await service.purge()).toBe(0);
    });

    it('runs when an instance starts (events that aged past the retention while it was down)', async () => {
      await put({ event_retention_days: 10 }).expect(200);
      await sleep(100);
      const old = await insertEvent(11);
      const recent = await insertEvent(9);
      const second = await startTestApp({ databaseName: t.databaseName });
      try {
        const remaining = await eventually(eventIds, (ids) => ids.length === 1);
        expect(remaining).toEqual([recent.id]);
        expect(old.id).not.toBe(recent.id);
      } finally {
        await second.close();
      }
    });
  });
});

describeWithRedis('settings across instances (Redis)', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    // Instances that share a database share ENCRYPTION_KEY (else they cannot read each other's secrets).
    const env = { REDIS_URL, ENCRYPTION_KEY: randomBytes(32).toString('hex') };
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseName: a.databaseName });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it("updates the other instance's cached value without a restart", async () => {
    const token = await a.adminToken();
    const onB = b.app.get(SettingsService);
    expect(await onB.get('ai_prompt')).not.toBe('Changed on instance A.');
    const changedOnB: string[][] = [];
    const stop = onB.onChange((keys) => changedOnB.push(keys));

    await a.http
      .put('/api/v1/system/settings')
      .set('Authorization', `Bearer ${token}`)
      .send({ ai_prompt: 'Changed on instance A.', ai_providers: { openai: { api_key: SECRET } } })
      .expect(200);

    const value = await eventually(
      () => onB.get('ai_prompt'),
      (v) => v === 'Changed on instance A.',
      2000,
    );
    expect(value).toBe('Changed on instance A.');
    expect((await onB.get('ai_providers')).openai.api_key).toBe(SECRET);
    expect(changedOnB).toEqual([['ai_providers', 'ai_prompt']]);
    stop();
  });
});
