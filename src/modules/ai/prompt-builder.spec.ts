import { ContextCache } from './context-cache';
import {
  approxTokens,
  buildPrompt,
  CONTEXT_HEADER,
  CONTEXT_MAX_CHARS,
  ContextEvent,
  contextLines,
  localTime,
  selectContext,
} from './prompt-builder';

const T = new Date('2026-11-22T03:14:15Z');
const minutesBefore = (m: number) => new Date(T.getTime() - m * 60_000);
const event = (id: string, minutes: number, description = `Event ${id}`, type = 'person'): ContextEvent => ({
  id,
  timestamp: minutesBefore(minutes),
  detectionType: type,
  description,
});

describe('localTime', () => {
  it('writes the weekday, date and 24-hour time in the zone', () => {
    expect(localTime(T, 'Europe/Berlin')).toBe('Sunday, 22 November 2026, 04:14 (Europe/Berlin)');
    expect(localTime(T, 'America/New_York')).toBe('Saturday, 21 November 2026, 22:14 (America/New_York)');
    expect(localTime(new Date('2026-11-22T00:05:00Z'), 'UTC')).toBe('Sunday, 22 November 2026, 00:05 (UTC)');
  });
});

describe('selectContext', () => {
  it('keeps the 5 newest events of the hour before, oldest first, never the event itself', () => {
    const events = [
      event('a', 70),
      event('b', 59),
      event('c', 50),
      event('d', 40),
      event('e', 30),
      event('f', 20),
      event('g', 10),
      event('self', 0),
      event('later', -5),
    ];
    expect(selectContext(events, T, 'self').map((e) => e.id)).toEqual(['c', 'd', 'e', 'f', 'g']);
    expect(selectContext(events.slice(0, 3), T, 'self').map((e) => e.id)).toEqual(['b', 'c']);
    expect(selectContext([event('a', 60)], T)).toEqual([]);
  });
});

describe('contextLines', () => {
  it('writes "HH:MM type: description" in the zone, on one line and cut to 200 characters', () => {
    const long = 'word '.repeat(100);
    const lines = contextLines(
      [event('a', 30, 'A man\nat the   door'), event('b', 10, long, 'vehicle')],
      'Europe/Berlin',
    );
    expect(lines[0]).toBe('03:44 person: A man at the door');
    expect(lines[1].startsWith('04:04 vehicle: word word')).toBe(true);
    expect(lines[1].endsWith('…')).toBe(true);
    expect(lines[1].length).toBeLessThanOrEqual('04:04 vehicle: '.length + 200);
  });

  it('drops the oldest events past the length cap', () => {
    const events = [1, 2, 3, 4, 5].map((i) => event(String(i), 60 - i * 10, 'x'.repeat(199)));
    const lines = contextLines(events, 'UTC');
    expect(lines.join('\n').length).toBeLessThanOrEqual(CONTEXT_MAX_CHARS);
    expect(lines.length).toBe(3);
    expect(lines[2].startsWith('03:04')).toBe(true);
  });
});

describe('buildPrompt', () => {
  it('joins prompt, camera instructions, camera name, local time and context', () => {
    const built = buildPrompt({
      basePrompt: 'Describe the image.',
      promptOverride: '  Ignore the road.  ',
      cameraName: 'Front door',
      time: T,
      timeZone: 'Europe/Berlin',
      context: [event('a', 20, 'A cat crosses the lawn', 'animal'), event('b', 5, 'A van stops', 'vehicle')],
    });
    const context = `${CONTEXT_HEADER}\n03:54 animal: A cat crosses the lawn\n04:09 vehicle: A van stops`;
    expect(built.prompt).toBe(
      'Describe the image.\n\nInstructions for this camera: Ignore the road.\n\n' +
        'Camera: Front door\nLocal time: Sunday, 22 November 2026, 04:14 (Europe/Berlin)\n\n' +
        context,
    );
    expect(built.contextEvents).toBe(2);
    expect(built.contextTokens).toBe(approxTokens(context));
    expect(built.contextTokens).toBe(Math.ceil(context.length / 4));
  });

  it('leaves out what is not there and reports no context', () => {
    const built = buildPrompt({ basePrompt: 'Describe.', time: T, timeZone: 'UTC', context: [] });
    expect(built).toEqual({
      prompt: 'Describe.\n\nLocal time: Sunday, 22 November 2026, 03:14 (UTC)',
      contextEvents: 0,
      contextTokens: 0,
    });
  });
});

describe('ContextCache', () => {
  it('answers for events at or after its newest row, and counts hits and misses', () => {
    const cache = new ContextCache();
    expect(cache.lookup('cam', T)).toBeUndefined();
    cache.store('cam', [event('b', 10), event('a', 20)], cache.begin());
    expect(cache.lookup('cam', T)?.map((e) => e.id)).toEqual(['b', 'a']);
    expect(cache.lookup('cam', minutesBefore(10))).toBeDefined();
    expect(cache.lookup('cam', minutesBefore(15))).toBeUndefined();
    expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 2, misses: 2 });
  });

  it('an empty entry answers for any time', () => {
    const cache = new ContextCache();
    cache.store('cam', [], cache.begin());
    expect(cache.lookup('cam', new Date(0))).toEqual([]);
  });

  it('drops an entry on invalidation and never stores a load that started before one', () => {
    const cache = new ContextCache();
    cache.store('cam', [event('a', 10)], cache.begin());
    const epoch = cache.begin();
    cache.invalidate('cam');
    expect(cache.lookup('cam', T)).toBeUndefined();
    cache.store('cam', [event('a', 10)], epoch);
    expect(cache.lookup('cam', T)).toBeUndefined();
  });

  it('keeps the most recently used cameras within its size', () => {
    const cache = new ContextCache(2);
    cache.store('a', [], cache.begin());
    cache.store('b', [], cache.begin());
    cache.lookup('a', T);
    cache.store('c', [], cache.begin());
    expect(cache.lookup('b', T)).toBeUndefined();
    expect(cache.lookup('a', T)).toEqual([]);
    expect(cache.lookup('c', T)).toEqual([]);
  });
});
