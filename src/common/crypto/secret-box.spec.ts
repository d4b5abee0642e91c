import { randomBytes } from 'node:crypto';
import type { AppConfig } from '../../config/config';
import { SecretBox } from './secret-box';

const box = (key = randomBytes(32)) => new SecretBox({ encryptionKey: key } as AppConfig);

describe('SecretBox (AES-256-GCM)', () => {
  it('round-trips and never stores the plaintext', () => {
    const b = box();
    const stored = b.encrypt('camera-password');
    expect(stored).toMatch(/^v1:/);
    expect(stored).not.toContain('camera-password');
    expect(b.decrypt(stored)).toBe('camera-password');
    expect(b.encrypt('camera-password')).not.toBe(stored); // a fresh IV each time
  });

  it('refuses another key and tampered ciphertext', () => {
    const stored = box(Buffer.alloc(32, 1)).encrypt('secret');
    expect(() => box(Buffer.alloc(32, 2)).decrypt(stored)).toThrow();
    const tampered = `v1:${Buffer.from(Buffer.from(stored.slice(3), 'base64').map((b, i) => (i === 30 ? b ^ 1 : b))).toString('base64')}`;
    expect(() => box(Buffer.alloc(32, 1)).decrypt(tampered)).toThrow();
  });
});
