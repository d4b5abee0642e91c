import { createHash } from 'node:crypto';
import { API_KEY_PATTERN, apiKeyPrefix, generateApiKey, hashApiKey } from './api-key-format';

describe('API key format', () => {
  it('is vgl_ plus 40 base62 characters, with a 12-character prefix', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^vgl_[0-9A-Za-z]{40}$/);
    expect(API_KEY_PATTERN.test(key)).toBe(true);
    expect(apiKeyPrefix(key)).toBe(key.slice(0, 12));
    expect(apiKeyPrefix(key)).toHaveLength(12);
  });

  it('uses the whole alphabet and never repeats', () => {
    const keys = Array.from({ length: 2000 }, generateApiKey);
    expect(new Set(keys).size).toBe(keys.length);
    const alphabet = new Set(keys.join('').replace(/vgl_/g, ''));
    expect(alphabet.size).toBe(62);
  });

  it('hashes with hex SHA-256', () => {
    expect(hashApiKey('vgl_x')).toBe(createHash('sha256').update('vgl_x').digest('hex'));
  });
});
