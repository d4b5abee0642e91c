import {
  ApiError,
  FinishReason,
  GoogleGenAI,
  Type,
  type GenerateContentResponse,
  type Schema,
} from '@google/genai';
import type { AiProviderName } from '../../settings/settings.registry';
import { parseVisionAnswer, promptText, visionAnswerSchema, type JsonSchema } from './answer-schema';
import { callModel, notConfigured, providerCall } from './call-deadline';
import { PROVIDER_DEFAULTS, resolveBaseUrl } from './provider-defaults';
import { checkAnswer, type ErrorContext } from './provider-errors';
import {
  ProviderError,
  type ProviderCapabilities,
  type ProviderConfig,
  type VisionProvider,
  type VisionRequest,
  type VisionResult,
} from './vision-provider';

const SCHEMA_TYPES: Record<JsonSchema['type'], Type> = {
  object: Type.OBJECT,
  string: Type.STRING,
  number: Type.NUMBER,
  array: Type.ARRAY,
};

/**
 * The answer schema in Gemini's `responseSchema` dialect (an OpenAPI subset): upper-case types, counts as
 * strings, `format: 'enum'` for enums, `propertyOrdering` for a stable field order, no additionalProperties.
 */
export function geminiAnswerSchema(schema: JsonSchema = visionAnswerSchema()): Schema {
  const out: Schema = { type: SCHEMA_TYPES[schema.type] };
  if (schema.description) out.description = schema.description;
  if (schema.enum) {
    out.enum = [...schema.enum];
    out.format = 'enum';
  }
  if (schema.items) out.items = geminiAnswerSchema(schema.items);
  if (schema.maxItems !== undefined) out.maxItems = String(schema.maxItems);
  if (schema.minimum !== undefined) out.minimum = schema.minimum;
  if (schema.maximum !== undefined) out.maximum = schema.maximum;
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([key, value]) => [key, geminiAnswerSchema(value)]),
    );
    out.propertyOrdering = Object.keys(schema.properties);
  }
  if (schema.required) out.required = [...schema.required];
  return out;
}

/** Gemini answers a wrong API key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), not 401. */
function isInvalidKeyError(err: unknown): boolean {
  return (
    err instanceof ApiError && err.status === 400 && /API_KEY_INVALID|API key not valid/i.test(err.message)
  );
}

/**
 * Google's Gemini API (generateContent) through the official `@google/genai` SDK. The image goes as an
 * `inlineData` part; a structured answer is asked for with `responseMimeType: 'application/json'` and a
 * `responseSchema`, and arrives as the JSON text of the first candidate.
 */
export class GeminiProvider implements VisionProvider {
  readonly name: AiProviderName = 'gemini';
  readonly capabilities: ProviderCapabilities = PROVIDER_DEFAULTS.gemini.capabilities;
  readonly defaultModel = PROVIDER_DEFAULTS.gemini.defaultModel;
  private readonly client: GoogleGenAI | null;
  private readonly errorContext: ErrorContext;

  constructor(private readonly config: ProviderConfig) {
    const apiKey = config.apiKey?.trim() || null;
    const baseUrl = resolveBaseUrl('gemini', config.baseUrl);
    this.errorContext = { provider: 'gemini', apiKey, baseUrl: baseUrl ?? '' };
    // Explicit key, backend and base URL: no GOOGLE_* / GEMINI_* variable applies. Without retryOptions the
    // SDK makes exactly one attempt. `fetch` is given so that the SDK keeps to plain fetch: otherwise it
    // routes requests through Undici's global dispatcher (only to lift Undici's 300 s timeouts, far above
    // any timeout_ms), which it cannot find from a VM context such as Jest's.
    this.client =
      apiKey && baseUrl
        ? new GoogleGenAI({
            apiKey,
            vertexai: false,
            httpOptions: { baseUrl, timeout: config.timeoutMs, fetch: (input, init) => fetch(input, init) },
          })
        : null;
  }

  async describe(request: VisionRequest): Promise<VisionResult> {
    const client = this.client;
    if (!client) throw notConfigured(this.name, Boolean(this.errorContext.baseUrl));
    const model = callModel(request, this.config, this.defaultModel);
    return providerCall(this.name, request, this.config, this.errorContext, async (signal, timeoutMs) => {
      try {
        const prompt = promptText(request);
        const response = await client.models.generateContent({
          model,
          contents: [
            {
              role: 'user',
              parts: [
                { text: prompt },
                { inlineData: { mimeType: request.mimeType, data: request.image.toString('base64') } },
              ],
            },
          ],
          config: {
            abortSignal: signal,
            httpOptions: { timeout: timeoutMs },
            ...(request.structured
              ? { responseMimeType: 'application/json', responseSchema: geminiAnswerSchema() }
              : {}),
          },
        });
        return this.toResult(response, request.structured, model);
      } catch (err) {
        if (isInvalidKeyError(err)) {
          throw new ProviderError(
            this.name,
            'auth',
            'authentication failed (HTTP 400): API key not valid',
            400,
          );
        }
        throw err;
      }
    });
  }

  private toResult(response: GenerateContentResponse, structured: boolean, model: string): VisionResult {
    const usage = response.usageMetadata;
    const used = {
      model: response.modelVersion || model,
      inputTokens: usage?.promptTokenCount ?? 0,
      // Thinking tokens are billed as output.
      outputTokens: (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0),
    };
    return checkAnswer(used, () => {
      const blocked = response.promptFeedback?.blockReason;
      if (blocked) throw new ProviderError(this.name, 'malformed', `the request was blocked (${blocked})`);
      const candidate = response.candidates?.[0];
      // Thought summaries are parts too; the answer is the text of the others.
      const text = (candidate?.content?.parts ?? [])
        .flatMap((part) => (typeof part.text === 'string' && !part.thought ? [part.text] : []))
        .join('')
        .trim();
      if (!text) {
        const reason = candidate?.finishReason ? ` (finish reason ${candidate.finishReason})` : '';
        throw new ProviderError(this.name, 'malformed', `the answer is empty${reason}`);
      }
      if (structured && candidate?.finishReason === FinishReason.MAX_TOKENS) {
        throw new ProviderError(this.name, 'malformed', 'the answer was cut off at the token limit');
      }
      return { ...used, answer: structured ? parseVisionAnswer(text, this.name) : null, text };
    });
  }
}
