import { DETECTION_TYPES, type DetectionType } from '../../events/entities/event.entity';
import type { AiProviderName } from '../../settings/settings.registry';
import { ProviderError, type VisionAnswer } from './vision-provider';

/** Limits of a valid answer; the JSON schema below asks for the same. */
export const MAX_DESCRIPTION_LENGTH = 2000;
export const MAX_OBJECTS = 20;
/** An object is a noun ("person", "delivery van"); anything longer is not an object name. */
export const MAX_OBJECT_LENGTH = 100;

/** Name of the JSON schema (OpenAI `json_schema.name`) and of the forced tool (Anthropic). */
export const VISION_ANSWER_SCHEMA_NAME = 'vision_answer';
export const VISION_ANSWER_TOOL_NAME = 'record_event_description';
export const VISION_ANSWER_TOOL_DESCRIPTION =
  'Record the description of the security camera image, its detection type, the objects in it and your confidence.';

/** A JSON schema node, as far as the answer schema uses it (plain data: every SDK accepts it as is). */
export type JsonSchema = {
  type: 'object' | 'string' | 'number' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  enum?: string[];
  items?: JsonSchema;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
};

/**
 * The answer as JSON schema. It keeps to the subset that OpenAI's strict structured outputs accept (every
 * property required, no additional properties, no string length limits: `parseVisionAnswer` checks those),
 * which Anthropic's tool input schemas and OpenAI-compatible servers (Ollama, vLLM, llama.cpp) accept too.
 * Gemini gets the same answer as a `responseSchema` (see the Gemini provider).
 */
export function visionAnswerSchema(): JsonSchema {
  return {
    type: 'object',
    description: 'What the security camera image shows.',
    properties: {
      description: {
        type: 'string',
        description: `One or two sentences describing what happens in the image (at most ${MAX_DESCRIPTION_LENGTH} characters).`,
      },
      detection_type: {
        type: 'string',
        enum: [...DETECTION_TYPES],
        description:
          'The most important thing in the image: person, vehicle, animal, package, face, license_plate, ' +
          'motion (movement without any of these), ring (someone at a doorbell) or unknown.',
      },
      objects_detected: {
        type: 'array',
        items: { type: 'string', description: 'A lower-case noun, e.g. "person", "car", "dog".' },
        maxItems: MAX_OBJECTS,
        description: `The things visible in the image, as lower-case nouns, at most ${MAX_OBJECTS}.`,
      },
      confidence: {
        type: 'number',
        minimum: 0,
        maximum: 100,
        description: 'How sure you are of the description, from 0 (guess) to 100 (certain).',
      },
    },
    required: ['description', 'detection_type', 'objects_detected', 'confidence'],
    additionalProperties: false,
  };
}

/**
 * Added to the prompt when an answer must be structured. Providers enforce the schema themselves, but a
 * server that only supports `json_object` (or ignores the schema) still needs to be told the fields, and
 * OpenAI's `json_object` mode requires the word JSON in the messages.
 */
export const STRUCTURED_ANSWER_INSTRUCTIONS =
  'Answer with a JSON object with exactly these fields: "description" (one or two sentences), ' +
  `"detection_type" (one of ${DETECTION_TYPES.map((t) => `"${t}"`).join(', ')}), ` +
  `"objects_detected" (an array of at most ${MAX_OBJECTS} lower-case nouns of what is visible) and ` +
  '"confidence" (a number from 0 to 100).';

/** The prompt text a client sends: with the answer instructions when a structured answer is asked for. */
export function promptText(request: { prompt: string; structured: boolean }): string {
  return request.structured ? `${request.prompt}\n\n${STRUCTURED_ANSWER_INSTRUCTIONS}` : request.prompt;
}

/**
 * Parses a provider's text answer as a VisionAnswer. A JSON object wrapped in one Markdown code fence
 * (which some OpenAI-compatible servers add in `json_object` mode) is accepted; everything else that is
 * not exactly a valid answer is a ProviderError of kind `malformed`.
 */
export function parseVisionAnswer(text: string, provider: AiProviderName): VisionAnswer {
  const json = stripCodeFence(text.trim());
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw malformed(provider, `the answer is not valid JSON: ${excerpt(text)}`);
  }
  return validateVisionAnswer(value, provider);
}

/**
 * Checks a parsed answer (an Anthropic tool input, or parsed JSON text) and returns it normalised:
 * description trimmed, detection type and objects lower-cased, confidence rounded to a whole number.
 * Properties other than the four are ignored. Nothing is guessed: a missing or invalid field is `malformed`.
 */
export function validateVisionAnswer(value: unknown, provider: AiProviderName): VisionAnswer {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw malformed(provider, 'the answer is not a JSON object');
  }
  const answer = value as Record<string, unknown>;
  return {
    description: description(answer.description, provider),
    detection_type: detectionType(answer.detection_type, provider),
    objects_detected: objects(answer.objects_detected, provider),
    confidence: confidence(answer.confidence, provider),
  };
}

function description(value: unknown, provider: AiProviderName): string {
  if (typeof value !== 'string') throw malformed(provider, '"description" is missing or not a string');
  const text = value.trim();
  if (text === '') throw malformed(provider, '"description" is empty');
  if (text.length > MAX_DESCRIPTION_LENGTH) {
    throw malformed(provider, `"description" is longer than ${MAX_DESCRIPTION_LENGTH} characters`);
  }
  return text;
}

function detectionType(value: unknown, provider: AiProviderName): DetectionType {
  if (typeof value !== 'string') throw malformed(provider, '"detection_type" is missing or not a string');
  const type = value.trim().toLowerCase();
  const known = DETECTION_TYPES.find((t) => t === type);
  if (!known) {
    throw malformed(
      provider,
      `"detection_type" ${JSON.stringify(excerpt(value, 40))} is not one of ${DETECTION_TYPES.join(', ')}`,
    );
  }
  return known;
}

function objects(value: unknown, provider: AiProviderName): string[] {
  if (!Array.isArray(value)) throw malformed(provider, '"objects_detected" is missing or not an array');
  if (value.length > MAX_OBJECTS) {
    throw malformed(provider, `"objects_detected" has ${value.length} entries, more than ${MAX_OBJECTS}`);
  }
  const names: string[] = [];
  for (const item of value) {
    if (typeof item !== 'string')
      throw malformed(provider, '"objects_detected" holds a value that is not a string');
    const name = item.trim().toLowerCase();
    if (name === '') throw malformed(provider, '"objects_detected" holds an empty name');
    if (name.length > MAX_OBJECT_LENGTH) {
      throw malformed(
        provider,
        `"objects_detected" holds a name longer than ${MAX_OBJECT_LENGTH} characters`,
      );
    }
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

function confidence(value: unknown, provider: AiProviderName): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw malformed(provider, '"confidence" is missing or not a number');
  }
  if (value < 0 || value > 100) throw malformed(provider, `"confidence" ${value} is not between 0 and 100`);
  return Math.round(value);
}

function stripCodeFence(text: string): string {
  const fenced = /^```(?:json)?\s*\n?([\s\S]*?)\n?```$/i.exec(text);
  return fenced ? fenced[1].trim() : text;
}

function malformed(provider: AiProviderName, message: string): ProviderError {
  return new ProviderError(provider, 'malformed', message);
}

/** The start of a model's text for an error message (answers are not secret, but can be long). */
function excerpt(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
