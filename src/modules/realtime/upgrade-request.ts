import cookieParser from 'cookie-parser';
import type { Express, Request } from 'express';
import { type IncomingHttpHeaders, type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ACCESS_TOKEN_COOKIE } from '../../common/auth/credentials';
import type { ErrorBody } from '../../common/errors/http-error.filter';
import type { RateLimitState } from '../../common/rate-limit/rate-limit-headers';

/**
 * Helpers for the WebSocket upgrade request, which no Express middleware sees: turning it into a request
 * the AuthGuard can authenticate, and refusing it with a real HTTP response.
 */

const parseCookies = cookieParser();

/** The cookies of a raw request, parsed exactly as the REST pipeline's cookie-parser does. */
function cookiesOf(req: IncomingMessage): Record<string, string> {
  const holder = { headers: req.headers } as unknown as Request;
  parseCookies(holder, {} as never, () => undefined);
  return (holder.cookies ?? {}) as Record<string, string>;
}

/**
 * The credential headers of an upgrade request, with the query parameters browsers must use instead:
 * `api_key=` counts as `X-API-Key` and `token=` as `Authorization: Bearer`. Order (first present decides):
 * X-API-Key header, api_key=, Authorization header, token=, then the cookie.
 */
export function upgradeHeaders(req: IncomingMessage, query: URLSearchParams): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...req.headers };
  const apiKey = query.get('api_key');
  const token = query.get('token');
  if (headers['x-api-key'] === undefined && apiKey !== null) headers['x-api-key'] = apiKey;
  else if (headers['x-api-key'] === undefined && headers.authorization === undefined && token !== null)
    headers.authorization = `Bearer ${token}`;
  return headers;
}

/**
 * A request the AuthGuard can authenticate: Express's request prototype (so `ip` honours TRUSTED_PROXIES
 * exactly as for REST), the credential headers above, and the access-token cookie. It keeps the
 * credentials, so the connection can be authenticated again later (when its user changes).
 */
export function authRequestOf(req: IncomingMessage, query: URLSearchParams, app: Express): Request {
  const cookie = cookiesOf(req)[ACCESS_TOKEN_COOKIE];
  return Object.create(app.request, {
    app: { value: app },
    method: { value: req.method },
    url: { value: req.url },
    headers: { value: upgradeHeaders(req, query) },
    cookies: { value: cookie === undefined ? {} : { [ACCESS_TOKEN_COOKIE]: cookie } },
    socket: { value: req.socket },
    rateLimit: { value: undefined, writable: true },
  }) as Request;
}

/**
 * Whether a browser page may use the cookie for this upgrade: WebSocket handshakes are not subject to
 * CORS, so without this check any page the user visits on a site sharing the cookie (another port of the
 * same host) could open a socket with the user's session. Allowed: no Origin (not a browser), the
 * service's own origin, or one listed in CORS_ORIGINS.
 */
export function cookieOriginAllowed(req: IncomingMessage, corsOrigins: readonly string[]): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  return host === req.headers.host || corsOrigins.includes(origin.replace(/\/$/, ''));
}

/** Answers the upgrade with a plain HTTP error response in the API's error envelope, then closes. */
export function refuseUpgrade(
  socket: Duplex,
  body: ErrorBody,
  headers: Record<string, string> = {},
  rateLimit?: RateLimitState,
): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const payload = JSON.stringify(body);
  const all: Record<string, string> = {
    Connection: 'close',
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(payload)),
    ...headers,
  };
  if (rateLimit) {
    all['X-RateLimit-Limit'] = String(rateLimit.limit);
    all['X-RateLimit-Remaining'] = String(Math.max(0, rateLimit.remaining));
    all['X-RateLimit-Reset'] = String(Math.ceil(rateLimit.resetAt / 1000));
  }
  const head = [
    `HTTP/1.1 ${body.status_code} ${STATUS_CODES[body.status_code] ?? 'Error'}`,
    ...Object.entries(all).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.once('finish', () => socket.destroy());
  socket.end(`${head.join('\r\n')}\r\n\r\n${payload}`);
}
