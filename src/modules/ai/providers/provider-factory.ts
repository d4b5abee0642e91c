import { AnthropicProvider } from './anthropic-provider';
import { GeminiProvider } from './gemini-provider';
import { OpenAiProvider } from './openai-provider';
import type { ProviderConfig, VisionProvider } from './vision-provider';

export { PROVIDER_DEFAULTS, resolveBaseUrl, type ProviderDefaults } from './provider-defaults';

/**
 * The client for one provider's settings. It never throws and never calls the network: a provider that
 * lacks what it needs (API key, base URL, model) is still returned, and its `describe` fails with a
 * ProviderError of kind `not_configured`. The client keeps its SDK instance (and connections), so build a
 * new one only when the provider's settings change.
 */
export function createProvider(config: ProviderConfig): VisionProvider {
  switch (config.name) {
    case 'openai':
    case 'grok':
    case 'ollama':
    case 'openai_compatible':
      return new OpenAiProvider({ ...config, name: config.name });
    case 'anthropic':
      return new AnthropicProvider(config);
    case 'gemini':
      return new GeminiProvider(config);
  }
}
