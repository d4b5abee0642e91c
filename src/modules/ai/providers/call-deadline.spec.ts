import { withDeadline } from './call-deadline';
import { ProviderError } from './vision-provider';

/** A call that ends only when its signal is aborted (then rejects like an SDK does). */
function hangingCall(seen: { signal?: AbortSignal }) {
  return (signal: AbortSignal) =>
    new Promise<string>((_resolve, reject) => {
      seen.signal = signal;
      signal.addEventListener('abort', () => reject(new Error('aborted by signal')));
    });
}

describe('withDeadline', () => {
  it('returns the result of a call that finishes in time', async () => {
    await expect(withDeadline('openai', 1000, undefined, async () => 'done')).resolves.toBe('done');
  });

  it('passes on the error of a call that fails in time', async () => {
    const error = new ProviderError('openai', 'server', 'boom', 500);
    await expect(withDeadline('openai', 1000, undefined, () => Promise.reject(error))).rejects.toBe(error);
  });

  it('fails with timeout at the deadline and aborts the signal it gave the call', async () => {
    const seen: { signal?: AbortSignal } = {};
    const started = Date.now();
    const error = await withDeadline('anthropic', 100, undefined, hangingCall(seen)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      provider: 'anthropic',
      kind: 'timeout',
      message: 'no answer within 100 ms',
    });
    expect(Date.now() - started).toBeLessThan(600);
    expect(seen.signal?.aborted).toBe(true);
  });

  it('settles at the deadline even when the call ignores its signal', async () => {
    const never = () => new Promise<string>(() => undefined);
    await expect(withDeadline('gemini', 50, undefined, never)).rejects.toMatchObject({ kind: 'timeout' });
  });

  it("fails with timeout when the caller aborts, and at once when the caller's signal is already aborted", async () => {
    const controller = new AbortController();
    const seen: { signal?: AbortSignal } = {};
    setTimeout(() => controller.abort(), 30);
    await expect(withDeadline('openai', 5000, controller.signal, hangingCall(seen))).rejects.toMatchObject({
      kind: 'timeout',
      message: 'the request was cancelled',
    });
    expect(seen.signal?.aborted).toBe(true);

    let called = false;
    await expect(
      withDeadline('openai', 5000, controller.signal, async () => {
        called = true;
        return 'x';
      }),
    ).rejects.toMatchObject({ kind: 'timeout' });
    expect(called).toBe(false);
  });
});
