#!/usr/bin/env node
// npm run migration:generate -- <Name>   generate a migration from the entities (against a scratch database)
// npm run migration:run                  apply pending migrations to DATABASE_URL
// npm run migration:check                fail when the entities differ from the committed migrations (schema drift)
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');
const { withScratchDatabase } = require('./db-scratch');

const root = join(__dirname, '..');
const typeorm = join(root, 'node_modules', '.bin', 'typeorm');
const run = (args, env) =>
  execFileSync(typeorm, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });

async function main() {
  const [command, name] = process.argv.slice(2);
  execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  const dataSource = ['-d', 'dist/ormconfig.js'];
  if (command === 'run') {
    if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL must name the database to migrate');
    run(['migration:run', ...dataSource]);
    return;
  }
  if (command !== 'generate' && command !== 'check')
    throw new Error('usage: migration.js generate <Name> | run | check');
  if (command === 'generate' && !/^[A-Za-z][A-Za-z0-9]*$/.test(name ?? '')) {
    throw new Error('usage: npm run migration:generate -- <Name> (letters and digits)');
  }
  await withScratchDatabase(async (url) => {
    run(['migration:run', ...dataSource], { DATABASE_URL: url });
    if (command === 'check') {
      run(['migration:generate', ...dataSource, '--check', 'src/database/migrations/Drift'], {
        DATABASE_URL: url,
      });
      console.log('No schema drift: the committed migrations match the entities.');
    } else {
      run(['migration:generate', ...dataSource, '--pretty', `src/database/migrations/${name}`], {
        DATABASE_URL: url,
      });
      console.log('Now add the new class to MIGRATIONS in src/database/migrations/index.ts.');
    }
  });
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
