import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { embeddedMemorySettings } from '../src/database/embedded-postgres';

const ROOT = join(__dirname, '..');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Service {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  baseUrl: string;
}

/** Runs the built service the way `npm start` does, on the embedded database (DATABASE_URL unset). */
async function startService(dataDir: string, env: Record<string, string> = {}): Promise<Service> {
  const port = await freePort();
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...env,
  };
  delete childEnv.DATABASE_URL;
  delete childEnv.REDIS_URL;
  delete childEnv.ADMIN_PASSWORD;
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const ok = await request(baseUrl)
      .get('/api/v1/system/health')
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return { child, output: () => output, exited, baseUrl };
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`The service did not become healthy:\n${output}`);
}

function postgresPid(dataDir: string): number | null {
  const file = join(dataDir, 'postgres', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the service process (npm start on a fresh machine)', () => {
  let dataDir: string;
  let service: Service | undefined;

  beforeAll(() => {
    execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: ROOT });
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-process-'));
    chmodSync(dataDir, 0o755);
  }, 120_000);

  afterAll(async () => {
    if (service && service.child.exitCode === null) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts on the embedded database, drains on SIGTERM, and keeps data, sessions and keys across a restart', async () => {
    service = await startService(dataDir);
    const printed = /password: (\S+)/.exec(service.output());
    expect(printed).not.toBeNull();
    const password = printed![1];
    // The password is printed once, outside the JSON log lines.
    const logLines = service
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.some((l) => l.includes(password))).toBe(false);

    const login = await request(service.baseUrl)
      .post('/api/v1/auth/login')
      .send({ username: 'admin', password })
      .expect(200);
    const token = login.body.access_token as string;
    const created = await request(service.baseUrl)
      .post('/api/v1/api-keys')
      .set('Authorization', `Bearer ${token}`)
      .send({ name: 'survives restarts', scopes: ['admin'] })
      .expect(201);
    const pgPid = postgresPid(dataDir);
    expect(pgPid).not.toBeNull();
    expect(isAlive(pgPid!)).toBe(true);
    // The embedded server is sized for this machine, not PostgreSQL's default 128 MB cache.
    const postgresArgs = readFileSync(`/proc/${pgPid}/cmdline`, 'utf8').split('\0');
    const memory = embeddedMemorySettings(totalmem());
    expect(postgresArgs).toContain(`shared_buffers=${memory.sharedBuffersMb}MB`);
    expect(postgresArgs).toContain(`effective_cache_size=${memory.effectiveCacheMb}MB`);

    // A request in flight when SIGTERM arrives still gets its answer (bcrypt makes login take a while).
    const inFlight = request(service.baseUrl)
      .post('/api/v1/auth/login')
      .send({ username: 'admin', password });
    const answered = inFlight.then((r) => r.status);
    await new Promise((r) => setTimeout(r, 30));
    service.child.kill('SIGTERM');
    expect(await answered).toBe(200);
    expect(await service.exited).toBe(0);
    expect(isAlive(pgPid!)).toBe(false);
    expect(service.output()).not.toContain(created.body.key);
    expect(service.output()).not.toContain(token);

    service = await startService(dataDir);
    expect(service.output()).not.toMatch(/password: /); // the admin exists: nothing new printed
    await request(service.baseUrl).get('/api/v1/auth/me').set('Authorization', `Bearer ${token}`).expect(200);
    await request(service.baseUrl).get('/api/v1/api-keys').set('X-API-Key', created.body.key).expect(200);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  }, 90_000);

  it('refuses to start with a bad value, naming the variable', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
      env: { ...process.env, PORT: 'eighty', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).not.toBe(0);
    expect(stderr).toContain('Invalid configuration: PORT must be an integer from 1 to 65535 (got "eighty")');
  }, 30_000);
});
