import { readFileSync } from 'node:fs';
import { join } from 'node:path';

function readVersion(): string {
  // src/common -> repo root (also from dist/src/common, since package.json sits above both).
  for (const up of ['../..', '../../..']) {
    try {
      return (JSON.parse(readFileSync(join(__dirname, up, 'package.json'), 'utf8')) as { version: string })
        .version;
    } catch {
      continue;
    }
  }
  return '0.0.0';
}

export const SERVICE_VERSION = readVersion();
