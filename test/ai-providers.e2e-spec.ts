import { AI_PROVIDER_NAMES, type AiProviderName } from '../src/modules/settings/settings.registry';
import {
  VISION_ANSWER_SCHEMA_NAME,
  VISION_ANSWER_TOOL_NAME,
} from '../src/modules/ai/providers/answer-schema';
import { ProviderErrorWithUsage } from '../src/modules/ai/providers/provider-errors';
import { createProvider, PROVIDER_DEFAULTS } from '../src/modules/ai/providers/provider-factory';
import {
  ProviderError,
  type ProviderConfig,
  type VisionAnswer,
  type VisionRequest,
} from '../src/modules/ai/providers/vision-provider';
import {
  FAKE_AI_DEFAULT_ANSWER,
  FakeAiServer,
  stopAllFakeAiServers,
  type FakeAiKind,
} from './fakes/ai-providers';
import { freePort } from './fakes/misc-servers';

// The provider clients with the official SDKs, against loopback fakes of the three APIs. No app, no database.

// A 1x1 JPEG and PNG (the fakes check the magic bytes like the real APIs check the image).
const JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////' +
    '////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const PROMPT = 'Describe what happens at the front door camera at 14:05.';
const KEYS: Record<FakeAiKind, string> = {
  openai: 'sk-test-Secret0123456789abcdefghij',
  anthropic: 'sk-ant-test-Secret0123456789abcdefghij',
  gemini: 'AIzaTestSecret0123456789abcdefghijklmno',
};

const ANSWER: VisionAnswer = {
  description: 'A delivery driver leaves a parcel on the doorstep and walks back to a white van.',
  detection_type: 'package',
  objects_detected: ['person', 'package', 'van'],
  confidence: 91,
};

function visionRequest(overrides: Partial<VisionRequest> = {}): VisionRequest {
  return {
    image: JPEG,
    mimeType: 'image/jpeg',
    prompt: PROMPT,
    structured: true,
    model: '',
    timeoutMs: 5000,
    ...overrides,
  };
}

function providerConfig(
  name: AiProviderName,
  fake: FakeAiServer | null,
  overrides: Partial<ProviderConfig> = {},
) {
  const kind = PROVIDER_DEFAULTS[name].protocol;
  return {
    name,
    apiKey: KEYS[kind],
    model: '',
    baseUrl: fake?.baseUrl ?? null,
    timeoutMs: 5000,
    ...overrides,
  } satisfies ProviderConfig;
}

/** The ProviderError a call fails with (fails the test when it succeeds or throws anything else). */
async function failureOf(call: Promise<unknown>): Promise<ProviderError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected the call to fail with a ProviderError');
}

/** An error body in the API's shape that repeats the key, as real APIs do (masked or not). */
function errorBodyWithKey(kind: FakeAiKind, status: number, key: string): unknown {
  const message = `Incorrect API key provided: ${key}`;
  if (kind === 'openai')
    return { error: { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
  if (kind === 'anthropic') return { type: 'error', error: { type: 'authentication_error', message } };
  return { error: { code: status, message, status: 'UNAUTHENTICATED' } };
}

afterAll(async () => {
  await stopAllFakeAiServers();
});

describe('OpenAI provider (openai SDK) against the fake chat-completions API', () => {
  let fake: FakeAiServer;

  beforeAll(async () => {
    fake = await FakeAiServer.start({ kind: 'openai', apiKey: KEYS.openai });
  });
  beforeEach(() => fake.reset());

  it('sends the model, prompt, image as a data URI, a strict json_schema and the key, and parses the answer and usage', async () => {
    fake.respondWith(ANSWER);
    fake.setUsage({ input: 1402, output: 57 });
    const provider = createProvider(providerConfig('openai', fake));

    const result = await provider.describe(visionRequest());

    expect(result.answer).toEqual(ANSWER);
    expect(JSON.parse(result.text)).toEqual(ANSWER);
    expect(result).toMatchObject({ model: 'gpt-4o-mini', inputTokens: 1402, outputTokens: 57 });
    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    expect(sent.body.model).toBe('gpt-4o-mini');
    expect(sent.body.stream).toBeFalsy();
    const content = sent.body.messages[0].content;
    expect(content).toContainEqual({
      type: 'image_url',
      image_url: { url: `data:image/jpeg;base64,${JPEG.toString('base64')}` },
    });
    expect(content.find((p: { type: string }) => p.type === 'text').text).toContain(PROMPT);
    expect(sent.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: VISION_ANSWER_SCHEMA_NAME, strict: true },
    });
    const schema = sent.body.response_format.json_schema.schema;
    expect(schema.required).toEqual(['description', 'detection_type', 'objects_detected', 'confidence']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.detection_type.enum).toContain('license_plate');
    expect(sent.body.max_completion_tokens).toBeGreaterThan(0);
  });

  it('uses the configured model, and the request model over it', async () => {
    const provider = createProvider(providerConfig('openai', fake, { model: 'gpt-4.1-mini' }));
    await provider.describe(visionRequest());
    await provider.describe(visionRequest({ model: 'gpt-4o' }));
    expect(fake.requests.map((r) => r.body.model)).toEqual(['gpt-4.1-mini', 'gpt-4o']);
  });

  it('sends a PNG with its own media type', async () => {
    const provider = createProvider(providerConfig('openai', fake));
    await provider.describe(visionRequest({ image: PNG, mimeType: 'image/png' }));
    expect(fake.requests[0].body.messages[0].content).toContainEqual({
      type: 'image_url',
      image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` },
    });
  });

  it('asks for free text without response_format when structured is false', async () => {
    fake.respondWith({ text: 'Rate the prompt: it is fine.' });
    const provider = createProvider(providerConfig('openai', fake));
    const result = await provider.describe(visionRequest({ structured: false }));
    expect(result).toMatchObject({ answer: null, text: 'Rate the prompt: it is fine.' });
    expect(fake.requests[0].body.response_format).toBeUndefined();
  });

  it('normalises the answer: trimmed description, lower-case objects and type, rounded confidence', async () => {
    fake.respondWith({
      text: JSON.stringify({
        description: '  A dog runs across the lawn. ',
        detection_type: 'Animal',
        objects_detected: ['Dog', 'dog', ' lawn '],
        confidence: 72.6,
      }),
    });
    const result = await createProvider(providerConfig('openai', fake)).describe(visionRequest());
    expect(result.answer).toEqual({
      description: 'A dog runs across the lawn.',
      detection_type: 'animal',
      objects_detected: ['dog', 'lawn'],
      confidence: 73,
    });
  });

  it('does not fall back to json_object on a 400 from OpenAI itself (bad_request, one request)', async () => {
    fake.failNext(1, { status: 400 });
    const error = await failureOf(createProvider(providerConfig('openai', fake)).describe(visionRequest()));
    expect(error).toMatchObject({ provider: 'openai', kind: 'bad_request', status: 400 });
    expect(fake.requests).toHaveLength(1);
  });

  it('is not_configured without an API key and sends nothing', async () => {
    const provider = createProvider(providerConfig('openai', fake, { apiKey: null }));
    const error = await failureOf(provider.describe(visionRequest()));
    expect(error.kind).toBe('not_configured');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('OpenAI-compatible providers (grok, ollama, openai_compatible) through the OpenAI fake', () => {
  let keyed: FakeAiServer;
  let open: FakeAiServer;

  beforeAll(async () => {
    keyed = await FakeAiServer.start({ kind: 'openai', apiKey: KEYS.openai });
    open = await FakeAiServer.start({ kind: 'openai' });
  });
  beforeEach(() => {
    keyed.reset();
    open.reset();
  });

  it('grok: xAI base URL by default, the key as Bearer and its default model', async () => {
    expect(PROVIDER_DEFAULTS.grok.baseUrl).toBe('https://api.x.ai/v1');
    keyed.respondWith(ANSWER);
    const result = await createProvider(providerConfig('grok', keyed)).describe(visionRequest());
    expect(result.answer).toEqual(ANSWER);
    expect(keyed.requests[0].headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    expect(keyed.requests[0].body.model).toBe(PROVIDER_DEFAULTS.grok.defaultModel);
    expect(keyed.requests[0].body.response_format.type).toBe('json_schema');
  });

  it('grok without a key is not_configured', async () => {
    const error = await failureOf(
      createProvider(providerConfig('grok', keyed, { apiKey: '' })).describe(visionRequest()),
    );
    expect(error.kind).toBe('not_configured');
  });

  it('ollama: no key, no Authorization header, and /v1 added to a bare server URL', async () => {
    expect(PROVIDER_DEFAULTS.ollama.baseUrl).toBe('http://localhost:11434/v1');
    const server = `http://127.0.0.1:${open.port}`;
    const provider = createProvider(providerConfig('ollama', null, { apiKey: null, baseUrl: server }));
    expect(provider.capabilities.local).toBe(true);

    const result = await provider.describe(visionRequest());

    expect(result.answer).toEqual(FAKE_AI_DEFAULT_ANSWER);
    expect(open.requests[0].path).toBe('/v1/chat/completions');
    expect(open.requests[0].headers.authorization).toBeUndefined();
    expect(open.requests[0].body.model).toBe('llava');
    expect(open.requests[0].body.max_tokens).toBeGreaterThan(0);
  });

  it('ollama against a server that wants a key gets 401 (auth): the fake checks', async () => {
    const error = await failureOf(
      createProvider(providerConfig('ollama', keyed, { apiKey: null })).describe(visionRequest()),
    );
    expect(error).toMatchObject({ kind: 'auth', status: 401 });
    expect(keyed.requests[0].headers.authorization).toBeUndefined();
  });

  it('openai_compatible: the configured base URL, key optional, model required', async () => {
    const withKey = createProvider(providerConfig('openai_compatible', keyed, { model: 'qwen2.5-vl' }));
    await withKey.describe(visionRequest());
    expect(keyed.requests[0].headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    expect(keyed.requests[0].body.model).toBe('qwen2.5-vl');

    const keyless = createProvider(
      providerConfig('openai_compatible', open, { apiKey: null, model: 'llava:13b' }),
    );
    expect((await keyless.describe(visionRequest())).answer).toEqual(FAKE_AI_DEFAULT_ANSWER);
    expect(open.requests[0].headers.authorization).toBeUndefined();
    expect(keyless.capabilities.local).toBe(true);

    const noModel = createProvider(providerConfig('openai_compatible', open, { apiKey: null }));
    expect((await failureOf(noModel.describe(visionRequest()))).kind).toBe('not_configured');
    const noUrl = createProvider(providerConfig('openai_compatible', null, { model: 'x' }));
    expect((await failureOf(noUrl.describe(visionRequest()))).kind).toBe('not_configured');
  });

  it('a local server that rejects json_schema gets one json_object retry, then json_object from then on', async () => {
    open.failNext(1, {
      status: 400,
      body: { error: { message: "response_format type 'json_schema' is not supported" } },
    });
    const provider = createProvider(
      providerConfig('openai_compatible', open, { apiKey: null, model: 'local' }),
    );

    const first = await provider.describe(visionRequest());
    const second = await provider.describe(visionRequest());

    expect(first.answer).toEqual(FAKE_AI_DEFAULT_ANSWER);
    expect(second.answer).toEqual(FAKE_AI_DEFAULT_ANSWER);
    expect(open.requests.map((r) => r.body.response_format.type)).toEqual([
      'json_schema',
      'json_object',
      'json_object',
    ]);
    const retryPrompt = open.requests[1].body.messages[0].content[0].text as string;
    expect(retryPrompt).toContain('JSON');
  });

  it('a local server whose json_object retry fails too reports the 400 and keeps json_schema', async () => {
    open.failNext(2, { status: 400 });
    const provider = createProvider(providerConfig('ollama', open, { apiKey: null }));
    expect(await failureOf(provider.describe(visionRequest()))).toMatchObject({
      kind: 'bad_request',
      status: 400,
    });
    await provider.describe(visionRequest());
    expect(open.requests.map((r) => r.body.response_format.type)).toEqual([
      'json_schema',
      'json_object',
      'json_schema',
    ]);
  });
});

describe('Anthropic provider (@anthropic-ai/sdk) against the fake Messages API', () => {
  let fake: FakeAiServer;

  beforeAll(async () => {
    fake = await FakeAiServer.start({ kind: 'anthropic', apiKey: KEYS.anthropic });
  });
  beforeEach(() => fake.reset());

  it('sends a base64 image block, the prompt, a forced tool with the answer schema and the key; the answer is the tool input', async () => {
    fake.respondWith(ANSWER);
    fake.setUsage({ input: 1620, output: 88 });
    const provider = createProvider(providerConfig('anthropic', fake));

    const result = await provider.describe(visionRequest());

    expect(result.answer).toEqual(ANSWER);
    expect(JSON.parse(result.text)).toEqual(ANSWER);
    expect(result).toMatchObject({ model: 'claude-haiku-4-5', inputTokens: 1620, outputTokens: 88 });
    const [sent] = fake.requests;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['anthropic-version']).toEqual(expect.any(String));
    // SDK 1.x sends the key as a Bearer token (API version 2026-10-21); older ones as x-api-key.
    const keyHeader = sent.headers['x-api-key'] ?? sent.headers.authorization?.replace(/^Bearer /, '');
    expect(keyHeader).toBe(KEYS.anthropic);
    expect(sent.body.model).toBe('claude-haiku-4-5');
    expect(sent.body.max_tokens).toBeGreaterThan(0);
    const blocks = sent.body.messages[0].content;
    expect(blocks).toContainEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/jpeg', data: JPEG.toString('base64') },
    });
    expect(blocks.find((b: { type: string }) => b.type === 'text').text).toContain(PROMPT);
    expect(sent.body.tool_choice).toEqual({ type: 'tool', name: VISION_ANSWER_TOOL_NAME });
    expect(sent.body.tools).toHaveLength(1);
    expect(sent.body.tools[0].name).toBe(VISION_ANSWER_TOOL_NAME);
    expect(sent.body.tools[0].input_schema).toMatchObject({
      type: 'object',
      required: ['description', 'detection_type', 'objects_detected', 'confidence'],
    });
  });

  it('asks for free text without tools when structured is false', async () => {
    fake.respondWith({ text: 'A shorter prompt would do.' });
    const result = await createProvider(providerConfig('anthropic', fake)).describe(
      visionRequest({ structured: false }),
    );
    expect(result).toMatchObject({ answer: null, text: 'A shorter prompt would do.' });
    expect(fake.requests[0].body.tools).toBeUndefined();
    expect(fake.requests[0].body.tool_choice).toBeUndefined();
  });

  it('an answer without the tool call is malformed', async () => {
    fake.respondWith({ text: 'I see a person.' });
    const error = await failureOf(
      createProvider(providerConfig('anthropic', fake)).describe(visionRequest()),
    );
    expect(error.kind).toBe('malformed');
  });
});

describe('Gemini provider (@google/genai) against the fake generateContent API', () => {
  let fake: FakeAiServer;

  beforeAll(async () => {
    fake = await FakeAiServer.start({ kind: 'gemini', apiKey: KEYS.gemini });
  });
  beforeEach(() => fake.reset());

  it('sends inlineData, the prompt, responseMimeType + responseSchema and the key; parses the JSON text and usage', async () => {
    fake.respondWith(ANSWER);
    fake.setUsage({ input: 1290, output: 41 });
    const provider = createProvider(providerConfig('gemini', fake));

    const result = await provider.describe(visionRequest());

    expect(result.answer).toEqual(ANSWER);
    expect(result).toMatchObject({ model: 'gemini-2.5-flash', inputTokens: 1290, outputTokens: 41 });
    const [sent] = fake.requests;
    expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(sent.headers['x-goog-api-key'] ?? sent.query.key).toBe(KEYS.gemini);
    const parts = sent.body.contents[0].parts;
    expect(parts).toContainEqual({ inlineData: { mimeType: 'image/jpeg', data: JPEG.toString('base64') } });
    expect(parts.find((p: { text?: string }) => p.text !== undefined).text).toContain(PROMPT);
    expect(sent.body.generationConfig.responseMimeType).toBe('application/json');
    const schema = sent.body.generationConfig.responseSchema;
    expect(schema.type).toBe('OBJECT');
    expect(schema.required).toEqual(['description', 'detection_type', 'objects_detected', 'confidence']);
    expect(schema.properties.detection_type.enum).toContain('person');
    expect(schema.properties.objects_detected).toMatchObject({ type: 'ARRAY', maxItems: '20' });
  });

  it('asks for free text without a response schema when structured is false', async () => {
    fake.respondWith({ text: 'Try naming the camera.' });
    const result = await createProvider(providerConfig('gemini', fake)).describe(
      visionRequest({ structured: false }),
    );
    expect(result).toMatchObject({ answer: null, text: 'Try naming the camera.' });
    expect(fake.requests[0].body.generationConfig?.responseSchema).toBeUndefined();
  });
});

// The same failures, for each API: what a user sees in the fallback chain depends on these kinds.
describe.each([
  { kind: 'openai' as const, name: 'openai' as const },
  { kind: 'anthropic' as const, name: 'anthropic' as const },
  { kind: 'gemini' as const, name: 'gemini' as const },
])('$name error mapping', ({ kind, name }) => {
  let fake: FakeAiServer;
  const provider = () => createProvider(providerConfig(name, fake));

  beforeAll(async () => {
    fake = await FakeAiServer.start({ kind, apiKey: KEYS[kind], slowMs: 5000 });
  });
  beforeEach(() => fake.reset());

  it('401 is auth, and the message never contains the key even when the API repeats it', async () => {
    fake.failNext(1, { status: 401, body: errorBodyWithKey(kind, 401, KEYS[kind]) });
    const error = await failureOf(provider().describe(visionRequest()));
    expect(error).toMatchObject({ provider: name, kind: 'auth', status: 401 });
    expect(error.message).toContain('Incorrect API key provided');
    expect(error.message).not.toContain(KEYS[kind]);
    expect(error.message).not.toContain(KEYS[kind].slice(0, 12));
  });

  it('a wrong key is auth, as the real API answers it', async () => {
    const wrong = createProvider(providerConfig(name, fake, { apiKey: `${KEYS[kind]}-wrong` }));
    const error = await failureOf(wrong.describe(visionRequest()));
    expect(error.kind).toBe('auth');
    expect(error.message).not.toContain(KEYS[kind]);
  });

  it('403 is auth', async () => {
    fake.failNext(1, { status: 403 });
    expect(await failureOf(provider().describe(visionRequest()))).toMatchObject({
      kind: 'auth',
      status: 403,
    });
  });

  it('429 is rate_limited, without a retry by the SDK', async () => {
    fake.failNext(1, { status: 429 });
    expect(await failureOf(provider().describe(visionRequest()))).toMatchObject({
      kind: 'rate_limited',
      status: 429,
    });
    expect(fake.requests).toHaveLength(1);
  });

  it('500 and 503 are server, without a retry', async () => {
    fake.failNext(1, { status: 500 });
    fake.failNext(1, { status: 503 });
    expect(await failureOf(provider().describe(visionRequest()))).toMatchObject({
      kind: 'server',
      status: 500,
    });
    expect(await failureOf(provider().describe(visionRequest()))).toMatchObject({
      kind: 'server',
      status: 503,
    });
    expect(fake.requests).toHaveLength(2);
  });

  it('400 is bad_request', async () => {
    fake.failNext(1, { status: 400 });
    expect(await failureOf(provider().describe(visionRequest()))).toMatchObject({
      kind: 'bad_request',
      status: 400,
    });
  });

  it('a request that never gets an answer is timeout, soon after timeoutMs', async () => {
    fake.failNext(1, 'hang');
    const started = Date.now();
    const error = await failureOf(provider().describe(visionRequest({ timeoutMs: 300 })));
    const elapsed = Date.now() - started;
    expect(error.kind).toBe('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(1500);
    expect(fake.requests).toHaveLength(1);
  });

  it('an answer slower than timeoutMs is timeout', async () => {
    fake.failNext(1, 'timeout');
    const error = await failureOf(provider().describe(visionRequest({ timeoutMs: 400 })));
    expect(error.kind).toBe('timeout');
  });

  it('latency within timeoutMs is fine', async () => {
    fake.setLatency(300);
    const result = await provider().describe(visionRequest({ timeoutMs: 3000 }));
    expect(result.answer).toEqual(FAKE_AI_DEFAULT_ANSWER);
  });

  it("the caller's abort signal ends the call as timeout", async () => {
    fake.failNext(1, 'hang');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const started = Date.now();
    const error = await failureOf(
      provider().describe(visionRequest({ signal: controller.signal, timeoutMs: 10_000 })),
    );
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('a broken answer is malformed', async () => {
    fake.failNext(1, 'malformed');
    expect((await failureOf(provider().describe(visionRequest()))).kind).toBe('malformed');
  });

  it('an answer missing fields is malformed, and still reports the tokens it used', async () => {
    fake.respondWith({
      text: JSON.stringify({ description: 'A cat on the wall.', detection_type: 'animal' }),
    });
    fake.setUsage({ input: 900, output: 31 });
    const error = await failureOf(provider().describe(visionRequest()));
    expect(error.kind).toBe('malformed');
    expect(error.message).toContain('objects_detected');
    expect(error).toBeInstanceOf(ProviderErrorWithUsage);
    expect((error as ProviderErrorWithUsage).usage).toEqual({
      model: PROVIDER_DEFAULTS[name].defaultModel,
      inputTokens: 900,
      outputTokens: 31,
    });
  });

  it('an answer with a detection type outside the list is malformed (never guessed)', async () => {
    fake.respondWith({ ...ANSWER, detection_type: 'burglar' });
    const error = await failureOf(provider().describe(visionRequest()));
    expect(error.kind).toBe('malformed');
    expect(error.message).toContain('detection_type');
  });

  it('an answer with a confidence outside 0..100 is malformed', async () => {
    fake.respondWith({ ...ANSWER, confidence: 140 });
    expect((await failureOf(provider().describe(visionRequest()))).kind).toBe('malformed');
  });

  it('the next call after a failure works (no state left behind)', async () => {
    fake.failNext(1, { status: 500 });
    await failureOf(provider().describe(visionRequest()));
    expect((await provider().describe(visionRequest())).answer).toEqual(FAKE_AI_DEFAULT_ANSWER);
  });

  it('a server that refuses connections is network', async () => {
    const port = await freePort();
    const base = kind === 'openai' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`;
    const error = await failureOf(
      createProvider(providerConfig(name, null, { baseUrl: base })).describe(visionRequest()),
    );
    expect(error.kind).toBe('network');
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).not.toContain(KEYS[kind]);
  });
});

// The fakes must refuse what the real APIs refuse, or the tests above would prove nothing.
describe('the fake APIs check requests like the real ones', () => {
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const jpegUri = `data:image/jpeg;base64,${JPEG.toString('base64')}`;

  it('OpenAI: key required when configured, an image part required, unknown routes 404', async () => {
    const fake = await FakeAiServer.start({ kind: 'openai', apiKey: KEYS.openai });
    const url = `${fake.baseUrl}/chat/completions`;
    const withImage = {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: jpegUri } }] }],
    };
    const auth = { authorization: `Bearer ${KEYS.openai}` };

    const noKey = await post(url, withImage);
    expect(noKey.status).toBe(401);
    const wrongKey = await post(url, withImage, { authorization: 'Bearer sk-wrong-0123456789' });
    expect(((await wrongKey.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect(
      (await post(url, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, auth)).status,
    ).toBe(400);
    const notAnImage = {
      ...withImage,
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,aGVsbG8=' } }],
        },
      ],
    };
    expect((await post(url, notAnImage, auth)).status).toBe(400);
    expect((await post(`${fake.baseUrl}/completions`, withImage, auth)).status).toBe(404);
    const ok = await post(url, withImage, auth);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({
      object: 'chat.completion',
      usage: { prompt_tokens: 1250, completion_tokens: 64 },
    });
    expect(fake.requests).toHaveLength(6);
    await fake.close();
  });

  it('Anthropic: anthropic-version and the key required, a tool_choice must name a tool', async () => {
    const fake = await FakeAiServer.start({ kind: 'anthropic', apiKey: KEYS.anthropic });
    const url = `${fake.baseUrl}/v1/messages`;
    const body = {
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'image',
              source: { type: 'base64', media_type: 'image/jpeg', data: JPEG.toString('base64') },
            },
          ],
        },
      ],
    };
    const headers = { 'x-api-key': KEYS.anthropic, 'anthropic-version': '2023-06-01' };
    expect((await post(url, body, { 'x-api-key': KEYS.anthropic })).status).toBe(400);
    expect((await post(url, body, { 'anthropic-version': '2023-06-01' })).status).toBe(401);
    expect((await post(url, { ...body, tool_choice: { type: 'tool', name: 'nope' } }, headers)).status).toBe(
      400,
    );
    const ok = await post(url, body, headers);
    expect(await ok.json()).toMatchObject({
      type: 'message',
      content: [{ type: 'text' }],
      usage: { input_tokens: 1250 },
    });
    await fake.close();
  });

  it('Gemini: the key as header or ?key=, 403 without one, 400 API_KEY_INVALID for a wrong one', async () => {
    const fake = await FakeAiServer.start({ kind: 'gemini', apiKey: KEYS.gemini });
    const url = `${fake.baseUrl}/v1beta/models/gemini-2.5-flash:generateContent`;
    const body = {
      contents: [
        { role: 'user', parts: [{ inlineData: { mimeType: 'image/jpeg', data: JPEG.toString('base64') } }] },
      ],
    };
    expect((await post(url, body)).status).toBe(403);
    const wrong = await post(url, body, { 'x-goog-api-key': 'AIzaWrong' });
    expect(wrong.status).toBe(400);
    expect(JSON.stringify(await wrong.json())).toContain('API_KEY_INVALID');
    expect((await post(`${url}?key=${KEYS.gemini}`, body)).status).toBe(200);
    expect(
      (
        await post(
          url,
          { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
          { 'x-goog-api-key': KEYS.gemini },
        )
      ).status,
    ).toBe(400);
    const ok = await post(url, body, { 'x-goog-api-key': KEYS.gemini });
    expect(await ok.json()).toMatchObject({
      candidates: [{ finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 1250 },
    });
    await fake.close();
  });

  it('a hanging request is dropped by reset(), and close() ends everything', async () => {
    const fake = await FakeAiServer.start({ kind: 'openai' });
    fake.failNext(1, 'hang');
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: jpegUri } }] }],
    };
    const pending = post(`${fake.baseUrl}/chat/completions`, body).then(
      () => 'answered',
      () => 'dropped',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    fake.reset();
    expect(await pending).toBe('dropped');
    expect(fake.requests).toHaveLength(0);
    await fake.close();
    await expect(post(`${fake.baseUrl}/chat/completions`, body)).rejects.toThrow();
  });
});

describe('provider defaults', () => {
  it('every provider has a default base URL but openai_compatible, and a default model but openai_compatible', () => {
    for (const name of AI_PROVIDER_NAMES) {
      const defaults = PROVIDER_DEFAULTS[name];
      expect(defaults.baseUrl === null).toBe(name === 'openai_compatible');
      expect(defaults.defaultModel === '').toBe(name === 'openai_compatible');
      expect(createProvider(providerConfig(name, null)).defaultModel).toBe(defaults.defaultModel);
    }
  });
});
