import { Logger } from '@nestjs/common';
import express, { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { toErrorBody } from '../errors/http-error.filter';
import { AppError } from '../errors/app-errors';
import { requestScope } from '../logging/json-logger';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const SECRET_QUERY = /^(token|api_key|apikey|key|password|secret|access_token)$/i;

/** Every response carries X-Request-Id (the client's, when well-formed, else a new UUID). */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  req.requestId = id;
  res.setHeader('X-Request-Id', id);
  requestScope.run({ requestId: id }, next);
}

/** The URL with the values of secret query parameters (token=, api_key=, ...) replaced. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of [...params.keys()]) if (SECRET_QUERY.test(name)) params.set(name, '[redacted]');
  return `${url.slice(0, q)}?${params.toString()}`;
}

const accessLog = new Logger('HTTP');

/** One structured line per request, written when the response finishes. Never logs credentials. */
export function requestLog(req: Request, res: Response, next: NextFunction): void {
  const started = process.hrtime.bigint();
  res.on('finish', () => {
    accessLog.log({
      msg: 'request',
      method: req.method,
      path: redactUrl(req.originalUrl),
      status: res.statusCode,
      duration_ms: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
      ip: req.ip,
      auth: req.principal?.kind,
      api_key_id: req.principal?.kind === 'api_key' ? req.principal.apiKeyId : undefined,
      user_id: req.principal?.kind === 'user' ? req.principal.userId : undefined,
    });
  });
  next();
}

export const MIB = 1024 * 1024;
/** Routes that take images in their body may be 10 MiB; everything else 1 MiB (decisions.md §1). */
const LARGE_BODY_ROUTES: { method: string; path: RegExp }[] = [
  { method: 'POST', path: /^\/api\/v1\/ai\/describe\/?$/ },
  { method: 'POST', path: /^\/api\/v1\/events\/?$/ },
];

// Not `strict`: a well-formed body that is not an object ("text", 42, null) is a validation failure (422
// from the ValidationPipe), not malformed JSON (400) (decisions.md §1).
const smallJson = express.json({ limit: MIB, strict: false });
const largeJson = express.json({ limit: 10 * MIB, strict: false });

function sendError(res: Response, error: AppError): void {
  const { body, headers } = toErrorBody(error);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.status(body.status_code).json(body);
}

/**
 * Parses JSON bodies, answering in the error envelope: 400 malformed JSON, 413 too large, 415 a body
 * that is not JSON.
 */
export function jsonBody(req: Request, res: Response, next: NextFunction): void {
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (hasBody && !req.is(['application/json', 'application/*+json'])) {
    sendError(res, new AppError(415, 'Content-Type must be application/json'));
    return;
  }
  const large = LARGE_BODY_ROUTES.some((r) => r.method === req.method && r.path.test(req.path));
  (large ? largeJson : smallJson)(req, res, (error?: unknown) => {
    if (!error) {
      next();
      return;
    }
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large')
      sendError(res, new AppError(413, `Request body too large (limit ${large ? 10 : 1} MiB)`));
    else if (type === 'entity.parse.failed')
      sendError(res, new AppError(400, 'Malformed JSON in request body'));
    else if (type === 'encoding.unsupported' || type === 'charset.unsupported')
      sendError(res, new AppError(415, 'Unsupported body encoding or charset'));
    else sendError(res, new AppError(400, 'The request body could not be read'));
  });
}
