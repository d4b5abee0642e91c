import { FakeAiServer } from '../fakes/ai-providers';
import { waitFor } from './processes';
import type { TestApp } from './test-app';

/** What the AI e2e suites share: fake providers wired into the settings, a camera, ingestion, waiting. */

/** A 16x16 red JPEG made by ffmpeg (`-f lavfi -i color=c=red:s=16x16 -frames:v 1`). */
export const RED_JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgEBAQEBAUFBQUFBQYGBgYGBgYGBgYGBgYHBwcICAgHBwcGBgcHCAgICAkJCQgICAgJCQoKCgwMCwsODg4RERT/xABMAAEBAAAAAAAAAAAAAAAAAAAABgEBAQAAAAAAAAAAAAAAAAAABgcQAQAAAAAAAAAAAAAAAAAAAAARAQAAAAAAAAAAAAAAAAAAAAD/wAARCAAQABADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLAFF/f//Z',
  'base64',
);
export const PNG_1x1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
export const UNKNOWN_ID = '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5b';

export const API_KEYS = {
  openai: 'sk-test-openai-0123456789abcdef',
  anthropic: 'sk-ant-test-0123456789abcdef',
  gemini: 'AIzaTestKey0123456789abcdefghij',
} as const;

export type FakeName = keyof typeof API_KEYS;

export interface AiFakes {
  openai: FakeAiServer;
  anthropic: FakeAiServer;
  gemini: FakeAiServer;
}

export async function startAiFakes(): Promise<AiFakes> {
  const [openai, anthropic, gemini] = await Promise.all([
    FakeAiServer.start({ kind: 'openai', apiKey: API_KEYS.openai }),
    FakeAiServer.start({ kind: 'anthropic', apiKey: API_KEYS.anthropic }),
    FakeAiServer.start({ kind: 'gemini', apiKey: API_KEYS.gemini }),
  ]);
  return { openai, anthropic, gemini };
}

/** `ai_providers` with the three fakes enabled (keys, base URLs, a short timeout); the others off. */
export function providerSettings(fakes: AiFakes, timeoutMs = 5000): Record<string, unknown> {
  const entry = (name: FakeName) => ({
    enabled: true,
    api_key: API_KEYS[name],
    base_url: fakes[name].baseUrl,
    timeout_ms: timeoutMs,
  });
  return {
    openai: entry('openai'),
    anthropic: entry('anthropic'),
    gemini: entry('gemini'),
    grok: { enabled: false },
    ollama: { enabled: false },
    openai_compatible: { enabled: false },
  };
}

export async function putSettings(t: TestApp, admin: string, body: Record<string, unknown>): Promise<void> {
  await t.http.put('/api/v1/system/settings').set('Authorization', admin).send(body).expect(200);
}

/** Inserts a camera (stopped) and returns its id. */
export async function createCamera(
  t: TestApp,
  name: string,
  promptOverride: string | null = null,
): Promise<string> {
  const rows = await t.sql<{ id: string }>(
    "INSERT INTO cameras (name, source_type, url, prompt_override) VALUES ($1, 'rtsp', 'rtsp://192.0.2.1/s', $2) RETURNING id",
    [name, promptOverride],
  );
  return rows[0].id;
}

/** POST /events with the red JPEG and no description; returns the new event. */
export async function ingest(
  t: TestApp,
  admin: string,
  cameraId: string,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown> & { id: string }> {
  const res = await t.http
    .post('/api/v1/events')
    .set('Authorization', admin)
    .send({
      camera_id: cameraId,
      detection_type: 'motion',
      image_base64: RED_JPEG.toString('base64'),
      ...extra,
    })
    .expect(201);
  return res.body;
}

export type EventRecord = Record<string, unknown> & { id: string; description_status: string };

export async function getEvent(t: TestApp, admin: string, id: string): Promise<EventRecord> {
  return (await t.http.get(`/api/v1/events/${id}`).set('Authorization', admin).expect(200))
    .body as EventRecord;
}

/** Waits until the event's description_status is `status` (and `also` holds) and returns the record. */
export function waitForStatus(
  t: TestApp,
  admin: string,
  id: string,
  status: string,
  timeoutMs = 15_000,
  also: (event: EventRecord) => boolean = () => true,
): Promise<EventRecord> {
  return waitFor(
    `event ${id} to be ${status}`,
    async () => {
      const event = await getEvent(t, admin, id);
      return event.description_status === status && also(event) ? event : undefined;
    },
    timeoutMs,
    100,
  );
}

export interface LedgerRow {
  provider: string;
  model: string;
  purpose: string;
  event_id: string | null;
  success: boolean;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  latency_ms: number;
  context_events: number;
  context_tokens: number;
  created_at: Date;
}

/** Ledger rows, oldest first (of one event, or since a time). */
export async function ledger(
  t: TestApp,
  filter: { eventId?: string; since?: Date } = {},
): Promise<LedgerRow[]> {
  const rows = await t.sql<LedgerRow & { cost_usd: string }>(
    `SELECT provider, model, purpose, event_id, success, error, input_tokens, output_tokens, cost_usd, latency_ms,
            context_events, context_tokens, created_at
     FROM ai_calls
     WHERE ($1::uuid IS NULL OR event_id = $1) AND ($2::timestamptz IS NULL OR created_at >= $2)
     ORDER BY created_at, id`,
    [filter.eventId ?? null, filter.since ?? null],
  );
  return rows.map((r) => ({ ...r, cost_usd: Number(r.cost_usd) }));
}

/** The text prompt of an OpenAI chat-completions request the fake received. */
export function openAiPrompt(body: { messages: { content: { type: string; text?: string }[] }[] }): string {
  return body.messages[0].content.find((p) => p.type === 'text')?.text ?? '';
}
