/**
 * Typed errors that domain code throws; the HttpErrorFilter turns each into the error envelope
 * `{detail, status_code}` with its status and headers.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = new.target.name;
  }
}

export class NotFoundError extends AppError {
  constructor(what: string) {
    super(404, `${what} not found`);
  }
}

export class ConflictError extends AppError {
  constructor(detail: string) {
    super(409, detail);
  }
}

/** Well-formed but not allowed by a business rule (decisions.md §1). */
export class BusinessRuleError extends AppError {
  constructor(detail: string) {
    super(400, detail);
  }
}

export class UnauthorizedError extends AppError {
  constructor(detail: string) {
    super(401, detail);
  }
}

export class ForbiddenError extends AppError {
  constructor(detail: string) {
    super(403, detail);
  }
}

export class TooManyRequestsError extends AppError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, detail, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export interface FieldError {
  field: string;
  message: string;
}

export class ValidationFailedError extends AppError {
  constructor(readonly errors: FieldError[]) {
    super(422, `Request validation failed: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
  }
}
