import { checkJpeg } from '../events/jpeg';
import { BLANK_JPEG, buildRefineRequest, parseRefineAnswer, REFINE_TEXT_MAX_CHARS } from './refine-prompt';

describe('refine-prompt', () => {
  it('sends a valid JPEG as its placeholder image', () => {
    expect(checkJpeg(BLANK_JPEG)).toEqual({ ok: true, width: 16, height: 16 });
  });

  it('lists the ratings with their corrections, cut to length', () => {
    const text = buildRefineRequest('Describe it.', [
      {
        rating: 'not_helpful',
        description: 'A person.',
        correction: 'Say what they wear',
        detectionType: 'person',
      },
      { rating: 'helpful', description: 'x'.repeat(1000), correction: null, detectionType: 'vehicle' },
    ]);
    expect(text).toContain('<current_prompt>\nDescribe it.\n</current_prompt>');
    expect(text).toContain(
      '1. [NOT HELPFUL] (person) "A person." | User\'s correction: "Say what they wear"',
    );
    const second = text.split('\n').find((l) => l.startsWith('2. '))!;
    expect(second.startsWith('2. [HELPFUL] (vehicle) "xxx')).toBe(true);
    expect(second.length).toBeLessThan(REFINE_TEXT_MAX_CHARS + 30);
  });

  it('reads the prompt and summary, and refuses an answer without a prompt', () => {
    expect(
      parseRefineAnswer('Sure!\n<prompt>\n New prompt.\n</prompt>\n<summary>Shorter.</summary>', 'openai'),
    ).toEqual({
      prompt: 'New prompt.',
      summary: 'Shorter.',
    });
    expect(parseRefineAnswer('<prompt>P</prompt>', 'openai').summary).toBe(
      'The provider did not summarise its changes.',
    );
    expect(() => parseRefineAnswer('Here is a better prompt: ...', 'gemini')).toThrow(
      expect.objectContaining({ kind: 'malformed', provider: 'gemini' }),
    );
    expect(() => parseRefineAnswer(`<prompt>${'y'.repeat(4001)}</prompt>`, 'gemini')).toThrow(
      expect.objectContaining({ kind: 'malformed' }),
    );
  });
});
