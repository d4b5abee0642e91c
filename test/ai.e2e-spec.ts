import { AiService } from '../src/modules/ai/ai.service';
import { DEFAULT_CIRCUIT_OPTIONS } from '../src/modules/ai/circuit-breaker';
import { DescribeQueueService } from '../src/modules/ai/describe-queue.service';
import { CONTEXT_HEADER } from '../src/modules/ai/prompt-builder';
import { PromptService } from '../src/modules/ai/prompt.service';
import { costUsd } from '../src/modules/ai/providers/pricing';
import { DEFAULT_QUEUE_TIMING } from '../src/modules/ai/queue-timing';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainMessage } from '../src/modules/realtime/domain-events';
import { DEFAULT_AI_PROMPT } from '../src/modules/settings/settings.registry';
import { FAKE_AI_DEFAULT_ANSWER, stopAllFakeAiServers } from './fakes/ai-providers';
import {
  AiFakes,
  API_KEYS,
  createCamera,
  getEvent,
  ingest,
  ledger,
  openAiPrompt,
  providerSettings,
  putSettings,
  RED_JPEG,
  startAiFakes,
  waitForStatus,
} from './support/ai-setup';
import { sleep, waitFor } from './support/processes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The AI description pipeline end to end, against loopback fakes of the OpenAI, Anthropic and Gemini APIs
 * driven through the real SDK clients: events described in the background (event.updated, fields, ledger),
 * the fallback chain on errors, timeouts and malformed answers, circuit breakers opening and recovering,
 * retries of failed descriptions, cost caps, usage totals and the prompt context.
 */

const DEFAULT_COST = costUsd('openai', 'gpt-4o-mini', 1250, 64);

describe('AI descriptions (e2e)', () => {
  let t: TestApp;
  let admin: string;
  let fakes: AiFakes;
  let cameraId: string;
  let ai: AiService;
  let queue: DescribeQueueService;
  const messages: DomainMessage[] = [];
  let unsubscribe: () => void;

  const settings = (body: Record<string, unknown>) => putSettings(t, admin, body);
  const dueAt = async (id: string) =>
    (
      await t.sql<{ due: Date | null; attempts: number }>(
        'SELECT description_due_at AS due, description_attempts AS attempts FROM events WHERE id = $1',
        [id],
      )
    )[0];
  const providers = async () =>
    (await t.http.get('/api/v1/ai/providers').set('Authorization', admin).expect(200)).body;
  const providerState = async (name: string) =>
    (await providers()).providers.find((p: { name: string }) => p.name === name);
  const describe200 = async (body: Record<string, unknown> = {}) =>
    (
      await t.http
        .post('/api/v1/ai/describe')
        .set('Authorization', admin)
        .send({ image_base64: RED_JPEG.toString('base64'), ...body })
        .expect(200)
    ).body;

  beforeAll(async () => {
    t = await startTestApp();
    admin = `Bearer ${await t.adminToken()}`;
    fakes = await startAiFakes();
    cameraId = await createCamera(t, 'Front door', 'Mention the parcel box.');
    ai = t.app.get(AiService);
    queue = t.app.get(DescribeQueueService);
    unsubscribe = t.app.get(DomainEventBus).subscribe((m) => messages.push(m));
  });

  afterAll(async () => {
    unsubscribe?.();
    try {
      await t?.close();
    } finally {
      await stopAllFakeAiServers();
    }
  });

  beforeEach(async () => {
    for (const fake of Object.values(fakes)) fake.reset();
    ai.configureCircuits(DEFAULT_CIRCUIT_OPTIONS);
    queue.configureTiming(DEFAULT_QUEUE_TIMING);
    await settings({
      ai_providers: providerSettings(fakes),
      ai_provider_order: ['openai', 'anthropic', 'gemini'],
      ai_daily_cost_cap_usd: null,
      ai_monthly_cost_cap_usd: null,
      ai_context_enabled: false,
      ai_prompt: DEFAULT_AI_PROMPT,
      timezone: 'Europe/Berlin',
    });
  });

  it('leaves events pending and due while AI is off, and describes them once a provider is enabled', async () => {
    await settings({
      ai_providers: { openai: { enabled: false }, anthropic: { enabled: false }, gemini: { enabled: false } },
    });
    expect((await providers()).status).toBe('off');
    const event = await ingest(t, admin, cameraId);
    expect(event.description_status).toBe('pending');
    await sleep(1000);
    expect((await getEvent(t, admin, event.id)).description_status).toBe('pending');
    const row = await dueAt(event.id);
    expect(row.due).not.toBeNull();
    expect(row.due!.getTime()).toBeLessThanOrEqual(Date.now());
    expect(fakes.openai.requests).toHaveLength(0);
    expect((await providers()).queue.due).toBeGreaterThanOrEqual(1);

    await settings({ ai_providers: { gemini: { enabled: true } } });
    const done = await waitForStatus(t, admin, event.id, 'complete');
    expect(done.provider_used).toBe('gemini');
    expect(await dueAt(event.id)).toEqual({ due: null, attempts: 0 });
  });

  it('describes an ingested event: the answer, tokens, cost and time in the record, event.updated and one ledger row', async () => {
    const event = await ingest(t, admin, cameraId);
    const done = await waitForStatus(t, admin, event.id, 'complete');
    expect(done).toMatchObject({
      description: FAKE_AI_DEFAULT_ANSWER.description,
      detection_type: 'person',
      objects_detected: ['person', 'car'],
      ai_confidence: 88,
      provider_used: 'openai',
      model_used: 'gpt-4o-mini',
      tokens_used: 1250 + 64,
      ai_cost_usd: DEFAULT_COST,
      reanalysis_count: 0,
      reanalysed_at: null,
    });
    expect(done.response_time_ms).toEqual(expect.any(Number));
    const updated = messages.filter(
      (m) => m.type === 'event.updated' && (m.data as { id: string }).id === event.id,
    );
    expect(updated.at(-1)?.data).toEqual(done);

    const rows = await ledger(t, { eventId: event.id });
    expect(rows).toEqual([
      expect.objectContaining({
        provider: 'openai',
        model: 'gpt-4o-mini',
        purpose: 'describe',
        success: true,
        error: null,
        input_tokens: 1250,
        output_tokens: 64,
        cost_usd: DEFAULT_COST,
        context_events: 0,
        context_tokens: 0,
      }),
    ]);
    expect(rows[0].latency_ms).toBe(done.response_time_ms);

    // What the provider was sent: the key, the image, and the prompt with camera, instructions and local time.
    expect(fakes.openai.requests).toHaveLength(1);
    const request = fakes.openai.requests[0];
    expect(request.headers.authorization).toBe(`Bearer ${API_KEYS.openai}`);
    expect(request.body.model).toBe('gpt-4o-mini');
    const image = request.body.messages[0].content.find((p: { type: string }) => p.type === 'image_url');
    expect(image.image_url.url).toBe(`data:image/jpeg;base64,${RED_JPEG.toString('base64')}`);
    const prompt = openAiPrompt(request.body);
    expect(prompt.startsWith(DEFAULT_AI_PROMPT)).toBe(true);
    expect(prompt).toContain('Instructions for this camera: Mention the parcel box.');
    expect(prompt).toContain('Camera: Front door');
    expect(prompt).toMatch(/Local time: \w+day, \d{1,2} \w+ \d{4}, \d{2}:\d{2} \(Europe\/Berlin\)/);
    expect(prompt).not.toContain(CONTEXT_HEADER);
  });

  it.each([
    ['anthropic', 'claude-haiku-4-5', { input: 900, output: 41 }],
    ['gemini', 'gemini-2.5-flash', { input: 700, output: 33 }],
  ] as const)('describes with %s alone: its request shape, answer and usage', async (name, model, usage) => {
    fakes[name].setUsage(usage);
    fakes[name].respondWith({
      description: 'A fox crosses the lawn.',
      detection_type: 'animal',
      objects_detected: ['fox'],
      confidence: 71.6,
    });
    await settings({ ai_provider_order: [name] });
    const event = await ingest(t, admin, cameraId);
    const done = await waitForStatus(t, admin, event.id, 'complete');
    expect(done).toMatchObject({
      description: 'A fox crosses the lawn.',
      detection_type: 'animal',
      objects_detected: ['fox'],
      ai_confidence: 72,
      provider_used: name,
      model_used: model,
      tokens_used: usage.input + usage.output,
      ai_cost_usd: costUsd(name, model, usage.input, usage.output),
    });
    expect(fakes.openai.requests).toHaveLength(0);
    const request = fakes[name].requests[0];
    if (name === 'anthropic') {
      const key = request.headers['x-api-key'] ?? request.headers.authorization?.replace(/^Bearer /, '');
      expect(key).toBe(API_KEYS.anthropic);
      const block = request.body.messages[0].content.find((b: { type: string }) => b.type === 'image');
      expect(block.source).toEqual({
        type: 'base64',
        media_type: 'image/jpeg',
        data: RED_JPEG.toString('base64'),
      });
    } else {
      expect(request.headers['x-goog-api-key'] ?? request.query.key).toBe(API_KEYS.gemini);
      expect(request.path).toBe(`/v1beta/models/${model}:generateContent`);
      const part = request.body.contents[0].parts.find((p: { inlineData?: unknown }) => p.inlineData);
      expect(part.inlineData).toEqual({ mimeType: 'image/jpeg', data: RED_JPEG.toString('base64') });
    }
  });

  it.each([
    ['a server error', { status: 500 }, 'server'],
    ['a rate limit', { status: 429 }, 'rate_limited'],
    ['a timeout', 'hang', 'timeout'],
    ['a malformed answer', 'malformed', 'malformed'],
  ] as const)('falls over to the next provider on %s', async (_name, failure, kind) => {
    if (failure === 'hang') await settings({ ai_providers: { openai: { timeout_ms: 1000 } } });
    fakes.openai.failNext(1, failure);
    const event = await ingest(t, admin, cameraId);
    const done = await waitForStatus(t, admin, event.id, 'complete');
    expect(done.provider_used).toBe('anthropic');
    const rows = await ledger(t, { eventId: event.id });
    expect(rows.map((r) => [r.provider, r.success])).toEqual([
      ['openai', false],
      ['anthropic', true],
    ]);
    expect(rows[0].error?.startsWith(`${kind}:`)).toBe(true);
    expect(rows[0].error).not.toContain(API_KEYS.openai);
    if (failure === 'hang') {
      expect(rows[0].latency_ms).toBeGreaterThanOrEqual(950);
      expect(rows[0].latency_ms).toBeLessThan(3000);
    }
    expect((await providerState('openai')).last_error).toBe(rows[0].error);
  });

  it('never writes an API key into the ledger when a provider refuses it', async () => {
    await settings({ ai_providers: { openai: { api_key: 'sk-wrong-key-abcdefghijklmnop' } } });
    const event = await ingest(t, admin, cameraId);
    await waitForStatus(t, admin, event.id, 'complete');
    const [failed] = await ledger(t, { eventId: event.id });
    expect(failed).toMatchObject({ provider: 'openai', success: false });
    expect(failed.error?.startsWith('auth:')).toBe(true);
    expect(failed.error).not.toContain('sk-wrong-key-abcdefghijklmnop');
  });

  it('opens a circuit after 3 consecutive failures, skips the provider, and closes it after a successful probe', async () => {
    ai.configureCircuits({ openMs: 4000 });
    fakes.openai.failNext(3, { status: 500 });
    for (let i = 0; i < 3; i++) expect((await describe200()).provider).toBe('anthropic');
    const open = await providerState('openai');
    expect(open).toMatchObject({ circuit_state: 'open', consecutive_failures: 3 });
    expect(open.circuit_retry_at).not.toBeNull();
    expect(open.last_error).toMatch(/^server:/);
    expect((await providers()).status).toBe('active');

    // Open: openai is not even asked.
    expect((await describe200()).provider).toBe('anthropic');
    expect(fakes.openai.requests).toHaveLength(3);
    const event = await ingest(t, admin, cameraId);
    expect((await waitForStatus(t, admin, event.id, 'complete')).provider_used).toBe('anthropic');
    expect(fakes.openai.requests).toHaveLength(3);

    // After the open time one probe goes through; it succeeds and the circuit closes.
    await waitFor(
      'the circuit to half-open',
      async () => (await providerState('openai')).circuit_state === 'half_open',
      8000,
    );
    expect((await describe200()).provider).toBe('openai');
    expect(await providerState('openai')).toMatchObject({ circuit_state: 'closed', consecutive_failures: 0 });
  });

  it('re-opens a circuit when its probe fails', async () => {
    ai.configureCircuits({ openMs: 3000 });
    fakes.openai.failNext(4, { status: 502 });
    for (let i = 0; i < 3; i++) await describe200();
    await waitFor(
      'the circuit to half-open',
      async () => (await providerState('openai')).circuit_state === 'half_open',
      6000,
    );
    expect((await describe200()).provider).toBe('anthropic');
    expect(fakes.openai.requests).toHaveLength(4);
    expect((await providerState('openai')).circuit_state).toBe('open');
  });

  it('waits while every circuit is open, then describes once one half-opens', async () => {
    ai.configureCircuits({ openMs: 4000, failureThreshold: 1 });
    await settings({ ai_provider_order: ['openai'] });
    fakes.openai.failNext(1, { status: 500 });
    await t.http
      .post('/api/v1/ai/describe')
      .set('Authorization', admin)
      .send({ image_base64: RED_JPEG.toString('base64') })
      .expect(502);
    const refused = await t.http
      .post('/api/v1/ai/describe')
      .set('Authorization', admin)
      .send({ image_base64: RED_JPEG.toString('base64') })
      .expect(503);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await providers()).status).toBe('waiting');
    const event = await ingest(t, admin, cameraId);
    // Nothing is claimed (no attempt counted) while the only circuit is open.
    await sleep(300);
    expect((await getEvent(t, admin, event.id)).description_status).toBe('pending');
    expect((await dueAt(event.id)).attempts).toBe(0);
    const done = await waitForStatus(t, admin, event.id, 'complete', 15_000);
    expect(done.provider_used).toBe('openai');
  });

  it('marks an event failed when every provider fails, retries it later, and describes it', async () => {
    queue.configureTiming({ retryBaseMs: 3000 });
    fakes.openai.failNext(1, { status: 500 });
    fakes.anthropic.failNext(1, 'malformed');
    fakes.gemini.failNext(1, { status: 503 });
    const event = await ingest(t, admin, cameraId);
    const failed = await waitForStatus(t, admin, event.id, 'failed');
    expect(failed.description).toBeNull();
    const waiting = await dueAt(event.id);
    expect(waiting.attempts).toBe(1);
    expect(waiting.due!.getTime()).toBeGreaterThan(Date.now() - 200);
    expect(
      messages.some(
        (m) =>
          m.type === 'event.updated' &&
          (m.data as { id: string; description_status: string }).id === event.id &&
          (m.data as { description_status: string }).description_status === 'failed',
      ),
    ).toBe(true);
    const failures = await ledger(t, { eventId: event.id });
    expect(failures.map((r) => [r.provider, r.success])).toEqual([
      ['openai', false],
      ['anthropic', false],
      ['gemini', false],
    ]);

    const done = await waitForStatus(t, admin, event.id, 'complete', 15_000);
    expect(done.provider_used).toBe('openai');
    expect(await dueAt(event.id)).toEqual({ due: null, attempts: 0 });
    expect((await ledger(t, { eventId: event.id })).map((r) => r.success)).toEqual([
      false,
      false,
      false,
      true,
    ]);
  });

  it('pauses at the daily cap (queue waits, /ai/describe answers 429) and resumes when the cap is raised', async () => {
    // Make sure something was spent today, then cap just above it: one more call reaches the cap.
    await describe200();
    const spent = (await providers()).spent_today_usd as number;
    expect(spent).toBeGreaterThan(0);
    await settings({ ai_daily_cost_cap_usd: Math.round((spent + DEFAULT_COST / 2) * 1e6) / 1e6 });
    expect((await providers()).status).toBe('active');
    await describe200();

    const state = await providers();
    expect(state.status).toBe('paused');
    expect(state.status_detail).toContain('daily cost cap');
    const refused = await t.http
      .post('/api/v1/ai/describe')
      .set('Authorization', admin)
      .send({ image_base64: RED_JPEG.toString('base64') })
      .expect(429);
    expect(refused.body.detail).toMatch(/^AI is paused: .* reached the daily cost cap/);
    const retryAfter = Number(refused.headers['retry-after']);
    const nextDay = new Date();
    nextDay.setUTCHours(24, 0, 0, 0);
    expect(Math.abs(retryAfter - (nextDay.getTime() - Date.now()) / 1000)).toBeLessThan(5);

    const requests = fakes.openai.requests.length;
    const event = await ingest(t, admin, cameraId);
    await sleep(1000);
    expect((await getEvent(t, admin, event.id)).description_status).toBe('pending');
    expect(fakes.openai.requests).toHaveLength(requests);
    expect((await dueAt(event.id)).attempts).toBe(0);

    // A monthly cap of 0 pauses as well (until the month ends).
    await settings({ ai_daily_cost_cap_usd: null, ai_monthly_cost_cap_usd: 0 });
    expect((await providers()).status_detail).toContain('monthly cost cap');
    expect((await getEvent(t, admin, event.id)).description_status).toBe('pending');

    await settings({ ai_monthly_cost_cap_usd: null });
    expect((await waitForStatus(t, admin, event.id, 'complete')).provider_used).toBe('openai');
  });

  it('counts every call in /ai/usage: totals, per provider and per day match the calls made', async () => {
    const since = new Date(Date.now() - 1);
    fakes.openai.setUsage({ input: 1000, output: 10 });
    fakes.anthropic.setUsage({ input: 2000, output: 20 });
    fakes.gemini.setUsage({ input: 3000, output: 30 });
    fakes.openai.failNext(1, { status: 500 });
    expect((await describe200()).provider).toBe('anthropic');
    expect((await describe200({ provider: 'gemini' })).provider).toBe('gemini');
    expect((await describe200()).provider).toBe('openai');

    const expected = [
      costUsd('anthropic', 'claude-haiku-4-5', 2000, 20),
      costUsd('gemini', 'gemini-2.5-flash', 3000, 30),
      costUsd('openai', 'gpt-4o-mini', 1000, 10),
    ];
    const usage = (
      await t.http
        .get(`/api/v1/ai/usage?start=${since.toISOString()}`)
        .set('Authorization', admin)
        .expect(200)
    ).body;
    expect(usage.totals).toMatchObject({
      calls: 4,
      successes: 3,
      failures: 1,
      input_tokens: 6000,
      output_tokens: 60,
      tokens_used: 6060,
    });
    expect(usage.totals.cost_usd).toBeCloseTo(
      expected.reduce((a, b) => a + b, 0),
      6,
    );
    expect(
      usage.by_provider.map((p: { provider: string; calls: number; failures: number }) => [
        p.provider,
        p.calls,
        p.failures,
      ]),
    ).toEqual([
      ['openai', 2, 1],
      ['anthropic', 1, 0],
      ['gemini', 1, 0],
    ]);
    const today = new Date().toISOString().slice(0, 10);
    expect(usage.by_day).toEqual([{ ...usage.totals, date: today }]);

    // The default range (30 days) agrees with the ledger as a whole.
    const all = (await t.http.get('/api/v1/ai/usage').set('Authorization', admin).expect(200)).body;
    const [sums] = await t.sql<{ calls: number; failures: number; input: number; cost: number }>(
      `SELECT count(*)::int AS calls, (count(*) FILTER (WHERE NOT success))::int AS failures,
              sum(input_tokens)::int AS input, sum(cost_usd)::float8 AS cost FROM ai_calls`,
    );
    expect(all.totals).toMatchObject({
      calls: sums.calls,
      failures: sums.failures,
      input_tokens: sums.input,
    });
    expect(all.totals.cost_usd).toBeCloseTo(sums.cost, 6);
    expect(all.by_provider.reduce((n: number, p: { calls: number }) => n + p.calls, 0)).toBe(sums.calls);

    // Dates, ranges and their validation.
    const day = (
      await t.http.get(`/api/v1/ai/usage?start=${today}&end=${today}`).set('Authorization', admin).expect(200)
    ).body;
    expect(day.start).toBe(`${today}T00:00:00.000Z`);
    expect(day.end).toBe(`${today}T23:59:59.999Z`);
    expect(day.totals.calls).toBeGreaterThanOrEqual(4);
    const empty = (
      await t.http
        .get('/api/v1/ai/usage?start=2001-01-01&end=2001-01-31')
        .set('Authorization', admin)
        .expect(200)
    ).body;
    expect(empty).toMatchObject({
      totals: { calls: 0, cost_usd: 0, avg_latency_ms: null },
      by_provider: [],
      by_day: [],
    });
    for (const query of [
      'start=2026-02-30',
      'start=yesterday',
      'start=2026-11-02&end=2026-11-01',
      'days=3',
    ]) {
      await t.http.get(`/api/v1/ai/usage?${query}`).set('Authorization', admin).expect(422);
    }
  });

  it("adds the camera's recent described events to the prompt and reports context metrics", async () => {
    await settings({ ai_context_enabled: true });
    const garage = await createCamera(t, 'Garage');
    const metrics = async () =>
      (await t.http.get('/api/v1/ai/context-metrics').set('Authorization', admin).expect(200)).body;
    const before = await metrics();

    fakes.openai.respondWith({
      description: 'A red car parks in front of the garage.',
      detection_type: 'vehicle',
      objects_detected: ['car'],
      confidence: 90,
    });
    const first = await ingest(t, admin, garage);
    await waitForStatus(t, admin, first.id, 'complete');
    fakes.openai.respondWith(FAKE_AI_DEFAULT_ANSWER);
    const second = await ingest(t, admin, garage);
    await waitForStatus(t, admin, second.id, 'complete');

    const [firstRow] = await ledger(t, { eventId: first.id });
    const [secondRow] = await ledger(t, { eventId: second.id });
    expect(firstRow).toMatchObject({ context_events: 0, context_tokens: 0 });
    expect(secondRow.context_events).toBe(1);
    const prompt = openAiPrompt(fakes.openai.requests.at(-1)!.body);
    // The context is the last section of our prompt (the provider client may append its own instructions).
    const section = prompt.slice(prompt.indexOf(CONTEXT_HEADER)).split('\n\n')[0];
    expect(section).toMatch(/^.*\n\d{2}:\d{2} vehicle: A red car parks in front of the garage\.$/);
    expect(secondRow.context_tokens).toBe(Math.ceil(section.length / 4));

    const after = await metrics();
    expect(after.context_enabled).toBe(true);
    expect(after.requests).toBe(before.requests + 2);
    expect(after.requests_with_context).toBe(before.requests_with_context + 1);
    expect(after.avg_context_events).toBeGreaterThan(0);
    expect(after.avg_context_tokens).toBeGreaterThan(0);
    expect(after.cache_misses).toBeGreaterThanOrEqual(before.cache_misses + 2);

    // A second prompt for the same camera before any new description is served from the cache.
    const prompts = t.app.get(PromptService);
    const subject = { cameraId: garage, cameraName: 'Garage', time: new Date(), withContext: true };
    await prompts.build(subject);
    const built = await prompts.build(subject);
    expect(built.contextEvents).toBe(2);
    const cached = await metrics();
    expect(cached.cache_hits).toBeGreaterThanOrEqual(after.cache_hits + 1);
    expect(cached.cache_hits + cached.cache_misses).toBe(after.cache_hits + after.cache_misses + 2);
    expect(after.latency_added_ms === null || typeof after.latency_added_ms === 'number').toBe(true);

    // With the setting off, no context is added.
    await settings({ ai_context_enabled: false });
    const third = await ingest(t, admin, garage);
    await waitForStatus(t, admin, third.id, 'complete');
    expect((await ledger(t, { eventId: third.id }))[0].context_events).toBe(0);
    expect(openAiPrompt(fakes.openai.requests.at(-1)!.body)).not.toContain(CONTEXT_HEADER);
  });
});
