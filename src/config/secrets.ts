import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Returns the secret stored in `DATA_DIR/secrets/<name>`, creating it with `bytes` random bytes on
 * first use. The folder and file are readable by the service's user only.
 */
export function loadOrCreateSecret(dataDir: string, name: string, bytes: number): Buffer {
  const dir = join(dataDir, 'secrets');
  const file = join(dir, name);
  if (!existsSync(file)) {
    // Only the secrets folder is private; DATA_DIR itself keeps the default mode (the embedded
    // PostgreSQL, which runs as its own user when the service runs as root, must reach its folder).
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      writeFileSync(file, randomBytes(bytes).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
      chmodSync(file, 0o600);
    } catch (error) {
      // Another instance sharing DATA_DIR created it first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const stored = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (stored.length !== bytes) {
    throw new Error(`Secret file ${file} is damaged (expected ${bytes} bytes); restore it or remove it`);
  }
  return stored;
}
