import { DETECTION_TYPES } from '../../events/entities/event.entity';
import {
  MAX_DESCRIPTION_LENGTH,
  parseVisionAnswer,
  validateVisionAnswer,
  visionAnswerSchema,
} from './answer-schema';
import { ProviderError } from './vision-provider';

const VALID = {
  description: 'A man in a grey hoodie carries a box to the front door.',
  detection_type: 'person',
  objects_detected: ['person', 'box'],
  confidence: 84,
};

function malformedMessage(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe('malformed');
    expect((err as ProviderError).provider).toBe('openai');
    return (err as ProviderError).message;
  }
  throw new Error('expected a malformed answer');
}

const parse = (value: unknown) => parseVisionAnswer(JSON.stringify(value), 'openai');

describe('parseVisionAnswer', () => {
  it('accepts a valid answer as it is', () => {
    expect(parse(VALID)).toEqual(VALID);
  });

  it('normalises without guessing: trims, lower-cases, de-duplicates objects, rounds confidence', () => {
    expect(
      parse({
        description: '  Two cars.  ',
        detection_type: ' VEHICLE ',
        objects_detected: ['Car', 'car '],
        confidence: 49.5,
      }),
    ).toEqual({
      description: 'Two cars.',
      detection_type: 'vehicle',
      objects_detected: ['car'],
      confidence: 50,
    });
  });

  it('accepts the limits: empty object list, 20 objects, confidence 0 and 100, 2000 characters', () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `thing ${i}`);
    expect(parse({ ...VALID, objects_detected: [] }).objects_detected).toEqual([]);
    expect(parse({ ...VALID, objects_detected: twenty }).objects_detected).toHaveLength(20);
    expect(parse({ ...VALID, confidence: 0 }).confidence).toBe(0);
    expect(parse({ ...VALID, confidence: 100 }).confidence).toBe(100);
    expect(parse({ ...VALID, description: 'x'.repeat(MAX_DESCRIPTION_LENGTH) }).description).toHaveLength(
      2000,
    );
  });

  it('accepts every event detection type', () => {
    for (const type of DETECTION_TYPES)
      expect(parse({ ...VALID, detection_type: type }).detection_type).toBe(type);
  });

  it('accepts JSON in one Markdown code fence', () => {
    expect(parseVisionAnswer('```json\n' + JSON.stringify(VALID) + '\n```', 'openai')).toEqual(VALID);
  });

  it('ignores properties beyond the four', () => {
    expect(parse({ ...VALID, mood: 'calm' })).toEqual(VALID);
  });

  it.each([
    ['not JSON', 'A person at the door.', 'not valid JSON'],
    ['truncated JSON', '{"description": "A per', 'not valid JSON'],
    ['an array', '[]', 'not a JSON object'],
    ['null', 'null', 'not a JSON object'],
  ])('rejects %s', (_what, text, message) => {
    expect(malformedMessage(() => parseVisionAnswer(text, 'openai'))).toContain(message);
  });

  it.each([
    ['a missing description', { ...VALID, description: undefined }, '"description"'],
    ['an empty description', { ...VALID, description: '   ' }, '"description" is empty'],
    ['a description over 2000 characters', { ...VALID, description: 'x'.repeat(2001) }, 'longer than 2000'],
    ['a number as description', { ...VALID, description: 5 }, '"description"'],
    ['a missing detection type', { ...VALID, detection_type: undefined }, '"detection_type"'],
    ['an unknown detection type', { ...VALID, detection_type: 'intruder' }, 'not one of'],
    ['a keyword-like detection type', { ...VALID, detection_type: 'a person' }, 'not one of'],
    ['missing objects', { ...VALID, objects_detected: undefined }, '"objects_detected"'],
    ['objects as a string', { ...VALID, objects_detected: 'person, car' }, '"objects_detected"'],
    [
      '21 objects',
      { ...VALID, objects_detected: Array.from({ length: 21 }, (_, i) => `o${i}`) },
      'more than 20',
    ],
    ['an empty object name', { ...VALID, objects_detected: ['person', ' '] }, 'empty name'],
    ['a non-string object', { ...VALID, objects_detected: ['person', 3] }, 'not a string'],
    ['a missing confidence', { ...VALID, confidence: undefined }, '"confidence"'],
    ['a confidence as string', { ...VALID, confidence: '80' }, '"confidence"'],
    ['a negative confidence', { ...VALID, confidence: -1 }, 'between 0 and 100'],
    ['a confidence over 100', { ...VALID, confidence: 100.4 }, 'between 0 and 100'],
  ])('rejects %s', (_what, value, message) => {
    expect(malformedMessage(() => parse(value))).toContain(message);
  });

  it('validateVisionAnswer checks an already parsed value (a tool input) the same way', () => {
    expect(validateVisionAnswer(VALID, 'anthropic')).toEqual(VALID);
    expect(() => validateVisionAnswer({ description: 'x' }, 'anthropic')).toThrow(ProviderError);
  });
});

describe('visionAnswerSchema', () => {
  it('requires the four fields, forbids others and lists the detection types', () => {
    const schema = visionAnswerSchema();
    expect(schema.required).toEqual(['description', 'detection_type', 'objects_detected', 'confidence']);
    expect(Object.keys(schema.properties ?? {})).toEqual(schema.required);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties?.detection_type.enum).toEqual([...DETECTION_TYPES]);
    expect(schema.properties?.objects_detected.maxItems).toBe(20);
    expect(schema.properties?.confidence).toMatchObject({ minimum: 0, maximum: 100 });
  });
});
