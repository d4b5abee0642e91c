import type { AiProviderName } from '../../settings/settings.registry';

/**
 * The contract between the AI service and the provider clients. A client turns one request into one call of
 * its provider's official SDK and returns what the provider said, parsed and validated, with its usage.
 * Clients never retry, never fall back and never record anything: the AI service does (fallback chain,
 * circuit breakers, ledger, cost caps).
 */

/** What a description must say. Asked for as structured output (JSON schema / tool / response schema). */
export interface VisionAnswer {
  /** One or two sentences. */
  description: string;
  /** One of the event detection types (person, vehicle, animal, package, face, license_plate, motion, ring, unknown). */
  detection_type: string;
  /** Lower-case nouns of what is visible ("person", "car", "dog"), at most 20. */
  objects_detected: string[];
  /** The model's own confidence in its description, 0..100. */
  confidence: number;
}

export interface VisionRequest {
  /** JPEG bytes (PNG also accepted by every provider). */
  image: Buffer;
  mimeType: 'image/jpeg' | 'image/png';
  /** The instructions: default or configured prompt, camera override, camera name, local time, context. */
  prompt: string;
  /** When true, the answer must follow VisionAnswer (structured output); false: free text (refine-prompt). */
  structured: boolean;
  model: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface VisionResult {
  /** Set when `structured`; validated (a malformed answer is a ProviderError of kind `malformed`). */
  answer: VisionAnswer | null;
  /** The raw text answer (the JSON text when structured). */
  text: string;
  /** The model that answered (as the provider reports it). */
  model: string;
  inputTokens: number;
  outputTokens: number;
}

export type ProviderErrorKind =
  'timeout' | 'rate_limited' | 'auth' | 'server' | 'bad_request' | 'malformed' | 'network' | 'not_configured';

/** Every failure of a client is one of these; `message` never contains the API key. */
export class ProviderError extends Error {
  constructor(
    readonly provider: AiProviderName,
    readonly kind: ProviderErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface ProviderCapabilities {
  vision: boolean;
  max_images: number;
  max_image_bytes: number;
  structured_output: boolean;
  video: boolean;
  streaming: boolean;
  /** Runs on the user's own hardware (images never leave the network). */
  local: boolean;
}

/** Settings a client is built from (the provider's entry in `ai_providers`, api key decrypted). */
export interface ProviderConfig {
  name: AiProviderName;
  apiKey: string | null;
  model: string;
  /** null: the provider's official endpoint. */
  baseUrl: string | null;
  timeoutMs: number;
}

export interface VisionProvider {
  readonly name: AiProviderName;
  readonly capabilities: ProviderCapabilities;
  /** The model used when the settings leave `model` empty. */
  readonly defaultModel: string;
  describe(request: VisionRequest): Promise<VisionResult>;
}
