#!/usr/bin/env node
// npm run openapi         writes openapi.json from the code (the same document the service serves)
// npm run openapi:check   fails when the committed openapi.json differs from a fresh generation
const { execFileSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const root = join(__dirname, '..');
const target = join(root, 'openapi.json');

async function generate() {
  execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  require('reflect-metadata');
  const { loadConfig } = require('../dist/src/config/config');
  const { createApp } = require('../dist/src/app.setup');
  const { buildOpenApiDocument } = require('../dist/src/docs/openapi');
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-openapi-'));
  try {
    // Preview mode: routes and metadata only; no provider runs, so no database is needed.
    const config = loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused' });
    const app = await createApp(config, { preview: true, logger: false });
    const document = buildOpenApiDocument(app);
    return JSON.stringify(document, null, 2) + '\n';
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const mode = process.argv[2];
  const fresh = await generate();
  if (mode === 'check') {
    let committed;
    try {
      committed = readFileSync(target, 'utf8');
    } catch {
      committed = '';
    }
    if (committed !== fresh) {
      console.error('openapi.json is out of date: run `npm run openapi` and commit the result.');
      process.exit(1);
    }
    console.log('openapi.json matches the code.');
    return;
  }
  writeFileSync(target, fresh);
  console.log(`Wrote ${target}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
