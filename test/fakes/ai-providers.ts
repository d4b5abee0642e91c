import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { VisionAnswer } from '../../src/modules/ai/providers/vision-provider';
import { trackFake, untrackFake, type StoppableFake } from './fake-lifecycle';

/** Which API the fake speaks. */
export type FakeAiKind = 'openai' | 'anthropic' | 'gemini';

/** One request as the fake received it. */
export interface FakeAiRequest {
  method: string;
  /** Without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  query: Record<string, string>;
  /** Lower-case names, as Node gives them. */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (null when it was not JSON). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** What the model "says": a structured answer, or exactly this text (also used for broken answers). */
export type FakeAiAnswer = VisionAnswer | { text: string };

/**
 * A scripted failure of the next request(s):
 * - `{status, body?}`: that HTTP status with the API's error body (or `body`);
 * - `hang`: the request is read and never answered (until `reset()` or `close()`);
 * - `timeout`: the answer comes, but only after `slowMs` (see start options): a provider slower than its
 *   client is willing to wait;
 * - `malformed`: a 200 whose answer is broken (truncated JSON; for Anthropic a tool call missing fields).
 */
export type FakeAiFailure = { status: number; body?: unknown } | 'hang' | 'timeout' | 'malformed';

export interface FakeAiServerOptions {
  kind: FakeAiKind;
  /**
   * When set, requests must carry this key the way the real API wants it (OpenAI `Authorization: Bearer`;
   * Anthropic `x-api-key` or `Authorization: Bearer`; Gemini `x-goog-api-key` or `?key=`), else they get the
   * API's own authentication error. When absent, any key or none is accepted (Ollama, local servers).
   */
  apiKey?: string;
  /** How late a `timeout` failure answers. Default 60 s. */
  slowMs?: number;
}

export const FAKE_AI_DEFAULT_ANSWER: VisionAnswer = {
  description: 'A person in a red jacket walks up the driveway towards the front door.',
  detection_type: 'person',
  objects_detected: ['person', 'car'],
  confidence: 88,
};

const DEFAULT_USAGE = { input: 1250, output: 64 };
const ANTHROPIC_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

interface HttpReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const running = new Set<FakeAiServer>();

/** Closes every fake AI server this test process started and has not closed yet (for `afterAll`). */
export async function stopAllFakeAiServers(): Promise<void> {
  await Promise.allSettled([...running].map((server) => server.close()));
}

/**
 * A loopback HTTP server that speaks one AI provider's real API (routes, headers, request checks, response
 * and error shapes with usage), so that the official SDKs and Vigil's provider clients run unchanged
 * against it. Answers, latency, usage and failures are scripted by the test.
 */
export class FakeAiServer {
  /** Every request received since start or the last `reset()`, in order. */
  readonly requests: FakeAiRequest[] = [];
  private answer: FakeAiAnswer = FAKE_AI_DEFAULT_ANSWER;
  private failures: FakeAiFailure[] = [];
  private latencyMs = 0;
  private usage = { ...DEFAULT_USAGE };
  private readonly sockets = new Set<Socket>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly tracked: StoppableFake = { stop: () => this.close() };
  private closing: Promise<void> | null = null;

  private constructor(
    readonly kind: FakeAiKind,
    private readonly server: Server,
    readonly port: number,
    private readonly options: FakeAiServerOptions,
  ) {}

  static async start(options: FakeAiServerOptions): Promise<FakeAiServer> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('fake AI server is not listening on TCP');
    const fake = new FakeAiServer(options.kind, server, address.port, options);
    server.on('connection', (socket: Socket) => {
      fake.sockets.add(socket);
      socket.once('close', () => fake.sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      fake.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent && !res.destroyed) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `fake failed: ${String(err)}` } }));
        }
      });
    });
    running.add(fake);
    trackFake(fake.tracked);
    return fake;
  }

  /** What goes into the provider's `base_url` setting (OpenAI's includes `/v1`, as the SDK expects). */
  get baseUrl(): string {
    const origin = `http://127.0.0.1:${this.port}`;
    return this.kind === 'openai' ? `${origin}/v1` : origin;
  }

  /** The answer of every following successful request. */
  respondWith(answer: FakeAiAnswer): void {
    this.answer = answer;
  }

  /** The next `count` valid requests fail this way (requests the API itself would refuse do not count). */
  failNext(count: number, failure: FakeAiFailure): void {
    for (let i = 0; i < count; i++) this.failures.push(failure);
  }

  /** Every answer (and error) is sent this much later. */
  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  /** The token counts reported in every following response. */
  setUsage(usage: { input: number; output: number }): void {
    this.usage = { ...usage };
  }

  /** Back to the defaults: no recorded requests, default answer and usage, no latency or failures; hanging requests are dropped. */
  reset(): void {
    this.requests.length = 0;
    this.answer = FAKE_AI_DEFAULT_ANSWER;
    this.failures = [];
    this.latencyMs = 0;
    this.usage = { ...DEFAULT_USAGE };
    this.dropHanging();
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      running.delete(this);
      untrackFake(this.tracked);
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
      this.dropHanging();
      for (const socket of this.sockets) socket.destroy();
      this.server.close(() => resolve());
    });
    return this.closing;
  }

  private dropHanging(): void {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let body: unknown;
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : null;
    } catch {
      body = null;
    }
    const request: FakeAiRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
    };
    this.requests.push(request);
    const refusal = this.check(request, raw.length > 0 && body === null);
    const failure = refusal ? undefined : this.failures.shift();
    if (this.latencyMs > 0) await this.delay(this.latencyMs);
    if (refusal) return send(res, refusal);
    if (failure === 'hang') {
      this.hanging.add(res);
      res.once('close', () => this.hanging.delete(res));
      return;
    }
    if (failure === 'timeout') await this.delay(this.options.slowMs ?? 60_000);
    if (failure !== undefined && typeof failure === 'object') {
      return send(res, {
        status: failure.status,
        body: failure.body ?? this.errorBody(failure.status, `scripted failure (HTTP ${failure.status})`),
        headers: failure.status === 429 ? { 'retry-after': '1' } : undefined,
      });
    }
    send(res, { status: 200, body: this.success(request, failure === 'malformed') });
  }

  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  // ---- request checks, as the real API makes them -------------------------------------------------------

  private check(request: FakeAiRequest, invalidJson: boolean): HttpReply | null {
    const route = this.route(request);
    if (!route)
      return { status: 404, body: this.errorBody(404, `Unknown route ${request.method} ${request.path}`) };
    const auth = this.checkAuth(request);
    if (auth) return auth;
    if (invalidJson || typeof request.body !== 'object' || request.body === null) {
      return { status: 400, body: this.errorBody(400, 'The request body is not valid JSON.') };
    }
    const problem =
      this.kind === 'openai'
        ? checkOpenAi(request.body)
        : this.kind === 'anthropic'
          ? checkAnthropic(request.body)
          : checkGemini(request.body);
    return problem ? { status: 400, body: this.errorBody(400, problem) } : null;
  }

  private route(request: FakeAiRequest): boolean {
    if (request.method !== 'POST') return false;
    if (this.kind === 'openai') return request.path === '/v1/chat/completions';
    if (this.kind === 'anthropic') return request.path === '/v1/messages';
    return /^\/v1beta\/models\/[^/]+:generateContent$/.test(request.path);
  }

  private checkAuth(request: FakeAiRequest): HttpReply | null {
    const key = this.options.apiKey;
    const headers = request.headers;
    if (this.kind === 'anthropic' && !headers['anthropic-version']) {
      return { status: 400, body: this.errorBody(400, 'anthropic-version: header is required') };
    }
    if (key === undefined) return null;
    const bearer = headers.authorization;
    if (this.kind === 'openai') {
      if (!bearer) {
        return {
          status: 401,
          body: openAiError(
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth.",
            'invalid_request_error',
            null,
          ),
        };
      }
      if (bearer !== `Bearer ${key}`) {
        return {
          status: 401,
          body: openAiError(
            `Incorrect API key provided: ${maskKey(bearer.replace(/^Bearer\s+/i, ''))}.`,
            'invalid_request_error',
            'invalid_api_key',
          ),
        };
      }
      return null;
    }
    if (this.kind === 'anthropic') {
      const given = headers['x-api-key'] ?? (bearer?.startsWith('Bearer ') ? bearer.slice(7) : undefined);
      if (given === key) return null;
      return {
        status: 401,
        body: anthropicError(
          'authentication_error',
          given ? 'invalid x-api-key' : 'x-api-key header is required',
        ),
      };
    }
    const given = (headers['x-goog-api-key'] as string | undefined) ?? request.query.key;
    if (given === key) return null;
    // Gemini answers a wrong key with 400 API_KEY_INVALID and a missing one with 403.
    if (!given) {
      return {
        status: 403,
        body: geminiError(
          403,
          'PERMISSION_DENIED',
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        ),
      };
    }
    return {
      status: 400,
      body: geminiError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
        },
      ]),
    };
  }

  private errorBody(status: number, message: string): unknown {
    if (this.kind === 'openai') {
      const type =
        status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
      return openAiError(message, type, null);
    }
    if (this.kind === 'anthropic') {
      const type =
        status === 401
          ? 'authentication_error'
          : status === 403
            ? 'permission_error'
            : status === 404
              ? 'not_found_error'
              : status === 429
                ? 'rate_limit_error'
                : status === 529
                  ? 'overloaded_error'
                  : status >= 500
                    ? 'api_error'
                    : 'invalid_request_error';
      return anthropicError(type, message);
    }
    const statusText =
      status === 401
        ? 'UNAUTHENTICATED'
        : status === 403
          ? 'PERMISSION_DENIED'
          : status === 404
            ? 'NOT_FOUND'
            : status === 429
              ? 'RESOURCE_EXHAUSTED'
              : status === 503
                ? 'UNAVAILABLE'
                : status >= 500
                  ? 'INTERNAL'
                  : 'INVALID_ARGUMENT';
    return geminiError(status, statusText, message);
  }

  // ---- answers, in each API's response shape --------------------------------------------------------------

  private success(request: FakeAiRequest, malformed: boolean): unknown {
    if (this.kind === 'openai') return this.openAiSuccess(request.body, malformed);
    if (this.kind === 'anthropic') return this.anthropicSuccess(request.body, malformed);
    const model = decodeURIComponent(
      /^\/v1beta\/models\/([^/]+):generateContent$/.exec(request.path)?.[1] ?? '',
    );
    return this.geminiSuccess(request.body, model, malformed);
  }

  /** The answer as the model would write it: JSON for a structured request, else prose. */
  private answerText(structured: boolean, malformed: boolean): string {
    if (malformed) return '{"description": "A person walks up the driveway", "detection_type": "per';
    if ('text' in this.answer) return this.answer.text;
    return structured ? JSON.stringify(this.answer) : this.answer.description;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private openAiSuccess(body: any, malformed: boolean): unknown {
    const format = body.response_format?.type;
    const structured = format === 'json_schema' || format === 'json_object';
    return {
      id: `chatcmpl-${randomUUID().replace(/-/g, '')}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: this.answerText(structured, malformed),
            refusal: null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: this.usage.input,
        completion_tokens: this.usage.output,
        total_tokens: this.usage.input + this.usage.output,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    };
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private anthropicSuccess(body: any, malformed: boolean): unknown {
    const forcedTool: string | undefined =
      body.tool_choice?.type === 'tool' ? body.tool_choice.name : undefined;
    let content: unknown[];
    let stopReason = 'end_turn';
    if (forcedTool && malformed) {
      // The model ran out of tokens in the middle of the tool call: required fields are missing.
      content = [
        { type: 'tool_use', id: toolUseId(), name: forcedTool, input: { description: 'A person walks up' } },
      ];
      stopReason = 'max_tokens';
    } else if (forcedTool) {
      const input = 'text' in this.answer ? parseObject(this.answer.text) : this.answer;
      if (input) {
        content = [{ type: 'tool_use', id: toolUseId(), name: forcedTool, input }];
        stopReason = 'tool_use';
      } else {
        content = [{ type: 'text', text: this.answerText(true, false) }];
      }
    } else {
      const text = malformed ? '' : this.answerText(false, false);
      content = text ? [{ type: 'text', text }] : [];
    }
    return {
      id: `msg_${randomUUID().replace(/-/g, '')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: {
        input_tokens: this.usage.input,
        output_tokens: this.usage.output,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        service_tier: 'standard',
      },
    };
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private geminiSuccess(body: any, model: string, malformed: boolean): unknown {
    const structured = body.generationConfig?.responseMimeType === 'application/json';
    return {
      candidates: [
        {
          content: { parts: [{ text: this.answerText(structured, malformed) }], role: 'model' },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: {
        promptTokenCount: this.usage.input,
        candidatesTokenCount: this.usage.output,
        totalTokenCount: this.usage.input + this.usage.output,
        promptTokensDetails: [
          { modality: 'IMAGE', tokenCount: Math.max(0, this.usage.input - 50) },
          { modality: 'TEXT', tokenCount: Math.min(50, this.usage.input) },
        ],
      },
      modelVersion: model,
      responseId: randomUUID().replace(/-/g, '').slice(0, 22),
    };
  }
}

// ---- request validation per API ------------------------------------------------------------------------------

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function checkOpenAi(body: any): string | null {
  if (typeof body.model !== 'string' || body.model === '') return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return "'messages' must contain at least one message";
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const parts: any[] = body.messages.flatMap((m: any) => (Array.isArray(m?.content) ? m.content : []));
  const images = parts.filter((p) => p?.type === 'image_url');
  if (images.length === 0) return 'the fake expects an image_url content part';
  for (const part of images) {
    const url = part.image_url?.url;
    const match =
      typeof url === 'string' ? /^data:(image\/(?:jpeg|png|gif|webp));base64,(.+)$/.exec(url) : null;
    if (!match) return "Invalid 'image_url': expected a base64 data URI of an image.";
    if (!isImage(match[2], match[1]))
      return 'You uploaded an unsupported image. Please make sure your image is valid.';
  }
  const format = body.response_format;
  if (format !== undefined) {
    if (format.type === 'json_schema') {
      const schema = format.json_schema;
      if (typeof schema?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(schema.name)) {
        return "Invalid 'response_format.json_schema.name'.";
      }
      if (typeof schema.schema !== 'object' || schema.schema === null)
        return "Missing 'response_format.json_schema.schema'.";
      if (schema.strict === true && schema.schema.additionalProperties !== false) {
        return "Invalid schema for response_format: 'additionalProperties' is required to be supplied and to be false.";
      }
    } else if (format.type !== 'json_object' && format.type !== 'text') {
      return "Invalid value for 'response_format.type'.";
    }
  }
  return null;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function checkAnthropic(body: any): string | null {
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: Field required';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const blocks: any[] = body.messages.flatMap((m: any) => (Array.isArray(m?.content) ? m.content : []));
  const images = blocks.filter((b) => b?.type === 'image');
  if (images.length === 0) return 'the fake expects an image content block';
  for (const block of images) {
    const source = block.source;
    if (source?.type !== 'base64') return 'messages.0.content: image source must be base64 in this fake';
    if (!ANTHROPIC_MEDIA_TYPES.includes(source.media_type))
      return 'messages.0.content.0.image.source.base64.media_type: Input should be image/jpeg, image/png, image/gif or image/webp';
    if (typeof source.data !== 'string' || !isImage(source.data, source.media_type))
      return 'messages.0.content.0.image.source.base64.data: The image was specified using the image/jpeg media type, but does not appear to be a valid image';
  }
  if (body.tool_choice !== undefined) {
    const choice = body.tool_choice;
    if (choice.type === 'tool') {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const tool = (body.tools ?? []).find((t: any) => t?.name === choice.name);
      if (!tool) return `tool_choice.name: Tool '${choice.name}' not found in tools`;
      if (tool.input_schema?.type !== 'object') return "tools.0.input_schema.type: Input should be 'object'";
    }
  }
  return null;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function checkGemini(body: any): string | null {
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    return '* GenerateContentRequest.contents: contents is not specified';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const parts: any[] = body.contents.flatMap((c: any) => (Array.isArray(c?.parts) ? c.parts : []));
  const images = parts.filter((p) => p?.inlineData !== undefined);
  if (images.length === 0) return 'the fake expects an inlineData part';
  for (const part of images) {
    const { mimeType, data } = part.inlineData ?? {};
    if (typeof mimeType !== 'string' || !mimeType.startsWith('image/'))
      return 'Unsupported MIME type in inlineData';
    if (typeof data !== 'string' || !isImage(data, mimeType)) return 'Provided image is not valid.';
  }
  const config = body.generationConfig;
  if (config?.responseSchema !== undefined && config.responseMimeType !== 'application/json') {
    return '* GenerationConfig.response_schema: response_mime_type must be application/json when response_schema is set';
  }
  return null;
}

// ---- helpers ---------------------------------------------------------------------------------------------------

/** Whether base64 data decodes to the image type it claims (by its magic bytes). */
function isImage(base64: string, mimeType: string): boolean {
  if (!/^[A-Za-z0-9+/]+=*$/.test(base64)) return false;
  const bytes = Buffer.from(base64, 'base64');
  if (mimeType === 'image/jpeg')
    return bytes.length > 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  if (mimeType === 'image/png')
    return bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return bytes.length > 0;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, reply: HttpReply): void {
  if (res.destroyed || res.headersSent) return;
  const payload = JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
  res.end(payload);
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function openAiError(message: string, type: string, code: string | null): unknown {
  return { error: { message, type, param: null, code } };
}

function anthropicError(type: string, message: string): unknown {
  return { type: 'error', error: { type, message }, request_id: `req_${randomUUID().replace(/-/g, '')}` };
}

function geminiError(code: number, status: string, message: string, details?: unknown[]): unknown {
  return { error: { code, message, status, ...(details ? { details } : {}) } };
}

/** The way OpenAI echoes a wrong key: its first and last characters. */
function maskKey(key: string): string {
  return key.length <= 8
    ? '****'
    : `${key.slice(0, 3)}${'*'.repeat(Math.max(4, key.length - 7))}${key.slice(-4)}`;
}

function toolUseId(): string {
  return `toolu_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
}
