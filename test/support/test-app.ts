import type { NestExpressApplication } from '@nestjs/platform-express';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createApp } from '../../src/app.setup';
import { JsonLogger } from '../../src/common/logging/json-logger';
import { AppConfig, loadConfig } from '../../src/config/config';
import { adminQuery, databaseUrl, templateDatabase, testServerUrl } from './database';
import { ContractChecker } from './contract';
import { childProcessIds } from './processes';

export const ADMIN_PASSWORD = 'admin-password-123';

/** supertest's `.parse()` for a binary response (a JPEG): the body as one Buffer. */
export function binaryBody(res: request.Response, done: (error: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';

/** supertest requests against the running app; every response is checked against the OpenAPI document. */
export class TestClient {
  constructor(
    readonly baseUrl: string,
    readonly contract: ContractChecker,
    /** Trusted certificate for an https app (its own self-signed certificate). */
    readonly ca?: Buffer,
  ) {}

  get(path: string) {
    return this.send('get', path);
  }
  post(path: string) {
    return this.send('post', path);
  }
  put(path: string) {
    return this.send('put', path);
  }
  delete(path: string) {
    return this.send('delete', path);
  }
  patch(path: string) {
    return this.send('patch', path);
  }

  private send(method: Method, path: string) {
    const agent = request(this.baseUrl);
    const test = agent[method](path);
    if (this.ca) test.ca(this.ca);
    return test.expect((res) => this.contract.check(method, path, res));
  }
}

export interface TestApp {
  app: NestExpressApplication;
  config: AppConfig;
  baseUrl: string;
  databaseName: string;
  databaseUrl: string;
  http: TestClient;
  /** A fresh admin JWT (logs in as the first-start admin). */
  adminToken(): Promise<string>;
  /** Creates an API key through the API and returns the full key and its id. */
  createApiKey(body: Record<string, unknown>): Promise<{ key: string; id: string }>;
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Shuts the app down like SIGTERM would, keeping its database (for restart tests); close() still cleans up. */
  stopApp(): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Environment variables on top of the test defaults. */
  env?: Record<string, string>;
  /** Share another app's database (to run two instances on one database). */
  databaseName?: string;
  /** Log through this logger (to stdout) instead of the default: no logs at all. */
  logger?: JsonLogger;
}

/**
 * Boots the whole AppModule over real HTTP on a random port, on a new database cloned from the migrated
 * template (or on `databaseName`), with its own DATA_DIR.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const serverUrl = testServerUrl();
  const ownsDatabase = options.databaseName === undefined;
  const databaseName = options.databaseName ?? `vigil_t_${randomBytes(6).toString('hex')}`;
  if (ownsDatabase)
    await adminQuery(serverUrl, `CREATE DATABASE ${databaseName} TEMPLATE ${templateDatabase()}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-test-data-'));
  const url = databaseUrl(serverUrl, databaseName);
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: url,
    ADMIN_PASSWORD,
    LOG_LEVEL: 'error',
    ...options.env,
  });
  config.bcryptRounds = 4;
  const app = await createApp(config, { logger: options.logger ?? false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  // With SSL_CERT_FILE/SSL_KEY_FILE the app serves https; the client then trusts that certificate.
  const ca = config.ssl ? readFileSync(config.ssl.certFile) : undefined;
  const baseUrl = `${ca ? 'https' : 'http'}://127.0.0.1:${port}`;
  const docRequest = request(baseUrl).get('/openapi.json');
  if (ca) docRequest.ca(ca);
  const document = (await docRequest.expect(200)).body;
  const http = new TestClient(baseUrl, new ContractChecker(document), ca);

  let appStopped = false;
  const testApp: TestApp = {
    app,
    config,
    baseUrl,
    databaseName,
    databaseUrl: url,
    http,
    async adminToken() {
      const res = await http
        .post('/api/v1/auth/login')
        .send({ username: 'admin', password: ADMIN_PASSWORD })
        .expect(200);
      return res.body.access_token as string;
    },
    async createApiKey(body) {
      const token = await testApp.adminToken();
      const res = await http
        .post('/api/v1/api-keys')
        .set('Authorization', `Bearer ${token}`)
        .send(body)
        .expect(201);
      return { key: res.body.key as string, id: res.body.id as string };
    },
    async sql(query, params = []) {
      const ds = app.get(DataSource);
      return ds.query(query, params);
    },
    async stopApp() {
      if (appStopped) return;
      appStopped = true;
      await app.close();
    },
    async close() {
      await testApp.stopApp();
      // Capture must end its ffmpeg children before the app has closed: none may outlive it.
      const left = childProcessIds('ffmpeg');
      if (left.length > 0) {
        for (const pid of left) process.kill(pid, 'SIGKILL');
        throw new Error(`ffmpeg processes outlived the app: ${left.join(', ')}`);
      }
      if (ownsDatabase) await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return testApp;
}
