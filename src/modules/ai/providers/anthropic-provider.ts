import Anthropic from '@anthropic-ai/sdk';
import type { Message, MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';
import type { AiProviderName } from '../../settings/settings.registry';
import {
  promptText,
  validateVisionAnswer,
  VISION_ANSWER_TOOL_DESCRIPTION,
  VISION_ANSWER_TOOL_NAME,
  visionAnswerSchema,
} from './answer-schema';
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

/** Anthropic requires a limit; enough for one or two sentences and the tool input around them. */
const MAX_OUTPUT_TOKENS = 1024;

/**
 * Anthropic's Messages API through the official `@anthropic-ai/sdk`. The image goes as a base64 `image`
 * block; a structured answer is obtained by forcing one tool (`tool_choice: {type: 'tool'}`) whose input
 * schema is the answer schema, and the answer is that tool call's input.
 */
export class AnthropicProvider implements VisionProvider {
  readonly name: AiProviderName = 'anthropic';
  readonly capabilities: ProviderCapabilities = PROVIDER_DEFAULTS.anthropic.capabilities;
  readonly defaultModel = PROVIDER_DEFAULTS.anthropic.defaultModel;
  private readonly client: Anthropic | null;
  private readonly errorContext: ErrorContext;

  constructor(private readonly config: ProviderConfig) {
    const apiKey = config.apiKey?.trim() || null;
    const baseUrl = resolveBaseUrl('anthropic', config.baseUrl);
    this.errorContext = {
      provider: 'anthropic',
      apiKey,
      baseUrl: baseUrl ?? '',
      timeoutErrors: [Anthropic.APIConnectionTimeoutError, Anthropic.APIUserAbortError],
      connectionErrors: [Anthropic.APIConnectionError],
    };
    // An explicit key and base URL: the SDK then reads no ANTHROPIC_* variable and no credential files.
    this.client =
      apiKey && baseUrl
        ? new Anthropic({
            apiKey,
            baseURL: baseUrl,
            maxRetries: 0,
            timeout: config.timeoutMs,
            logLevel: 'off',
          })
        : null;
  }

  async describe(request: VisionRequest): Promise<VisionResult> {
    const client = this.client;
    if (!client) throw notConfigured(this.name, Boolean(this.errorContext.baseUrl));
    const model = callModel(request, this.config, this.defaultModel);
    return providerCall(this.name, request, this.config, this.errorContext, async (signal, timeoutMs) => {
      const message = await client.messages.create(this.params(request, model), {
        signal,
        timeout: timeoutMs,
        maxRetries: 0,
      });
      return this.toResult(message, request.structured, model);
    });
  }

  private params(request: VisionRequest, model: string): MessageCreateParamsNonStreaming {
    const prompt = promptText(request);
    const params: MessageCreateParamsNonStreaming = {
      model,
      max_tokens: MAX_OUTPUT_TOKENS,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'image',
              source: {
                type: 'base64',
                media_type: request.mimeType,
                data: request.image.toString('base64'),
              },
            },
            { type: 'text', text: prompt },
          ],
        },
      ],
    };
    if (request.structured) {
      params.tools = [
        {
          name: VISION_ANSWER_TOOL_NAME,
          description: VISION_ANSWER_TOOL_DESCRIPTION,
          input_schema: { ...visionAnswerSchema(), type: 'object' },
        },
      ];
      params.tool_choice = { type: 'tool', name: VISION_ANSWER_TOOL_NAME };
    }
    return params;
  }

  private toResult(message: Message, structured: boolean, model: string): VisionResult {
    const usage = message.usage;
    const used = {
      model: message.model || model,
      // Cache reads and writes are input too (billed at other rates; Vigil sets no cache breakpoints).
      inputTokens:
        (usage?.input_tokens ?? 0) +
        (usage?.cache_creation_input_tokens ?? 0) +
        (usage?.cache_read_input_tokens ?? 0),
      outputTokens: usage?.output_tokens ?? 0,
    };
    return checkAnswer(used, () => {
      if (message.stop_reason === 'refusal') {
        throw new ProviderError(this.name, 'malformed', 'the model refused to answer');
      }
      const blocks = Array.isArray(message.content) ? message.content : [];
      if (structured) {
        const call = blocks.find(
          (block) => block.type === 'tool_use' && block.name === VISION_ANSWER_TOOL_NAME,
        );
        if (!call || call.type !== 'tool_use') {
          throw new ProviderError(
            this.name,
            'malformed',
            `the answer has no ${VISION_ANSWER_TOOL_NAME} tool call`,
          );
        }
        const answer = validateVisionAnswer(call.input, this.name);
        return { ...used, answer, text: JSON.stringify(call.input) };
      }
      const text = blocks
        .flatMap((block) => (block.type === 'text' ? [block.text] : []))
        .join('\n')
        .trim();
      if (!text) throw new ProviderError(this.name, 'malformed', 'the answer is empty');
      return { ...used, answer: null, text };
    });
  }
}
