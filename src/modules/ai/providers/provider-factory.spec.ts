import { AnthropicProvider } from './anthropic-provider';
import { GeminiProvider } from './gemini-provider';
import { OpenAiProvider } from './openai-provider';
import { createProvider, PROVIDER_DEFAULTS } from './provider-factory';
import { ProviderError, type ProviderConfig } from './vision-provider';

const config = (overrides: Partial<ProviderConfig> & Pick<ProviderConfig, 'name'>): ProviderConfig => ({
  apiKey: 'key-1234567890',
  model: '',
  baseUrl: null,
  timeoutMs: 30000,
  ...overrides,
});

const request = {
  image: Buffer.from([0xff, 0xd8, 0xff, 0xd9]),
  mimeType: 'image/jpeg' as const,
  prompt: 'Describe.',
  structured: true,
  model: '',
  timeoutMs: 1000,
};

describe('createProvider', () => {
  it('builds the client of each provider with its name, default model and capabilities', () => {
    const cases = [
      ['openai', OpenAiProvider],
      ['grok', OpenAiProvider],
      ['ollama', OpenAiProvider],
      ['openai_compatible', OpenAiProvider],
      ['anthropic', AnthropicProvider],
      ['gemini', GeminiProvider],
    ] as const;
    for (const [name, type] of cases) {
      const provider = createProvider(config({ name }));
      expect(provider).toBeInstanceOf(type);
      expect(provider.name).toBe(name);
      expect(provider.defaultModel).toBe(PROVIDER_DEFAULTS[name].defaultModel);
      expect(provider.capabilities.vision).toBe(true);
    }
  });

  it('decides from the base URL whether an OpenAI-compatible server is local', () => {
    const local = createProvider(
      config({ name: 'openai_compatible', baseUrl: 'http://192.168.1.9:1234/v1' }),
    );
    const remote = createProvider(
      config({ name: 'openai_compatible', baseUrl: 'https://openrouter.ai/api/v1' }),
    );
    expect(local.capabilities.local).toBe(true);
    expect(remote.capabilities.local).toBe(false);
  });

  it.each([
    ['openai without a key', config({ name: 'openai', apiKey: null }), 'no API key'],
    ['anthropic with a blank key', config({ name: 'anthropic', apiKey: '  ' }), 'no API key'],
    ['gemini without a key', config({ name: 'gemini', apiKey: null }), 'no API key'],
    [
      'openai_compatible without a base URL',
      config({ name: 'openai_compatible', model: 'm' }),
      'no valid base URL',
    ],
    [
      'openai_compatible without a model',
      config({ name: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1' }),
      'no model',
    ],
  ])('%s fails with not_configured before any request', async (_what, cfg, message) => {
    const error = await createProvider(cfg)
      .describe(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'not_configured', message: expect.stringContaining(message) });
  });
});
