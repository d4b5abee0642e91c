import { adminQuery } from './database';
import { mediaProcessIds, sleep } from './processes';
import { rmSync } from 'node:fs';
import type { EmbeddedDatabase } from '../../src/database/embedded-postgres';

export default async function globalTeardown(): Promise<void> {
  await assertNoMediaProcessLeft();
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

/** Fails the run when an ffmpeg (capture or fake camera) or a fake RTSP server outlived the suite. */
async function assertNoMediaProcessLeft(): Promise<void> {
  let left: number[] = [];
  for (let i = 0; i < 25; i++) {
    left = mediaProcessIds();
    if (left.length === 0) return;
    await sleep(200);
  }
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  throw new Error(`The test suite left media processes running (now killed): ${left.join(', ')}`);
}
