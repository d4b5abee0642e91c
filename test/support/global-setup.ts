import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { adminQuery, databaseUrl } from './database';
import { TEST_RUN_VARIABLE } from './processes';

/**
 * Once per `npm test`: picks the PostgreSQL server (DATABASE_URL's, else an embedded one in a temporary
 * folder), migrates a template database once, and hands both to the test files, which clone the template.
 */
export default async function globalSetup(): Promise<void> {
  // Marks every process this run starts (workers, their ffmpeg and fake cameras), so the teardown can check
  // that none of them outlived the suite without touching anyone else's.
  process.env[TEST_RUN_VARIABLE] = `${process.pid}-${Date.now()}`;
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-test-pg-'));
    chmodSync(dir, 0o755); // reachable by the postgres user when the tests run as root
    const embedded = await startEmbeddedPostgres(dir, (m) => process.stderr.write(`${m}\n`), 'postgres_test');
    (globalThis as Record<string, unknown>).__VIGIL_EMBEDDED__ = { embedded, dir };
    serverUrl = embedded.url;
  }
  const template = `vigil_test_template_${process.pid}`;
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  await adminQuery(serverUrl, `CREATE DATABASE ${template}`);
  const dataSource = new DataSource(dataSourceOptions(databaseUrl(serverUrl, template)));
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();
  process.env.VIGIL_TEST_SERVER_URL = serverUrl;
  await probeRedis();
  probeMedia();
  process.env.VIGIL_TEST_TEMPLATE = template;
}

/**
 * Tests of shared limits across instances need Redis. Where none runs (a fresh machine), they are skipped
 * with a notice; in CI (CI=true) a missing Redis fails the run instead.
 */
async function probeRedis(): Promise<void> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    process.env.VIGIL_TEST_REDIS_URL = url;
  } catch (error) {
    if (process.env.CI)
      throw new Error(`Redis is required in CI but ${url} is unreachable: ${(error as Error).message}`, {
        cause: error,
      });
    process.stderr.write(`\nRedis at ${url} is unreachable: the multi-instance tests are skipped.\n`);
  } finally {
    redis.disconnect();
  }
}

/**
 * Live-capture tests need Debian's ffmpeg and GStreamer's RTSP server (Python GI), which `.ci/run` installs.
 * Where they are missing (a fresh machine), those tests are skipped with a notice; in CI they are required.
 */
function probeMedia(): void {
  const missing: string[] = [];
  try {
    execFileSync('ffmpeg', ['-hide_banner', '-version'], { stdio: 'ignore' });
  } catch {
    missing.push('ffmpeg');
  }
  try {
    execFileSync(
      '/usr/bin/python3',
      [
        '-c',
        "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer",
      ],
      { stdio: 'ignore' },
    );
  } catch {
    missing.push('GStreamer RTSP server (python3-gi, gir1.2-gst-rtsp-server-1.0)');
  }
  if (missing.length === 0) {
    process.env.VIGIL_TEST_MEDIA = '1';
    return;
  }
  if (process.env.CI) throw new Error(`The live-capture tests need ${missing.join(' and ')} in CI`);
  process.stderr.write(
    `\n${missing.join(' and ')} not installed: the live-capture tests are skipped (see .ci/run for the packages).\n`,
  );
}
