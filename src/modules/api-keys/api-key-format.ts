import { createHash, randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const API_KEY_PATTERN = /^vgl_[0-9A-Za-z]{40}$/;

/** `vgl_` + 40 characters drawn uniformly from base62 with a CSPRNG (about 238 bits). */
export function generateApiKey(): string {
  let body = '';
  for (let i = 0; i < 40; i += 1) body += BASE62[randomInt(62)];
  return `vgl_${body}`;
}

export function apiKeyPrefix(key: string): string {
  return key.slice(0, 12);
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
