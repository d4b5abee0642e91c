import { AppError, ConflictError, TooManyRequestsError } from '../../common/errors/app-errors';

/** No provider is enabled with what it needs: AI is off (events wait, pending). */
export class AiOffError extends ConflictError {
  constructor() {
    super(
      'AI descriptions are off: no AI provider is enabled and configured ' +
        '(see ai_providers and ai_provider_order in /system/settings)',
    );
  }
}

/** A request named a provider that is not enabled or lacks what it needs. */
export class ProviderNotUsableError extends ConflictError {
  constructor(provider: string, reason: string) {
    super(`AI provider ${provider} cannot be used: ${reason}`);
  }
}

/** A cost cap is reached (429 with Retry-After until the cap's UTC day or month ends). */
export class AiPausedError extends TooManyRequestsError {
  constructor(
    detail: string,
    readonly until: Date,
  ) {
    super(detail, (until.getTime() - Date.now()) / 1000);
  }
}

export interface ProviderFailure {
  provider: string;
  kind: string;
  message: string;
}

const summary = (failures: ProviderFailure[]) =>
  failures.map((f) => `${f.provider}: ${f.kind}: ${f.message}`).join('; ');

/** Every provider of the chain was tried and failed (each failure is in the ledger). */
export class AllProvidersFailedError extends AppError {
  constructor(readonly failures: ProviderFailure[]) {
    super(502, `Every AI provider failed (${summary(failures)})`);
  }
}

/** No provider could be tried: every circuit is open after repeated failures (nothing was sent). */
export class NoProviderAvailableError extends AppError {
  constructor(readonly retryAt: Date | null) {
    const seconds = retryAt ? Math.max(1, Math.ceil((retryAt.getTime() - Date.now()) / 1000)) : 30;
    super(
      503,
      `Every enabled AI provider is paused after repeated failures (circuit open); retry in ${seconds} s`,
      { 'Retry-After': String(seconds) },
    );
  }
}

/** The call was cancelled because the service is shutting down. */
export class AiCancelledError extends AppError {
  constructor() {
    super(503, 'The service is shutting down');
  }
}
