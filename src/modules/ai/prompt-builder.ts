/*
 * The prompt of a description, built from plain values (no I/O):
 *
 *   <ai_prompt setting, or the prompt of a POST /ai/describe>
 *
 *   Instructions for this camera: <camera prompt_override>          (when the camera has one)
 *
 *   Camera: <camera name>                                            (when known)
 *   Local time: Sunday, 22 November 2026, 04:14 (Europe/Berlin)
 *
 *   Earlier events on this camera in the hour before (oldest first), for context only; describe what this
 *   image shows:
 *   03:50 person: A man in a red jacket walks to the door.           (ai_context_enabled; up to 5 events)
 */

/** At most this many earlier events go into the context. */
export const CONTEXT_MAX_EVENTS = 5;
/** Only events this long before the described one count as context. */
export const CONTEXT_WINDOW_MS = 3_600_000;
/** The context block (its event lines) is cut to this many characters: about 200 tokens. */
export const CONTEXT_MAX_CHARS = 800;
/** One event's description in the context is cut to this many characters. */
export const CONTEXT_DESCRIPTION_MAX_CHARS = 200;

export const CONTEXT_HEADER =
  'Earlier events on this camera in the hour before (oldest first), for context only; describe what this image shows:';

/** An earlier, described event of the same camera. */
export interface ContextEvent {
  id: string;
  timestamp: Date;
  detectionType: string;
  description: string;
}

export interface PromptInput {
  basePrompt: string;
  promptOverride?: string | null;
  cameraName?: string | null;
  /** When the image was taken. */
  time: Date;
  /** IANA zone of the `timezone` setting. */
  timeZone: string;
  /** Earlier events (any order; selectContext picks); null or empty: no context block. */
  context?: ContextEvent[] | null;
}

export interface BuiltPrompt {
  prompt: string;
  /** Events in the context block (0 without one). */
  contextEvents: number;
  /** Approximate tokens the context block adds (its characters / 4, rounded up). */
  contextTokens: number;
}

/** The usual rule of thumb for English text: a token is about four characters. */
export const approxTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * The context of an event at `time`: the newest CONTEXT_MAX_EVENTS events taken at or before it and less
 * than CONTEXT_WINDOW_MS earlier, never the event itself; oldest first.
 */
export function selectContext(events: ContextEvent[], time: Date, excludeId?: string | null): ContextEvent[] {
  const end = time.getTime();
  const start = end - CONTEXT_WINDOW_MS;
  return events
    .filter((e) => e.id !== excludeId && e.timestamp.getTime() <= end && e.timestamp.getTime() > start)
    .sort((a, b) => b.timestamp.getTime() - a.timestamp.getTime())
    .slice(0, CONTEXT_MAX_EVENTS)
    .reverse();
}

/** `HH:MM` (24-hour) in `timeZone`. */
export function clockTime(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '00';
  return `${part('hour')}:${part('minute')}`;
}

/** "Sunday, 22 November 2026, 04:14 (Europe/Berlin)". */
export function localTime(date: Date, timeZone: string): string {
  const day = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
  }).format(date);
  return `${day}, ${clockTime(date, timeZone)} (${timeZone})`;
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;
}

/**
 * The context lines ("HH:MM person: description"), oldest first, for events already chosen by
 * selectContext. When they exceed CONTEXT_MAX_CHARS the oldest are dropped: the latest events say most about
 * what is happening now.
 */
export function contextLines(events: ContextEvent[], timeZone: string): string[] {
  const lines: string[] = [];
  let length = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const line = `${clockTime(e.timestamp, timeZone)} ${e.detectionType}: ${cut(oneLine(e.description), CONTEXT_DESCRIPTION_MAX_CHARS)}`;
    if (length + line.length + 1 > CONTEXT_MAX_CHARS) break;
    lines.unshift(line);
    length += line.length + 1;
  }
  return lines;
}

/** The whole prompt and the size of its context block (see the layout at the top). */
export function buildPrompt(input: PromptInput): BuiltPrompt {
  const sections = [input.basePrompt.trim()];
  const override = input.promptOverride?.trim();
  if (override) sections.push(`Instructions for this camera: ${override}`);
  const facts: string[] = [];
  const name = input.cameraName ? oneLine(input.cameraName) : '';
  if (name) facts.push(`Camera: ${name}`);
  facts.push(`Local time: ${localTime(input.time, input.timeZone)}`);
  sections.push(facts.join('\n'));
  let contextEvents = 0;
  let contextTokens = 0;
  const lines = input.context?.length ? contextLines(input.context, input.timeZone) : [];
  if (lines.length > 0) {
    const section = `${CONTEXT_HEADER}\n${lines.join('\n')}`;
    sections.push(section);
    contextEvents = lines.length;
    contextTokens = approxTokens(section);
  }
  return { prompt: sections.join('\n\n'), contextEvents, contextTokens };
}
