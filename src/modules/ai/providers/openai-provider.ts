import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
} from 'openai/resources/chat/completions';
import type { AiProviderName } from '../../settings/settings.registry';
import {
  parseVisionAnswer,
  promptText,
  VISION_ANSWER_SCHEMA_NAME,
  visionAnswerSchema,
} from './answer-schema';
import { callModel, notConfigured, providerCall } from './call-deadline';
import { isLocalBaseUrl, PROVIDER_DEFAULTS, resolveBaseUrl } from './provider-defaults';
import { checkAnswer, type ErrorContext } from './provider-errors';
import {
  ProviderError,
  type ProviderCapabilities,
  type ProviderConfig,
  type VisionProvider,
  type VisionRequest,
  type VisionResult,
} from './vision-provider';

/** Enough for one or two sentences and the JSON around them; bounds the cost of a runaway answer. */
const MAX_OUTPUT_TOKENS = 1000;

type OpenAiFamily = Extract<AiProviderName, 'openai' | 'grok' | 'ollama' | 'openai_compatible'>;

/**
 * The OpenAI chat-completions API through the official `openai` SDK, for OpenAI itself and for the servers
 * that speak the same API: xAI Grok (https://api.x.ai/v1), Ollama (http://localhost:11434/v1, no key) and
 * any OpenAI-compatible server at its configured base URL (key optional).
 *
 * The image goes as an `image_url` part with a data URI; a structured answer is asked for with
 * `response_format: json_schema` (strict). A local server (Ollama, OpenAI-compatible) that rejects
 * `json_schema` with a 400/422 gets the same request once more with `json_object`; when that works the
 * client keeps using `json_object` (the answer is validated the same way either way).
 */
export class OpenAiProvider implements VisionProvider {
  readonly capabilities: ProviderCapabilities;
  readonly defaultModel: string;
  private readonly client: OpenAI | null;
  private readonly baseUrl: string | null;
  private readonly errorContext: ErrorContext;
  private jsonSchemaRejected = false;

  constructor(private readonly config: ProviderConfig & { name: OpenAiFamily }) {
    const defaults = PROVIDER_DEFAULTS[config.name];
    this.defaultModel = defaults.defaultModel;
    this.baseUrl = resolveBaseUrl(config.name, config.baseUrl);
    const local =
      config.name === 'openai_compatible' ? this.baseUrl !== null && isLocalBaseUrl(this.baseUrl) : null;
    this.capabilities = { ...defaults.capabilities, local: local ?? defaults.capabilities.local };
    const apiKey = config.apiKey?.trim() || null;
    this.errorContext = {
      provider: config.name,
      apiKey,
      baseUrl: this.baseUrl ?? '',
      timeoutErrors: [OpenAI.APIConnectionTimeoutError, OpenAI.APIUserAbortError],
      connectionErrors: [OpenAI.APIConnectionError],
    };
    const usable = this.baseUrl !== null && (apiKey !== null || !defaults.requiresApiKey);
    this.client = usable
      ? new OpenAI({
          // The SDK insists on a key; a keyless server (Ollama) gets none: the Authorization header is
          // removed below. Every option is explicit so that no OPENAI_* environment variable applies.
          apiKey: apiKey ?? 'no-key',
          adminAPIKey: null,
          organization: null,
          project: null,
          webhookSecret: null,
          baseURL: this.baseUrl,
          maxRetries: 0,
          timeout: config.timeoutMs,
          logLevel: 'off',
          defaultHeaders: apiKey === null ? { Authorization: null } : undefined,
        })
      : null;
  }

  get name(): AiProviderName {
    return this.config.name;
  }

  async describe(request: VisionRequest): Promise<VisionResult> {
    const client = this.requireClient();
    const model = callModel(request, this.config, this.defaultModel);
    if (!model) throw new ProviderError(this.name, 'not_configured', 'no model is configured');
    return providerCall(this.name, request, this.config, this.errorContext, async (signal, timeoutMs) => {
      const completion = await this.complete(client, request, model, timeoutMs, signal);
      return this.toResult(completion, request.structured, model);
    });
  }

  private async complete(
    client: OpenAI,
    request: VisionRequest,
    model: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ChatCompletion> {
    const send = (format: 'json_schema' | 'json_object' | null) =>
      client.chat.completions.create(this.params(request, model, format), {
        signal,
        timeout: timeoutMs,
        maxRetries: 0,
      });
    if (!request.structured) return send(null);
    if (this.jsonSchemaRejected) return send('json_object');
    try {
      return await send('json_schema');
    } catch (err) {
      if (!this.mayFallBackToJsonObject(err)) throw err;
      const completion = await send('json_object');
      this.jsonSchemaRejected = true;
      return completion;
    }
  }

  /** Only self-hosted servers, and only when the request itself was refused (400 or 422). */
  private mayFallBackToJsonObject(err: unknown): boolean {
    const local = this.config.name === 'ollama' || this.config.name === 'openai_compatible';
    return local && err instanceof OpenAI.APIError && (err.status === 400 || err.status === 422);
  }

  private params(
    request: VisionRequest,
    model: string,
    format: 'json_schema' | 'json_object' | null,
  ): ChatCompletionCreateParamsNonStreaming {
    const prompt = promptText({ prompt: request.prompt, structured: format !== null });
    const params: ChatCompletionCreateParamsNonStreaming = {
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: prompt },
            {
              type: 'image_url',
              image_url: { url: `data:${request.mimeType};base64,${request.image.toString('base64')}` },
            },
          ],
        },
      ],
    };
    // OpenAI and xAI deprecated max_tokens; self-hosted servers (Ollama, vLLM, llama.cpp) know only max_tokens.
    if (this.config.name === 'openai' || this.config.name === 'grok')
      params.max_completion_tokens = MAX_OUTPUT_TOKENS;
    else params.max_tokens = MAX_OUTPUT_TOKENS;
    if (format === 'json_schema') {
      params.response_format = {
        type: 'json_schema',
        json_schema: { name: VISION_ANSWER_SCHEMA_NAME, schema: visionAnswerSchema(), strict: true },
      };
    } else if (format === 'json_object') {
      params.response_format = { type: 'json_object' };
    }
    return params;
  }

  private toResult(completion: ChatCompletion, structured: boolean, model: string): VisionResult {
    const usage = {
      model: completion.model || model,
      inputTokens: completion.usage?.prompt_tokens ?? 0,
      outputTokens: completion.usage?.completion_tokens ?? 0,
    };
    return checkAnswer(usage, () => {
      const choice = completion.choices?.[0];
      if (!choice) throw new ProviderError(this.name, 'malformed', 'the response has no choices');
      const refusal = choice.message?.refusal;
      if (refusal)
        throw new ProviderError(this.name, 'malformed', `the model refused: ${refusal.slice(0, 200)}`);
      const text = (choice.message?.content ?? '').trim();
      if (!text) throw new ProviderError(this.name, 'malformed', 'the answer is empty');
      if (structured && choice.finish_reason === 'length') {
        throw new ProviderError(this.name, 'malformed', 'the answer was cut off at the token limit');
      }
      return { ...usage, answer: structured ? parseVisionAnswer(text, this.name) : null, text };
    });
  }

  private requireClient(): OpenAI {
    if (this.client) return this.client;
    throw notConfigured(this.name, this.baseUrl !== null);
  }
}
