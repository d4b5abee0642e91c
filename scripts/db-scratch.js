// Shared by the migration script and the test set-up: a PostgreSQL server to work on.
// Uses DATABASE_URL's server when set, else starts an embedded PostgreSQL in a temporary folder.
const { Client } = require('pg');
const { chmodSync, mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

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

function withDatabase(serverUrl, name) {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin(serverUrl, sql) {
  const url = new URL(serverUrl);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Runs fn(url) against a new, empty database that is dropped afterwards. */
async function withScratchDatabase(fn) {
  return withServer(async (serverUrl) => {
    const name = `vigil_scratch_${process.pid}_${Date.now()}`;
    await admin(serverUrl, `CREATE DATABASE ${name}`);
    try {
      return await fn(withDatabase(serverUrl, name));
    } finally {
      await admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });
}

module.exports = { withServer, withScratchDatabase, withDatabase, admin };
