import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { QueryFailedError } from 'typeorm';
import { applyRateLimitHeaders } from '../rate-limit/rate-limit-headers';
import { AppError, FieldError } from './app-errors';

export interface ErrorBody {
  detail: string;
  status_code: number;
  errors?: FieldError[];
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Not authenticated',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Unsupported Media Type',
  422: 'Request validation failed',
  429: 'Too Many Requests',
};

/** Maps anything thrown while handling a request to the error envelope. Never leaks internals. */
export function toErrorBody(error: unknown): { body: ErrorBody; headers: Record<string, string> } {
  if (error instanceof AppError) {
    const body: ErrorBody = { detail: error.detail, status_code: error.status };
    if ('errors' in error) body.errors = (error as { errors: FieldError[] }).errors;
    return { body, headers: error.headers };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const response = error.getResponse();
    let detail = typeof response === 'string' ? response : (response as { message?: unknown }).message;
    if (Array.isArray(detail)) detail = detail.join('; ');
    // Nest's router answers unknown routes with "Cannot GET /x"; the contract says "Not Found".
    if (status === 404 && typeof detail === 'string' && detail.startsWith('Cannot ')) detail = 'Not Found';
    if (status >= 500) detail = 'Internal server error';
    return {
      body: {
        detail: typeof detail === 'string' && detail ? detail : (STATUS_TEXT[status] ?? 'Error'),
        status_code: status,
      },
      headers: {},
    };
  }
  if (error instanceof QueryFailedError) {
    const code = (error as QueryFailedError & { driverError?: { code?: string } }).driverError?.code;
    if (code === '23505')
      return { body: { detail: 'A record with these values already exists', status_code: 409 }, headers: {} };
    if (code === '23503')
      return { body: { detail: 'A referenced record does not exist', status_code: 400 }, headers: {} };
  }
  return { body: { detail: 'Internal server error', status_code: 500 }, headers: {} };
}

@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpErrorFilter');

  catch(error: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const http = host.switchToHttp();
    const res = http.getResponse<Response>();
    const req = http.getRequest<Request>();
    const { body, headers } = toErrorBody(error);
    // A typed error of ours with a 5xx status (502 every AI provider failed, 503 unavailable) means what it says;
    // anything else at 500 is a bug: logged with its stack, answered generically.
    if (body.status_code >= 500 && !(error instanceof AppError)) {
      this.logger.error({
        msg: 'Unhandled error',
        request_id: req.requestId,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        stack: error instanceof Error ? error.stack : undefined,
      });
      body.detail = `Internal server error (request id ${req.requestId ?? 'unknown'})`;
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    applyRateLimitHeaders(res, req.rateLimit);
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(body.status_code).json(body);
  }
}
