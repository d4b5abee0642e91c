import { adminQuery } from './database';
import { rmSync } from 'node:fs';
import type { EmbeddedDatabase } from '../../src/database/embedded-postgres';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__VIGIL_EMBEDDED__ as
    { embedded: EmbeddedDatabase; dir: string } | undefined;
  if (!state) {
    const serverUrl = process.env.VIGIL_TEST_SERVER_URL;
    const template = process.env.VIGIL_TEST_TEMPLATE;
    if (serverUrl && template)
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    return;
  }
  await state.embedded.stop();
  rmSync(state.dir, { recursive: true, force: true });
}
