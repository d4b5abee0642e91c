import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { adminQuery, databaseUrl } from './database';

/**
 * Once per `npm test`: picks the PostgreSQL server (DATABASE_URL's, else an embedded one in a temporary
 * folder), migrates a template database once, and hands both to the test files, which clone the template.
 */
export default async function globalSetup(): Promise<void> {
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
  process.env.VIGIL_TEST_TEMPLATE = template;
}
