import type { AiProviderName } from '../settings/settings.registry';
import { MAX_PROMPT_LENGTH } from './dto/ai.dto';
import type { RatedDescription } from './ai.repository';
import { ProviderError } from './providers/vision-provider';

/** Rated descriptions a refinement learns from (the newest). */
export const REFINE_MAX_RATINGS = 30;
/** Each description and correction is cut to this many characters in the request. */
export const REFINE_TEXT_MAX_CHARS = 300;

/**
 * A 16x16 plain grey JPEG (ffmpeg `color=c=gray:s=16x16`): the provider contract always sends an image, and
 * a refinement has none to send. The instructions tell the model to ignore it.
 */
export const BLANK_JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgUFBcUFxsbGxsbGyAeICEhISAgICAhISEkJCQqKiokJCQhISQkKCgqKi4vLisrKisvLzIyMjw8OTlGRkhWVmf/xABKAAEAAAAAAAAAAAAAAAAAAAAAAQEAAAAAAAAAAAAAAAAAAAAAEAEAAAAAAAAAAAAAAAAAAAAAEQEAAAAAAAAAAAAAAAAAAAAA/8AAEQgAEAAQAwEiAAIRAAMRAP/aAAwDAQACEQMRAD8AAA//2Q==',
  'base64',
);

const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
};

/** The request to the model: the current prompt, the ratings, and the answer format. */
export function buildRefineRequest(currentPrompt: string, ratings: RatedDescription[]): string {
  const lines = ratings.map((r, i) => {
    const verdict = r.rating === 'helpful' ? 'HELPFUL' : 'NOT HELPFUL';
    const correction = r.correction
      ? ` | User's correction: "${oneLine(r.correction, REFINE_TEXT_MAX_CHARS)}"`
      : '';
    return `${i + 1}. [${verdict}] (${r.detectionType}) "${oneLine(r.description, REFINE_TEXT_MAX_CHARS)}"${correction}`;
  });
  return [
    'You improve the prompt that a home security camera system gives a vision model to describe camera images. ' +
      'The attached image is a blank placeholder: ignore it.',
    `The current prompt:\n<current_prompt>\n${currentPrompt}\n</current_prompt>`,
    `Users rated descriptions written with it (newest first):\n${lines.join('\n')}`,
    'Write a better prompt: keep what the helpful descriptions did, fix what made the others unhelpful and follow ' +
      'the corrections where they show a general preference (not single facts about one image). Keep it short, ' +
      `general and under ${MAX_PROMPT_LENGTH} characters; do not mention these ratings in it.`,
    'Answer exactly in this form:\n<prompt>\nthe new prompt\n</prompt>\n<summary>\nwhat you changed and why, in ' +
      'one to three sentences\n</summary>',
  ].join('\n\n');
}

function tagged(text: string, tag: string): string | null {
  const match = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'i').exec(text);
  return match ? match[1].trim() : null;
}

/**
 * The suggestion in the model's answer. An answer without a usable `<prompt>` (missing, empty, too long) is
 * `malformed`, so the next provider is asked.
 */
export function parseRefineAnswer(
  text: string,
  provider: AiProviderName,
): { prompt: string; summary: string } {
  const prompt = tagged(text, 'prompt');
  if (!prompt) throw new ProviderError(provider, 'malformed', 'the answer has no <prompt>…</prompt> section');
  if (prompt.length > MAX_PROMPT_LENGTH)
    throw new ProviderError(
      provider,
      'malformed',
      `the suggested prompt is longer than ${MAX_PROMPT_LENGTH} characters`,
    );
  const summary = tagged(text, 'summary') || 'The provider did not summarise its changes.';
  return { prompt, summary };
}
