import type { Request } from 'express';

export const ACCESS_TOKEN_COOKIE = 'vigil_access_token';

/**
 * The credentials a request presents. `X-API-Key` wins over everything else; then
 * `Authorization: Bearer`, then the `vigil_access_token` cookie.
 */
export function credentialsOf(req: Request): { apiKey?: string; token?: string } {
  const apiKey = req.headers['x-api-key'];
  if (apiKey !== undefined) return { apiKey: Array.isArray(apiKey) ? apiKey[0] : apiKey };
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return { token: match ? match[1] : '' };
  }
  const cookie = (req.cookies as Record<string, string> | undefined)?.[ACCESS_TOKEN_COOKIE];
  if (cookie) return { token: cookie };
  return {};
}
