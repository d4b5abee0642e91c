import type { AiProviderName } from '../../settings/settings.registry';
import { PROVIDER_DEFAULTS } from './provider-defaults';

/** US dollars per million tokens, standard (not batch, not cached) tier. */
export interface TokenPrice {
  input: number;
  output: number;
}

/**
 * List prices of the providers' vision models, from their pricing pages (USD per 1M tokens, standard tier,
 * prompts under 200k tokens). Keys are model names without a date or version suffix: a model reported as
 * `gpt-4o-mini-2024-07-18` or `claude-3-5-haiku-20241022` is priced by the longest key it starts with
 * (followed by `-` or nothing), so `gpt-4o-mini-…` is never priced as `gpt-4o`.
 *
 * Ollama and other OpenAI-compatible servers run on the user's hardware (or a service we know nothing about)
 * and always cost 0.
 */
export const PRICES_PER_MILLION_TOKENS: Record<
  'openai' | 'anthropic' | 'gemini' | 'grok',
  Record<string, TokenPrice>
> = {
  openai: {
    'gpt-4o-mini': { input: 0.15, output: 0.6 },
    'gpt-4o': { input: 2.5, output: 10 },
    'gpt-4.1-nano': { input: 0.1, output: 0.4 },
    'gpt-4.1-mini': { input: 0.4, output: 1.6 },
    'gpt-4.1': { input: 2, output: 8 },
    'gpt-5-nano': { input: 0.05, output: 0.4 },
    'gpt-5-mini': { input: 0.25, output: 2 },
    'gpt-5': { input: 1.25, output: 10 },
    'o4-mini': { input: 1.1, output: 4.4 },
  },
  anthropic: {
    'claude-3-haiku': { input: 0.25, output: 1.25 },
    'claude-3-5-haiku': { input: 0.8, output: 4 },
    'claude-haiku-4-5': { input: 1, output: 5 },
    'claude-3-5-sonnet': { input: 3, output: 15 },
    'claude-3-7-sonnet': { input: 3, output: 15 },
    'claude-sonnet-4': { input: 3, output: 15 },
    'claude-sonnet-4-5': { input: 3, output: 15 },
    'claude-opus-4': { input: 15, output: 75 },
    'claude-opus-4-1': { input: 15, output: 75 },
    'claude-opus-4-5': { input: 5, output: 25 },
  },
  gemini: {
    'gemini-1.5-flash': { input: 0.075, output: 0.3 },
    'gemini-2.0-flash-lite': { input: 0.075, output: 0.3 },
    'gemini-2.0-flash': { input: 0.1, output: 0.4 },
    'gemini-2.5-flash-lite': { input: 0.1, output: 0.4 },
    'gemini-2.5-flash': { input: 0.3, output: 2.5 },
    'gemini-2.5-pro': { input: 1.25, output: 10 },
  },
  grok: {
    'grok-2-vision': { input: 2, output: 10 },
    'grok-4-fast': { input: 0.2, output: 0.5 },
    'grok-4-1-fast': { input: 0.2, output: 0.5 },
    'grok-4': { input: 3, output: 15 },
  },
};

/**
 * The price table entry used for a model: its own or, for a model missing from the table, the price of the
 * provider's default model (PROVIDER_DEFAULTS). An unknown model is thereby priced like the model Vigil
 * would otherwise use rather than as free, so that cost caps keep working.
 */
export function priceOf(provider: AiProviderName, model: string): TokenPrice {
  if (provider === 'ollama' || provider === 'openai_compatible') return { input: 0, output: 0 };
  const table = PRICES_PER_MILLION_TOKENS[provider];
  const name = model
    .trim()
    .toLowerCase()
    .replace(/^models\//, ''); // Gemini reports `models/…` at times
  let best: string | null = null;
  for (const key of Object.keys(table)) {
    const matches = name === key || name.startsWith(`${key}-`);
    if (matches && (best === null || key.length > best.length)) best = key;
  }
  return table[best ?? PROVIDER_DEFAULTS[provider].defaultModel];
}

/**
 * What one call cost in US dollars: input and output tokens at the model's list price (see priceOf for
 * unknown models; always 0 for Ollama and OpenAI-compatible servers), rounded to 6 decimals like the
 * `cost_usd` columns.
 */
export function costUsd(
  provider: AiProviderName,
  model: string,
  inputTokens: number,
  outputTokens: number,
): number {
  const price = priceOf(provider, model);
  const dollars =
    (Math.max(0, inputTokens) * price.input + Math.max(0, outputTokens) * price.output) / 1_000_000;
  return Math.round(dollars * 1_000_000) / 1_000_000;
}
