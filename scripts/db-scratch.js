// For the migration script: a PostgreSQL server to work on.
// Uses DATABASE_URL's server when set, else starts an embedded PostgreSQL in a temporary folder.
const { chmodSync, mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

// From dist/, which migration.js builds before it calls these.
const serverAdmin = () => require('../dist/src/database/server-admin');

async function withServer(fn) {
  if (process.env.DATABASE_URL) return fn(process.env.DATABASE_URL);
  const { startEmbeddedPostgres } = require('../dist/src/database/embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'vigil-scratch-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres(dir, (m) => console.error(m), 'postgres_scratch');
  try {
    return await fn(db.url);
  } finally {
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs fn(url) against a new, empty database that is dropped afterwards. */
async function withScratchDatabase(fn) {
  return withServer(async (serverUrl) => {
    const { adminQuery, databaseUrl } = serverAdmin();
    const name = `vigil_scratch_${process.pid}_${Date.now()}`;
    await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
    try {
      return await fn(databaseUrl(serverUrl, name));
    } finally {
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });
}

module.exports = { withServer, withScratchDatabase };
