import type { AiProviderName } from '../../settings/settings.registry';
import { type ErrorContext, toProviderError } from './provider-errors';
import { ProviderError, type ProviderConfig, type VisionRequest } from './vision-provider';

/**
 * Runs one provider call with a hard deadline and the caller's abort signal. `run` gets a signal to hand to
 * the SDK, which is aborted when the deadline passes or the caller aborts; the returned promise settles at
 * that moment with a ProviderError of kind `timeout`, whether or not the SDK has noticed yet (an SDK's
 * own timeout covers only part of a request, e.g. not the body). A late result of `run` is dropped.
 */
export async function withDeadline<T>(
  provider: AiProviderName,
  timeoutMs: number,
  callerSignal: AbortSignal | undefined,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (callerSignal?.aborted)
    throw new ProviderError(provider, 'timeout', 'the request was cancelled before it was sent');
  const controller = new AbortController();
  let stop: (error: ProviderError) => void = () => undefined;
  const stopped = new Promise<never>((_resolve, reject) => (stop = reject));
  stopped.catch(() => undefined); // observed by the race below; never an unhandled rejection
  const expire = (message: string) => {
    stop(new ProviderError(provider, 'timeout', message));
    controller.abort();
  };
  const timer = setTimeout(() => expire(`no answer within ${timeoutMs} ms`), timeoutMs);
  const onCallerAbort = () => expire('the request was cancelled');
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  const work = run(controller.signal);
  // After the deadline the SDK's own rejection (an abort error) is expected and of no interest.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, stopped]);
  } finally {
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', onCallerAbort);
  }
}

/** The model of one call: the request's, else the configured one, else the provider's default. */
export function callModel(request: VisionRequest, config: ProviderConfig, defaultModel: string): string {
  return request.model.trim() || config.model.trim() || defaultModel;
}

/**
 * One provider call the way every client makes it: the request's time limit (else the configured one) as a
 * hard deadline, the caller's abort signal, and whatever the SDK throws turned into a ProviderError.
 */
export function providerCall<T>(
  name: AiProviderName,
  request: VisionRequest,
  config: ProviderConfig,
  errorContext: ErrorContext,
  run: (signal: AbortSignal, timeoutMs: number) => Promise<T>,
): Promise<T> {
  const timeoutMs = request.timeoutMs > 0 ? request.timeoutMs : config.timeoutMs;
  return withDeadline(name, timeoutMs, request.signal, async (signal) => {
    try {
      return await run(signal, timeoutMs);
    } catch (err) {
      throw toProviderError(err, errorContext);
    }
  });
}

/** A client that could not be built: what its settings lack. */
export function notConfigured(name: AiProviderName, hasBaseUrl: boolean): ProviderError {
  return new ProviderError(
    name,
    'not_configured',
    `${hasBaseUrl ? 'no API key' : 'no valid base URL'} is configured`,
  );
}
