import {
  bool,
  decimal,
  distinctList,
  httpUrl,
  integer,
  nullable,
  object,
  secret,
  SettingType,
  text,
  timeZone,
  ValueOf,
} from './setting-types';

/**
 * The registry: every runtime setting of Vigil, in one place. Each entry has its key (the object key),
 * a description, its type (validation, secret parts, OpenAPI schema) and its default. Only values that
 * differ from the default are stored (table `settings`); GET /system/settings shows every setting with
 * defaults filled in. Modules read values with `SettingsService.get(key)`.
 */

export const AI_PROVIDER_NAMES = [
  'openai',
  'anthropic',
  'gemini',
  'grok',
  'ollama',
  'openai_compatible',
] as const;
export type AiProviderName = (typeof AI_PROVIDER_NAMES)[number];

const aiProvider = object('AiProviderSettings', 'Settings of one AI vision provider.', {
  enabled: bool('Use this provider (in the order of `ai_provider_order`).'),
  api_key: secret(
    'API key of the provider (not needed for Ollama and most OpenAI-compatible servers).',
    1000,
  ),
  model: text({
    description: "Model name. Empty: the provider's default model.",
    maxLength: 200,
    example: 'gpt-4o-mini',
  }),
  base_url: nullable(
    httpUrl(
      'Base URL of the API, for Ollama, OpenAI-compatible servers and proxies.',
      'http://127.0.0.1:11434',
    ),
    "the provider's official endpoint (Ollama: http://localhost:11434)",
  ),
  timeout_ms: integer({
    description: 'How long one request may take before the next provider is tried, in milliseconds.',
    min: 1000,
    max: 120000,
    example: 30000,
  }),
});

export type AiProviderSettings = ValueOf<typeof aiProvider>;

const providerDefaults = (model: string): AiProviderSettings => ({
  enabled: false,
  api_key: null,
  model,
  base_url: null,
  timeout_ms: 30000,
});

export const DEFAULT_AI_PROMPT =
  'Describe what happens in this security camera image in one or two short sentences. ' +
  'Name the people, vehicles, animals and packages you see, what they are doing and where they are in the ' +
  'scene. Mention clothing, colours and vehicle types when they help to tell who or what it is. ' +
  'Do not speculate about identities and do not describe parts of the scene that are not there.';

/** The zone of this process (TZ), else UTC. */
function processTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

interface SettingDefinition<T> {
  description: string;
  type: SettingType<T>;
  default: T;
}

const define = <T>(definition: SettingDefinition<T>) => definition;

export const SETTINGS = {
  ai_providers: define({
    description:
      'AI vision providers by name. A PUT may set only some fields of one provider; the rest are kept.',
    type: object('AiProvidersSettings', 'AI vision providers by name.', {
      openai: aiProvider,
      anthropic: aiProvider,
      gemini: aiProvider,
      grok: aiProvider,
      ollama: aiProvider,
      openai_compatible: aiProvider,
    }),
    default: {
      openai: providerDefaults('gpt-4o-mini'),
      anthropic: providerDefaults('claude-haiku-4-5'),
      gemini: providerDefaults('gemini-2.5-flash'),
      grok: providerDefaults('grok-4'),
      ollama: providerDefaults('llava'),
      openai_compatible: providerDefaults(''),
    },
  }),
  ai_provider_order: define({
    description: 'The order in which enabled providers are tried; each later one takes over when one fails.',
    type: distinctList(AI_PROVIDER_NAMES, 'Each name at most once; an empty list turns AI off.'),
    default: [...AI_PROVIDER_NAMES],
  }),
  ai_prompt: define({
    description:
      "The prompt that asks for an event's description (a camera's `prompt_override` is added to it).",
    type: text({
      description: '',
      minLength: 1,
      maxLength: 4000,
      multiline: true,
      example: DEFAULT_AI_PROMPT,
    }),
    default: DEFAULT_AI_PROMPT,
  }),
  ai_context_enabled: define({
    description: "Add a short summary of the camera's recent events to the prompt.",
    type: bool(''),
    default: true,
  }),
  ai_daily_cost_cap_usd: define({
    description: 'AI pauses for the rest of the day (UTC) once this much was spent today, in US dollars.',
    type: nullable(decimal({ description: '', min: 0, max: 1_000_000, example: 1.5 }), 'no cap'),
    default: null,
  }),
  ai_monthly_cost_cap_usd: define({
    description:
      'AI pauses for the rest of the month (UTC) once this much was spent this month, in US dollars.',
    type: nullable(decimal({ description: '', min: 0, max: 1_000_000, example: 30 }), 'no cap'),
    default: null,
  }),
  timezone: define({
    description: 'IANA time zone for local times (in AI prompts). Default: the zone of the server process.',
    type: timeZone('', 'Europe/Berlin'),
    default: processTimeZone(),
  }),
  event_retention_days: define({
    description:
      'Events older than this many days are deleted with their images (checked hourly and when this changes).',
    type: nullable(integer({ description: '', min: 1, max: 3650, example: 30 }), 'keep forever'),
    default: null,
  }),
} satisfies Record<string, SettingDefinition<unknown>>;

export type SettingKey = keyof typeof SETTINGS;
export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

/** The value type of each setting. */
export type SettingValues = { [K in SettingKey]: ValueOf<(typeof SETTINGS)[K]['type']> };

export const isSettingKey = (key: string): key is SettingKey => Object.hasOwn(SETTINGS, key);
