import { AI_PROVIDER_NAMES } from '../../settings/settings.registry';
import { costUsd, PRICES_PER_MILLION_TOKENS, priceOf } from './pricing';
import { PROVIDER_DEFAULTS } from './provider-defaults';

describe('costUsd', () => {
  it('prices input and output tokens per million', () => {
    // gpt-4o-mini: $0.15 in, $0.60 out per 1M tokens.
    expect(costUsd('openai', 'gpt-4o-mini', 1_000_000, 0)).toBe(0.15);
    expect(costUsd('openai', 'gpt-4o-mini', 0, 1_000_000)).toBe(0.6);
    expect(costUsd('openai', 'gpt-4o-mini', 1500, 80)).toBe(0.000273);
    expect(costUsd('anthropic', 'claude-sonnet-4', 2000, 100)).toBe(0.0075);
    expect(costUsd('gemini', 'gemini-2.0-flash', 10_000, 1_000)).toBe(0.0014);
    expect(costUsd('grok', 'grok-2-vision', 1000, 1000)).toBe(0.012);
  });

  it('recognises dated and versioned names by the longest matching model', () => {
    expect(priceOf('openai', 'gpt-4o-mini-2024-07-18')).toEqual(
      PRICES_PER_MILLION_TOKENS.openai['gpt-4o-mini'],
    );
    expect(priceOf('openai', 'gpt-4o-2024-08-06')).toEqual(PRICES_PER_MILLION_TOKENS.openai['gpt-4o']);
    expect(priceOf('openai', 'gpt-4.1-mini-2025-04-14')).toEqual(
      PRICES_PER_MILLION_TOKENS.openai['gpt-4.1-mini'],
    );
    expect(priceOf('anthropic', 'claude-3-5-haiku-20241022')).toEqual(
      PRICES_PER_MILLION_TOKENS.anthropic['claude-3-5-haiku'],
    );
    expect(priceOf('anthropic', 'claude-haiku-4-5-20251001')).toEqual(
      PRICES_PER_MILLION_TOKENS.anthropic['claude-haiku-4-5'],
    );
    expect(priceOf('anthropic', 'claude-sonnet-4-20250514')).toEqual(
      PRICES_PER_MILLION_TOKENS.anthropic['claude-sonnet-4'],
    );
    expect(priceOf('gemini', 'models/gemini-2.5-flash')).toEqual(
      PRICES_PER_MILLION_TOKENS.gemini['gemini-2.5-flash'],
    );
    expect(priceOf('gemini', 'gemini-2.5-flash-lite')).toEqual(
      PRICES_PER_MILLION_TOKENS.gemini['gemini-2.5-flash-lite'],
    );
    expect(priceOf('grok', 'grok-2-vision-1212')).toEqual(PRICES_PER_MILLION_TOKENS.grok['grok-2-vision']);
  });

  it("prices an unknown model like the provider's default model", () => {
    for (const name of ['openai', 'anthropic', 'gemini', 'grok'] as const) {
      const defaultPrice = PRICES_PER_MILLION_TOKENS[name][PROVIDER_DEFAULTS[name].defaultModel];
      expect(defaultPrice).toBeDefined();
      expect(priceOf(name, 'some-future-model')).toEqual(defaultPrice);
    }
    // A name that merely starts like a known one is not that model.
    expect(priceOf('openai', 'gpt-4oz')).toEqual(PRICES_PER_MILLION_TOKENS.openai['gpt-4o-mini']);
  });

  it('is 0 for Ollama and OpenAI-compatible servers, whatever the model', () => {
    expect(costUsd('ollama', 'llava', 5_000_000, 5_000_000)).toBe(0);
    expect(costUsd('openai_compatible', 'gpt-4o', 5_000_000, 5_000_000)).toBe(0);
  });

  it('has a price for every default model and never a negative cost', () => {
    for (const name of AI_PROVIDER_NAMES) {
      expect(costUsd(name, PROVIDER_DEFAULTS[name].defaultModel, 1000, 100)).toBeGreaterThanOrEqual(0);
    }
    expect(costUsd('openai', 'gpt-4o', -5, -5)).toBe(0);
  });
});
