import { rmSync } from 'node:fs';
import type { EmbeddedDatabase } from '../../src/database/embedded-postgres';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__VIGIL_EMBEDDED__ as
    { embedded: EmbeddedDatabase; dir: string } | undefined;
  if (!state) return;
  await state.embedded.stop();
  rmSync(state.dir, { recursive: true, force: true });
}
