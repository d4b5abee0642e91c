import { SETTINGS, type AiProviderName } from '../../settings/settings.registry';
import type { ProviderCapabilities } from './vision-provider';

/** The SDK a provider is spoken to with. */
export type ProviderProtocol = 'openai' | 'anthropic' | 'gemini';

export interface ProviderDefaults {
  /** Shown in messages ("OpenAI", "Ollama"). */
  label: string;
  protocol: ProviderProtocol;
  /** The model used when the settings leave `model` empty (the settings' own default). '' = none. */
  defaultModel: string;
  /** The endpoint used when the settings leave `base_url` null; null: a base URL must be configured. */
  baseUrl: string | null;
  /** false: the server is called without a key unless one is configured. */
  requiresApiKey: boolean;
  capabilities: ProviderCapabilities;
}

const MIB = 1024 * 1024;

/** Ollama's OpenAI-compatible API, where the settings name only the server (http://localhost:11434). */
export const OLLAMA_DEFAULT_BASE_URL = 'http://localhost:11434/v1';

const defaultModel = (name: AiProviderName): string => SETTINGS.ai_providers.default[name].model;

/**
 * What each provider is and can do, from its documentation. Limits are per request: max_images is how many
 * images one request may carry, max_image_bytes the size of one image.
 */
export const PROVIDER_DEFAULTS: Readonly<Record<AiProviderName, ProviderDefaults>> = {
  openai: {
    label: 'OpenAI',
    protocol: 'openai',
    defaultModel: defaultModel('openai'),
    baseUrl: 'https://api.openai.com/v1',
    requiresApiKey: true,
    capabilities: {
      vision: true,
      max_images: 500,
      max_image_bytes: 20 * MIB,
      structured_output: true,
      video: false,
      streaming: true,
      local: false,
    },
  },
  anthropic: {
    label: 'Anthropic',
    protocol: 'anthropic',
    defaultModel: defaultModel('anthropic'),
    baseUrl: 'https://api.anthropic.com',
    requiresApiKey: true,
    capabilities: {
      vision: true,
      max_images: 100,
      max_image_bytes: 5 * MIB,
      structured_output: true,
      video: false,
      streaming: true,
      local: false,
    },
  },
  gemini: {
    label: 'Google Gemini',
    protocol: 'gemini',
    defaultModel: defaultModel('gemini'),
    baseUrl: 'https://generativelanguage.googleapis.com',
    requiresApiKey: true,
    capabilities: {
      vision: true,
      max_images: 3600,
      // Inline image data: the whole request may be at most 20 MB.
      max_image_bytes: 20 * MIB,
      structured_output: true,
      video: true,
      streaming: true,
      local: false,
    },
  },
  grok: {
    label: 'xAI Grok',
    protocol: 'openai',
    defaultModel: defaultModel('grok'),
    baseUrl: 'https://api.x.ai/v1',
    requiresApiKey: true,
    capabilities: {
      vision: true,
      // xAI documents no limit on the number of images; this is a practical bound, not theirs.
      max_images: 10,
      max_image_bytes: 10 * MIB,
      structured_output: true,
      video: false,
      streaming: true,
      local: false,
    },
  },
  ollama: {
    label: 'Ollama',
    protocol: 'openai',
    defaultModel: defaultModel('ollama'),
    baseUrl: OLLAMA_DEFAULT_BASE_URL,
    requiresApiKey: false,
    capabilities: {
      vision: true,
      // Most local vision models (llava, llama3.2-vision) take one image per request.
      max_images: 1,
      max_image_bytes: 20 * MIB,
      structured_output: true,
      video: false,
      streaming: true,
      local: true,
    },
  },
  openai_compatible: {
    label: 'OpenAI-compatible server',
    protocol: 'openai',
    defaultModel: defaultModel('openai_compatible'),
    baseUrl: null,
    requiresApiKey: false,
    capabilities: {
      vision: true,
      max_images: 1,
      max_image_bytes: 20 * MIB,
      structured_output: true,
      video: false,
      streaming: true,
      // Decided per configuration from the base URL's host (see isLocalBaseUrl).
      local: false,
    },
  },
};

/**
 * The base URL a client is built with: the configured one, else the provider's official endpoint. Ollama's
 * setting names the server (http://host:11434): its OpenAI-compatible API is under /v1, added when the
 * configured URL has no path. Trailing slashes are dropped (the SDKs add their own). null: none, or not
 * an http(s) URL.
 */
export function resolveBaseUrl(name: AiProviderName, configured: string | null): string | null {
  const raw = configured?.trim() || PROVIDER_DEFAULTS[name].baseUrl;
  if (!raw) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  const url = raw.replace(/\/+$/, '');
  if (name === 'ollama' && (parsed.pathname === '' || parsed.pathname === '/')) return `${url}/v1`;
  return url;
}

/**
 * Whether a server at this base URL is on the user's own network: loopback, private IPv4 ranges, IPv6
 * unique-local / link-local addresses, and single-label or .local/.lan/.home.arpa host names.
 */
export function isLocalBaseUrl(baseUrl: string): boolean {
  let host: string;
  try {
    host = new URL(baseUrl).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host.startsWith('[')) host = host.slice(1, -1);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return (
      a === 127 ||
      a === 10 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254)
    );
  }
  if (host.includes(':')) return host === '::1' || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  return !host.includes('.') || /\.(local|lan|internal|home\.arpa)$/.test(host);
}
