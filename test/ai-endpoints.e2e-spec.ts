import { costUsd } from '../src/modules/ai/providers/pricing';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainMessage } from '../src/modules/realtime/domain-events';
import { DEFAULT_AI_PROMPT } from '../src/modules/settings/settings.registry';
import { FAKE_AI_DEFAULT_ANSWER, stopAllFakeAiServers } from './fakes/ai-providers';
import { FakeMjpegCamera, stopAllFakeCameras } from './fakes/mjpeg-camera';
import {
  AiFakes,
  createCamera,
  getEvent,
  ingest,
  ledger,
  openAiPrompt,
  PNG_1x1,
  providerSettings,
  putSettings,
  RED_JPEG,
  startAiFakes,
  UNKNOWN_ID,
  waitForStatus,
} from './support/ai-setup';
import { describeWithMedia } from './support/media';
import { sleep, waitFor } from './support/processes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The /ai endpoints and the AI routes of events: providers, capabilities, describe (base64, event, camera),
 * refine-prompt, re-analysis with its hourly limit, and feedback. Providers are loopback fakes.
 */

const AI_PROVIDERS = ['openai', 'anthropic', 'gemini', 'grok', 'ollama', 'openai_compatible'];

describe('AI endpoints (e2e)', () => {
  let t: TestApp;
  let admin: string;
  let readKey: string;
  let fakes: AiFakes;
  let cameraId: string;
  const messages: DomainMessage[] = [];
  let unsubscribe: () => void;

  /** POST as the admin, or with an API key. */
  const post = (path: string, body: Record<string, unknown>, apiKey?: string) =>
    apiKey
      ? t.http.post(path).set('X-API-Key', apiKey).send(body)
      : t.http.post(path).set('Authorization', admin).send(body);
  const eventCount = async () => (await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM events'))[0].n;
  const enableAi = () =>
    putSettings(t, admin, {
      ai_providers: providerSettings(fakes),
      ai_provider_order: ['openai', 'anthropic', 'gemini'],
    });

  beforeAll(async () => {
    t = await startTestApp();
    admin = `Bearer ${await t.adminToken()}`;
    readKey = (await t.createApiKey({ name: 'reader', scopes: ['read:events'] })).key;
    fakes = await startAiFakes();
    cameraId = await createCamera(t, 'Porch', 'Say whether the gate is open.');
    unsubscribe = t.app.get(DomainEventBus).subscribe((m) => messages.push(m));
  });

  afterAll(async () => {
    unsubscribe?.();
    try {
      await t?.close();
    } finally {
      await stopAllFakeAiServers();
      await stopAllFakeCameras();
    }
  });

  beforeEach(() => {
    for (const fake of Object.values(fakes)) fake.reset();
  });

  describe('with AI off (the defaults)', () => {
    it('lists every provider in order with what it lacks', async () => {
      const body = (await t.http.get('/api/v1/ai/providers').set('Authorization', admin).expect(200)).body;
      expect(body).toMatchObject({
        status: 'off',
        spent_today_usd: 0,
        spent_month_usd: 0,
        daily_cost_cap_usd: null,
        monthly_cost_cap_usd: null,
        queue: { due: 0, waiting: 0, in_progress: 0 },
      });
      expect(body.status_detail).toMatch(/No AI provider is enabled/);
      expect(body.providers.map((p: { name: string }) => p.name)).toEqual(AI_PROVIDERS);
      expect(body.providers.map((p: { position: number }) => p.position)).toEqual([1, 2, 3, 4, 5, 6]);
      const byName = Object.fromEntries(body.providers.map((p: { name: string }) => [p.name, p]));
      expect(byName.openai).toMatchObject({
        enabled: false,
        configured: false,
        problem: 'no API key is configured',
        model: 'gpt-4o-mini',
        circuit_state: 'closed',
        consecutive_failures: 0,
        last_error: null,
        last_latency_ms: null,
        avg_latency_ms: null,
        local: false,
      });
      expect(byName.ollama).toMatchObject({ problem: null, configured: false, model: 'llava', local: true });
      expect(byName.openai_compatible.problem).toBe('no base URL is configured');
    });

    it('answers 409 to describe, re-analyse and refine-prompt', async () => {
      const describe = await post('/api/v1/ai/describe', {
        image_base64: RED_JPEG.toString('base64'),
      }).expect(409);
      expect(describe.body.detail).toMatch(/^AI descriptions are off/);
      // Described at ingestion, so that it does not wait for AI (and get described later in other tests).
      const event = await ingest(t, admin, cameraId, { description: 'A gate.' });
      expect((await post(`/api/v1/events/${event.id}/reanalyse`, {}).expect(409)).body.detail).toMatch(
        /^AI descriptions are off/,
      );
      await post(`/api/v1/events/${UNKNOWN_ID}/reanalyse`, {}).expect(404);
      // No rating exists yet: refine-prompt says so first.
      expect((await post('/api/v1/ai/refine-prompt', {}).expect(409)).body.detail).toMatch(
        /^No rated descriptions yet/,
      );
    });

    it('lists the capabilities of every provider', async () => {
      const body = (await t.http.get('/api/v1/ai/capabilities').set('Authorization', admin).expect(200)).body;
      expect(body.providers.map((p: { provider: string }) => p.provider)).toEqual(AI_PROVIDERS);
      const byName = Object.fromEntries(body.providers.map((p: { provider: string }) => [p.provider, p]));
      expect(byName.gemini).toMatchObject({
        vision: true,
        video: true,
        structured_output: true,
        local: false,
        requires_api_key: true,
      });
      expect(byName.ollama).toMatchObject({
        local: true,
        requires_api_key: false,
        default_model: 'llava',
        max_images: 1,
      });
      expect(byName.openai_compatible).toMatchObject({ local: false, default_model: '' });
      for (const p of body.providers) {
        expect(p.max_image_bytes).toBeGreaterThan(0);
        expect(p.max_images).toBeGreaterThan(0);
      }
      // An OpenAI-compatible server on the local network is local.
      await putSettings(t, admin, {
        ai_providers: { openai_compatible: { base_url: 'http://192.168.1.5:8000/v1' } },
      });
      const local = (await t.http.get('/api/v1/ai/capabilities').set('Authorization', admin).expect(200))
        .body;
      expect(
        local.providers.find((p: { provider: string }) => p.provider === 'openai_compatible').local,
      ).toBe(true);
      await putSettings(t, admin, { ai_providers: { openai_compatible: { base_url: null } } });
    });

    it('refuses the AI endpoints without the admin scope', async () => {
      await t.http.get('/api/v1/ai/providers').set('X-API-Key', readKey).expect(403);
      await t.http.get('/api/v1/ai/usage').set('X-API-Key', readKey).expect(403);
      await post('/api/v1/ai/describe', { image_base64: RED_JPEG.toString('base64') }, readKey).expect(403);
      await t.http.get('/api/v1/ai/capabilities').expect(401);
    });
  });

  describe('POST /ai/describe', () => {
    beforeAll(() => enableAi());

    it('describes a base64 JPEG without creating an event, and records an adhoc ledger row', async () => {
      const events = await eventCount();
      const since = new Date(Date.now() - 1);
      const body = (
        await post('/api/v1/ai/describe', { image_base64: RED_JPEG.toString('base64') }).expect(200)
      ).body;
      expect(body).toEqual({
        description: FAKE_AI_DEFAULT_ANSWER.description,
        detection_type: 'person',
        objects_detected: ['person', 'car'],
        confidence: 88,
        provider: 'openai',
        model: 'gpt-4o-mini',
        input_tokens: 1250,
        output_tokens: 64,
        tokens_used: 1314,
        cost_usd: costUsd('openai', 'gpt-4o-mini', 1250, 64),
        response_time_ms: expect.any(Number),
      });
      expect(await eventCount()).toBe(events);
      expect(await ledger(t, { since })).toEqual([
        expect.objectContaining({ provider: 'openai', purpose: 'adhoc', event_id: null, success: true }),
      ]);
      expect(openAiPrompt(fakes.openai.requests[0].body).startsWith(DEFAULT_AI_PROMPT)).toBe(true);
    });

    it('takes a PNG (data URI) and a prompt of its own, and asks only the provider named', async () => {
      const body = (
        await post('/api/v1/ai/describe', {
          image_base64: `data:image/png;base64,${PNG_1x1.toString('base64')}`,
          prompt: 'Count the cars.',
          provider: 'anthropic',
        }).expect(200)
      ).body;
      expect(body.provider).toBe('anthropic');
      expect(fakes.openai.requests).toHaveLength(0);
      const request = fakes.anthropic.requests[0].body;
      const blocks = request.messages[0].content as {
        type: string;
        text?: string;
        source?: { media_type: string };
      }[];
      expect(blocks.find((b) => b.type === 'image')?.source?.media_type).toBe('image/png');
      expect(blocks.find((b) => b.type === 'text')?.text?.startsWith('Count the cars.')).toBe(true);

      // The named provider alone: its failure is not covered by the others.
      fakes.anthropic.failNext(1, { status: 500 });
      await post('/api/v1/ai/describe', {
        image_base64: RED_JPEG.toString('base64'),
        provider: 'anthropic',
      }).expect(502);
      expect(fakes.openai.requests).toHaveLength(0);
    });

    it("describes an event's stored image without changing the event", async () => {
      const event = await ingest(t, admin, cameraId);
      const described = await waitForStatus(t, admin, event.id, 'complete');
      fakes.openai.reset();
      fakes.openai.respondWith({
        description: 'Only a gate.',
        detection_type: 'unknown',
        objects_detected: ['gate'],
        confidence: 40,
      });
      const updates = messages.filter((m) => m.type === 'event.updated').length;
      const body = (await post('/api/v1/ai/describe', { event_id: event.id }).expect(200)).body;
      expect(body).toMatchObject({ description: 'Only a gate.', provider: 'openai' });
      const prompt = openAiPrompt(fakes.openai.requests[0].body);
      expect(prompt).toContain('Camera: Porch');
      expect(prompt).toContain('Instructions for this camera: Say whether the gate is open.');
      const image = fakes.openai.requests[0].body.messages[0].content.find(
        (p: { type: string }) => p.type === 'image_url',
      );
      expect(image.image_url.url).toBe(`data:image/jpeg;base64,${RED_JPEG.toString('base64')}`);
      await sleep(200);
      expect(await getEvent(t, admin, event.id)).toEqual(described);
      expect(messages.filter((m) => m.type === 'event.updated')).toHaveLength(updates);
      const rows = await ledger(t, { eventId: event.id });
      expect(rows.map((r) => r.purpose)).toEqual(['describe', 'adhoc']);
    });

    it('answers 404, 400, 409 and 422 as documented', async () => {
      await post('/api/v1/ai/describe', { event_id: UNKNOWN_ID }).expect(404);
      await post('/api/v1/ai/describe', { camera_id: UNKNOWN_ID }).expect(404);
      const stopped = await post('/api/v1/ai/describe', { camera_id: cameraId }).expect(409);
      expect(stopped.body.detail).toMatch(/not running/);
      const [noImage] = await t.sql<{ id: string }>(
        "INSERT INTO events (camera_id, timestamp, detection_type, source_type) VALUES ($1, now(), 'motion', 'api') RETURNING id",
        [cameraId],
      );
      expect((await post('/api/v1/ai/describe', { event_id: noImage.id }).expect(400)).body.detail).toBe(
        'The event has no image to describe',
      );
      const grok = await post('/api/v1/ai/describe', {
        image_base64: RED_JPEG.toString('base64'),
        provider: 'grok',
      }).expect(409);
      expect(grok.body.detail).toBe('AI provider grok cannot be used: it is not enabled');
      await putSettings(t, admin, { ai_providers: { grok: { enabled: true } } });
      const keyless = await post('/api/v1/ai/describe', {
        image_base64: RED_JPEG.toString('base64'),
        provider: 'grok',
      }).expect(409);
      expect(keyless.body.detail).toBe('AI provider grok cannot be used: no API key is configured');
      await putSettings(t, admin, { ai_providers: { grok: { enabled: false } } });

      const invalid: [Record<string, unknown>, string][] = [
        [{}, 'body'],
        [{ image_base64: RED_JPEG.toString('base64'), event_id: UNKNOWN_ID }, 'body'],
        [{ image_base64: Buffer.from('GIF89a-not-an-image').toString('base64') }, 'body.image_base64'],
        [{ image_base64: 'not base64!' }, 'body.image_base64'],
        [{ event_id: 'nope' }, 'body.event_id'],
        [{ image_base64: RED_JPEG.toString('base64'), provider: 'skynet' }, 'body.provider'],
        [{ image_base64: RED_JPEG.toString('base64'), prompt: '' }, 'body.prompt'],
        [{ image_base64: RED_JPEG.toString('base64'), model: 'x' }, 'body.model'],
      ];
      for (const [body, field] of invalid) {
        const res = await post('/api/v1/ai/describe', body).expect(422);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
      expect(fakes.openai.requests).toHaveLength(0);
    });
  });

  describe('POST /events/{id}/reanalyse', () => {
    beforeAll(() => enableAi());

    it('queues the event (202), describes it again, counts the re-analysis and publishes event.updated', async () => {
      const event = await ingest(t, admin, cameraId);
      await waitForStatus(t, admin, event.id, 'complete');
      fakes.openai.respondWith({
        description: 'Now a cat sits on the gate.',
        detection_type: 'animal',
        objects_detected: ['cat', 'gate'],
        confidence: 77,
      });
      const from = messages.length;
      const res = await post(`/api/v1/events/${event.id}/reanalyse`, {}).expect(202);
      expect(res.body).toEqual({ event_id: event.id, status: 'queued' });
      const done = await waitForStatus(
        t,
        admin,
        event.id,
        'complete',
        15_000,
        (e) => e.reanalysis_count === 1,
      );
      expect(done).toMatchObject({
        description: 'Now a cat sits on the gate.',
        detection_type: 'animal',
        objects_detected: ['cat', 'gate'],
        ai_confidence: 77,
      });
      expect(Date.parse(done.reanalysed_at as string)).toBeGreaterThan(Date.now() - 60_000);
      const updates = messages
        .slice(from)
        .filter((m) => m.type === 'event.updated' && (m.data as { id: string }).id === event.id)
        .map((m) => (m.data as { description_status: string }).description_status);
      expect(updates).toEqual(['pending', 'complete']);
      expect((await ledger(t, { eventId: event.id })).map((r) => r.purpose)).toEqual([
        'describe',
        'reanalyse',
      ]);
    });

    it('accepts 3 requests per event per rolling hour, then 429 with Retry-After', async () => {
      const event = await ingest(t, admin, cameraId);
      await waitForStatus(t, admin, event.id, 'complete');
      for (let i = 0; i < 3; i++) await post(`/api/v1/events/${event.id}/reanalyse`, {}).expect(202);
      const limited = await post(`/api/v1/events/${event.id}/reanalyse`, {}).expect(429);
      expect(limited.body.detail).toMatch(/^At most 3 re-analyses per event per hour/);
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      // Requests older than an hour no longer count; the Retry-After follows the oldest one.
      await t.sql(
        `UPDATE reanalysis_requests SET created_at = created_at - interval '59 minutes 30 seconds'
         WHERE id = (SELECT id FROM reanalysis_requests WHERE event_id = $1 ORDER BY created_at LIMIT 1)`,
        [event.id],
      );
      const soon = await post(`/api/v1/events/${event.id}/reanalyse`, {}).expect(429);
      expect(Number(soon.headers['retry-after'])).toBeLessThanOrEqual(31);
      await t.sql(
        `UPDATE reanalysis_requests SET created_at = created_at - interval '1 minute'
         WHERE id = (SELECT id FROM reanalysis_requests WHERE event_id = $1 ORDER BY created_at LIMIT 1)`,
        [event.id],
      );
      await post(`/api/v1/events/${event.id}/reanalyse`, {}).expect(202);
      const done = await waitFor(
        'the re-analyses to finish',
        async () => {
          const e = await getEvent(t, admin, event.id);
          const [row] = await t.sql<{ due: Date | null }>(
            'SELECT description_due_at AS due FROM events WHERE id = $1',
            [event.id],
          );
          return e.description_status === 'complete' && row.due === null ? e : undefined;
        },
        15_000,
      );
      expect(done.reanalysis_count).toBeGreaterThanOrEqual(1);
      expect(done.reanalysis_count).toBeLessThanOrEqual(4);
    });

    it('answers 404, 400 and 403 as documented', async () => {
      await post(`/api/v1/events/${UNKNOWN_ID}/reanalyse`, {}).expect(404);
      await post('/api/v1/events/not-a-uuid/reanalyse', {}).expect(404);
      const [noImage] = await t.sql<{ id: string }>(
        "INSERT INTO events (camera_id, timestamp, detection_type, source_type) VALUES ($1, now(), 'motion', 'api') RETURNING id",
        [cameraId],
      );
      expect((await post(`/api/v1/events/${noImage.id}/reanalyse`, {}).expect(400)).body.detail).toBe(
        'The event has no image to re-analyse',
      );
      await post(`/api/v1/events/${noImage.id}/reanalyse`, {}, readKey).expect(403);
    });
  });

  describe('feedback and POST /ai/refine-prompt', () => {
    beforeAll(() => enableAi());

    it('stores a rating with the rated description (read:events), and validates it', async () => {
      const event = await ingest(t, admin, cameraId);
      const described = await waitForStatus(t, admin, event.id, 'complete');
      const res = await post(
        `/api/v1/events/${event.id}/feedback`,
        { rating: 'not_helpful', correction: '  It is the postman.  ' },
        readKey,
      ).expect(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        event_id: event.id,
        rating: 'not_helpful',
        correction: 'It is the postman.',
        description: described.description,
        created_at: expect.any(String),
      });
      const plain = await post(`/api/v1/events/${event.id}/feedback`, { rating: 'helpful' }).expect(201);
      expect(plain.body.correction).toBeNull();
      const rows = await t.sql(
        'SELECT rating, correction FROM event_feedback WHERE event_id = $1 ORDER BY created_at',
        [event.id],
      );
      expect(rows).toEqual([
        { rating: 'not_helpful', correction: 'It is the postman.' },
        { rating: 'helpful', correction: null },
      ]);

      await post(`/api/v1/events/${UNKNOWN_ID}/feedback`, { rating: 'helpful' }).expect(404);
      for (const body of [
        {},
        { rating: 'meh' },
        { rating: 'helpful', correction: 'x'.repeat(2001) },
        { rating: 'helpful', correction: '  ' },
      ]) {
        await post(`/api/v1/events/${event.id}/feedback`, body).expect(422);
      }
      await t.http.post(`/api/v1/events/${event.id}/feedback`).send({ rating: 'helpful' }).expect(401);
    });

    it('asks a provider for a better prompt from the ratings', async () => {
      fakes.openai.respondWith({
        text: 'Here you go.\n<prompt>\nDescribe people by their uniform.\n</prompt>\n<summary>Uniforms matter to users.</summary>',
      });
      const since = new Date(Date.now() - 1);
      const res = await post('/api/v1/ai/refine-prompt', { prompt: 'Describe the picture.' }).expect(200);
      const [{ n }] = await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM event_feedback');
      expect(res.body).toEqual({
        suggested_prompt: 'Describe people by their uniform.',
        summary: 'Uniforms matter to users.',
        feedback_used: n,
        provider: 'openai',
        model: 'gpt-4o-mini',
      });
      const request = fakes.openai.requests[0].body;
      expect(request.response_format).toBeUndefined();
      const text = openAiPrompt(request);
      expect(text).toContain('<current_prompt>\nDescribe the picture.\n</current_prompt>');
      expect(text).toContain('[NOT HELPFUL]');
      expect(text).toContain('User\'s correction: "It is the postman."');
      expect(await ledger(t, { since })).toEqual([
        expect.objectContaining({ provider: 'openai', purpose: 'refine_prompt', success: true }),
      ]);
      // Nothing was changed.
      const settings = (await t.http.get('/api/v1/system/settings').set('Authorization', admin).expect(200))
        .body;
      expect(settings.ai_prompt).toBe(DEFAULT_AI_PROMPT);
    });

    it('falls over when an answer holds no prompt, and uses the ai_prompt setting by default', async () => {
      fakes.openai.respondWith({ text: 'I think the prompt is fine.' });
      fakes.anthropic.respondWith({ text: '<prompt>Be brief.</prompt><summary>Shorter.</summary>' });
      const since = new Date(Date.now() - 1);
      const res = await post('/api/v1/ai/refine-prompt', {}).expect(200);
      expect(res.body).toMatchObject({
        suggested_prompt: 'Be brief.',
        summary: 'Shorter.',
        provider: 'anthropic',
      });
      const rows = await ledger(t, { since });
      expect(rows.map((r) => [r.provider, r.success])).toEqual([
        ['openai', false],
        ['anthropic', true],
      ]);
      expect(rows[0].error).toMatch(/^malformed: the answer has no <prompt>/);
      expect(rows[0].input_tokens).toBe(1250);
      expect(openAiPrompt(fakes.openai.requests[0].body)).toContain(
        `<current_prompt>\n${DEFAULT_AI_PROMPT}\n</current_prompt>`,
      );
    });
  });

  describeWithMedia('POST /ai/describe with a running camera', () => {
    let camera: FakeMjpegCamera;
    beforeAll(async () => {
      await enableAi();
      camera = await FakeMjpegCamera.start({ width: 320, height: 180, fps: 5, pattern: 'still' });
    });

    it("describes the camera's current snapshot", async () => {
      const created = await t.http
        .post('/api/v1/cameras')
        .set('Authorization', admin)
        .send({ name: 'Driveway', source_type: 'mjpeg', url: camera.url(), enabled: true, frame_rate: 2 })
        .expect(201);
      const id = created.body.id as string;
      await waitFor('the camera to run', async () => {
        const res = await t.http.get(`/api/v1/cameras/${id}`).set('Authorization', admin).expect(200);
        return res.body.status === 'running' ? true : undefined;
      });
      const snapshot = await waitFor('a snapshot', async () => {
        const res = await t.http.get(`/api/v1/cameras/${id}/snapshot`).set('Authorization', admin);
        return res.status === 200 ? (res.body as Buffer) : undefined;
      });
      const body = (await post('/api/v1/ai/describe', { camera_id: id }).expect(200)).body;
      expect(body.provider).toBe('openai');
      const request = fakes.openai.requests[0].body;
      expect(openAiPrompt(request)).toContain('Camera: Driveway');
      const url = request.messages[0].content.find((p: { type: string }) => p.type === 'image_url').image_url
        .url as string;
      expect(url.startsWith('data:image/jpeg;base64,/9j/')).toBe(true);
      expect(Buffer.from(url.slice('data:image/jpeg;base64,'.length), 'base64').length).toBeGreaterThan(
        snapshot.length / 4,
      );
      await t.http.post(`/api/v1/cameras/${id}/stop`).set('Authorization', admin).expect(200);
    });
  });
});
