import {
  checkAnswer,
  kindForStatus,
  ProviderErrorWithUsage,
  redactSecrets,
  toProviderError,
  type ErrorContext,
} from './provider-errors';
import { ProviderError } from './vision-provider';

const KEY = 'sk-live-0123456789abcdefghijklmnop';
const context: ErrorContext = {
  provider: 'openai',
  apiKey: KEY,
  baseUrl: 'http://user:pass@10.0.0.5:8000/v1',
};

class SdkTimeout extends Error {}
class SdkConnection extends Error {}

/** An SDK error with a status, as the OpenAI / Anthropic / Gemini SDKs throw them. */
function httpError(status: number, message: string): Error {
  return Object.assign(new Error(message), { status });
}

describe('kindForStatus', () => {
  it.each([
    [401, 'auth'],
    [403, 'auth'],
    [408, 'timeout'],
    [429, 'rate_limited'],
    [500, 'server'],
    [503, 'server'],
    [529, 'server'],
    [400, 'bad_request'],
    [404, 'bad_request'],
    [422, 'bad_request'],
  ])('%d -> %s', (status, kind) => {
    expect(kindForStatus(status)).toBe(kind);
  });
});

describe('toProviderError', () => {
  it('keeps the status and the provider message, without the key', () => {
    const error = toProviderError(httpError(401, `401 Incorrect API key provided: ${KEY}`), context);
    expect(error).toMatchObject({ provider: 'openai', kind: 'auth', status: 401 });
    expect(error.message).toBe('authentication failed (HTTP 401): Incorrect API key provided: [redacted]');
  });

  it("reduces a JSON error body (Gemini's, Anthropic's) to its message", () => {
    const gemini = JSON.stringify({
      error: { code: 429, message: 'Quota exceeded.', status: 'RESOURCE_EXHAUSTED' },
    });
    expect(toProviderError(httpError(429, gemini), context).message).toBe(
      'rate limited (HTTP 429): Quota exceeded.',
    );
    const anthropic = `529 ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}`;
    expect(toProviderError(httpError(529, anthropic), context).message).toBe(
      'server error (HTTP 529): Overloaded',
    );
  });

  it('recognises the SDK timeout and connection classes it is given', () => {
    const withClasses = { ...context, timeoutErrors: [SdkTimeout], connectionErrors: [SdkConnection] };
    expect(toProviderError(new SdkTimeout('Request timed out.'), withClasses).kind).toBe('timeout');
    const refused = Object.assign(new SdkConnection('Connection error.'), {
      cause: Object.assign(new TypeError('fetch failed'), {
        cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }),
      }),
    });
    const error = toProviderError(refused, withClasses);
    expect(error.kind).toBe('network');
    // The origin only: neither the credentials in the URL nor its path.
    expect(error.message).toBe('could not reach http://10.0.0.5:8000 (ECONNREFUSED)');
  });

  it('recognises aborts and fetch failures by name, also wrapped and from another realm', () => {
    const abort = Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
    expect(toProviderError(abort, context).kind).toBe('timeout');
    const wrapped = new Error('exception TypeError: fetch failed sending request', {
      cause: { name: 'TypeError', message: 'fetch failed', cause: { code: 'ENOTFOUND' } },
    });
    expect(toProviderError(wrapped, context)).toMatchObject({
      kind: 'network',
      message: expect.stringContaining('ENOTFOUND'),
    });
  });

  it('maps an unreadable body to malformed and anything else to server, without the key', () => {
    expect(toProviderError(new SyntaxError('Unexpected token <'), context).kind).toBe('malformed');
    const other = toProviderError(new Error(`something odd with ${KEY}`), context);
    expect(other.kind).toBe('server');
    expect(other.message).not.toContain(KEY);
  });

  it('passes a ProviderError through unchanged', () => {
    const original = new ProviderError('gemini', 'malformed', 'x');
    expect(toProviderError(original, context)).toBe(original);
  });
});

describe('redactSecrets', () => {
  it('removes the key and masked or other provider keys', () => {
    expect(redactSecrets(`key ${KEY} and ${KEY}`, KEY)).toBe('key [redacted] and [redacted]');
    expect(redactSecrets('Incorrect API key provided: sk-proj-****************abcd.', null)).toBe(
      'Incorrect API key provided: [redacted].',
    );
    expect(redactSecrets('xai-AbCdEf0123456789 and AIzaSyA1234567890abcdefghijklmnop', null)).toBe(
      '[redacted] and [redacted]',
    );
    expect(redactSecrets('a 404 for model gpt-4o-mini', 'secret-key')).toBe('a 404 for model gpt-4o-mini');
  });
});

describe('checkAnswer', () => {
  const usage = { model: 'gpt-4o-mini', inputTokens: 1200, outputTokens: 40 };

  it('returns what the checks return', () => {
    expect(checkAnswer(usage, () => 'fine')).toBe('fine');
  });

  it('adds the usage to a ProviderError of the checks (the tokens were billed all the same)', () => {
    let thrown: unknown;
    try {
      checkAnswer(usage, () => {
        throw new ProviderError('openai', 'malformed', 'the answer is empty');
      });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ProviderErrorWithUsage);
    expect(thrown).toBeInstanceOf(ProviderError);
    expect(thrown).toMatchObject({
      provider: 'openai',
      kind: 'malformed',
      message: 'the answer is empty',
      usage,
    });
  });

  it('lets other errors through unchanged', () => {
    const bug = new RangeError('bug');
    expect(() =>
      checkAnswer(usage, () => {
        throw bug;
      }),
    ).toThrow(bug);
  });
});
