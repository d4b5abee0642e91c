import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import request from 'supertest';
import { ImageStore } from '../src/common/storage/image-store';
import { startTestApp, TestApp } from './support/test-app';

const DAY_MS = 86_400_000;

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: 'pipe' });
  } catch (error) {
    throw new Error(
      `The SSL tests need the openssl command line tool (openssl ${args.join(' ')} failed: ${(error as Error).message})`,
      { cause: error },
    );
  }
}

/** The certificate a TLS client receives from 127.0.0.1:port. */
function servedCertificate(port: number): Promise<{ fingerprint256: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerCertificate();
      socket.end();
      resolve(cert);
    });
    socket.on('error', reject);
  });
}

describe('GET /api/v1/system/storage', () => {
  let t: TestApp;
  let admin: string;
  const auth = () => ({ Authorization: `Bearer ${admin}` });
  const storage = async () => (await t.http.get('/api/v1/system/storage').set(auth()).expect(200)).body;

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
  });
  afterAll(() => t.close());

  it('reports an empty store: no events, no images, the database size and the disk of DATA_DIR', async () => {
    const body = await storage();
    expect(Object.keys(body).sort()).toEqual(
      [
        'data_dir',
        'database_size_bytes',
        'disk_free_bytes',
        'disk_total_bytes',
        'event_count',
        'images_bytes',
        'newest_event_at',
        'oldest_event_at',
      ].sort(),
    );
    expect(body).toMatchObject({
      event_count: 0,
      images_bytes: 0,
      oldest_event_at: null,
      newest_event_at: null,
      data_dir: t.config.dataDir,
    });
    const [{ size }] = await t.sql<{ size: string }>('SELECT pg_database_size(current_database()) AS size');
    expect(body.database_size_bytes).toBeGreaterThan(1_000_000);
    expect(Math.abs(body.database_size_bytes - Number(size))).toBeLessThan(2 * 1024 * 1024);

    const fs = statfsSync(t.config.dataDir);
    expect(body.disk_total_bytes).toBe(fs.blocks * fs.bsize);
    expect(body.disk_free_bytes).toBeGreaterThan(0);
    expect(body.disk_free_bytes).toBeLessThanOrEqual(body.disk_total_bytes);
    expect(Math.abs(body.disk_free_bytes - fs.bavail * fs.bsize)).toBeLessThan(1024 ** 3);
  });

  it('counts the stored events, their time span and the bytes of their images', async () => {
    const [{ id: cameraId }] = await t.sql<{ id: string }>(
      "INSERT INTO cameras (name, source_type, url) VALUES ('Storage cam', 'rtsp', 'rtsp://127.0.0.1/x') RETURNING id",
    );
    const store = t.app.get(ImageStore);
    const imageA = await store.save(Buffer.alloc(1000, 1));
    const imageB = await store.save(Buffer.alloc(23_456, 2));
    const oldest = new Date(Date.now() - 40 * DAY_MS);
    oldest.setMilliseconds(123);
    const newest = new Date(Date.now() - 1000);
    for (const [timestamp, image] of [
      [oldest, imageA],
      [new Date(Date.now() - DAY_MS), imageB],
      [newest, null],
    ] as const) {
      await t.sql(
        `INSERT INTO events (camera_id, "timestamp", detection_type, source_type, image_file)
         VALUES ($1, $2, 'vehicle', 'rtsp', $3)`,
        [cameraId, timestamp, image],
      );
    }
    const body = await storage();
    expect(body).toMatchObject({
      event_count: 3,
      images_bytes: 24_456,
      oldest_event_at: oldest.toISOString(),
      newest_event_at: newest.toISOString(),
    });

    await store.remove([imageA]);
    await t.sql('DELETE FROM events WHERE "timestamp" = $1', [oldest]);
    expect(await storage()).toMatchObject({ event_count: 2, images_bytes: 23_456 });
  });

  it('needs the admin scope', async () => {
    const { key } = await t.createApiKey({ name: 'ro', scopes: ['read:events', 'read:cameras'] });
    const res = await t.http.get('/api/v1/system/storage').set('X-API-Key', key).expect(403);
    expect(res.body.detail).toBe('Insufficient permissions. Required scope: admin');
    await t.http.get('/api/v1/system/storage').expect(401);
  });
});

describe('GET /api/v1/system/ssl-status', () => {
  describe('without SSL_CERT_FILE/SSL_KEY_FILE', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t.close());

    it('reports https off, with every certificate field null', async () => {
      expect(t.baseUrl).toMatch(/^http:/);
      const admin = await t.adminToken();
      const res = await t.http
        .get('/api/v1/system/ssl-status')
        .set('Authorization', `Bearer ${admin}`)
        .expect(200);
      expect(res.body).toEqual({
        enabled: false,
        cert_file: null,
        key_file: null,
        subject: null,
        issuer: null,
        subject_alt_name: null,
        valid_from: null,
        valid_to: null,
        days_remaining: null,
        expired: null,
        key_type: null,
        self_signed: null,
        fingerprint_sha256: null,
      });
    });

    it('needs the admin scope', async () => {
      const { key } = await t.createApiKey({ name: 'w', scopes: ['write:cameras'] });
      await t.http.get('/api/v1/system/ssl-status').set('X-API-Key', key).expect(403);
      await t.http.get('/api/v1/system/ssl-status').expect(401);
    });
  });

  describe('with a self-signed certificate', () => {
    let dir: string;
    let t: TestApp;
    let admin: string;
    const certFile = () => join(dir, 'cert.pem');
    const keyFile = () => join(dir, 'key.pem');
    const status = async () =>
      (await t.http.get('/api/v1/system/ssl-status').set('Authorization', `Bearer ${admin}`).expect(200))
        .body;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'vigil-ssl-'));
      // RSA 2048, self-signed, valid 30 days, for localhost and 127.0.0.1.
      openssl(
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          'key.pem',
          '-out',
          'cert.pem',
          '-days',
          '30',
          '-subj',
          '/CN=localhost/O=Vigil Test',
          '-addext',
          'subjectAltName=DNS:localhost,IP:127.0.0.1',
        ],
        dir,
      );
      copyFileSync(certFile(), join(dir, 'original-cert.pem'));
      // A CA and an EC (prime256v1) certificate it signs, for the "renewed on disk" case.
      openssl(
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          'ca.key',
          '-out',
          'ca.pem',
          '-days',
          '365',
          '-subj',
          '/CN=Vigil Test CA',
        ],
        dir,
      );
      openssl(
        [
          'req',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-keyout',
          'ec.key',
          '-out',
          'ec.csr',
          '-subj',
          '/CN=vigil.home',
        ],
        dir,
      );
      openssl(
        [
          'x509',
          '-req',
          '-in',
          'ec.csr',
          '-CA',
          'ca.pem',
          '-CAkey',
          'ca.key',
          '-set_serial',
          '7',
          '-days',
          '10',
          '-out',
          'ec.pem',
        ],
        dir,
      );
      t = await startTestApp({ env: { SSL_CERT_FILE: certFile(), SSL_KEY_FILE: keyFile() } });
      admin = await t.adminToken();
    });
    afterAll(async () => {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('serves the API over https with that certificate', async () => {
      expect(t.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const { port } = t.app.getHttpServer().address() as AddressInfo;
      const served = await servedCertificate(port);
      expect(served.fingerprint256).toBe(new X509Certificate(readFileSync(certFile())).fingerprint256);
      // A client that does not trust the self-signed certificate is refused by TLS itself...
      await expect(request(t.baseUrl).get('/api/v1/system/health')).rejects.toThrow(/self[- ]signed/i);
      // ...and plain http to the same port gets no API answer.
      await expect(request(`http://127.0.0.1:${port}`).get('/api/v1/system/health')).rejects.toThrow();
      const health = await t.http.get('/api/v1/system/health').expect(200);
      expect(health.body.status).toBe('ok');
      expect(health.headers['strict-transport-security']).toMatch(/max-age=/);
    });

    it("reports the certificate's subject, issuer, validity, days left and key type", async () => {
      const cert = new X509Certificate(readFileSync(certFile()));
      const body = await status();
      expect(body).toEqual({
        enabled: true,
        cert_file: certFile(),
        key_file: keyFile(),
        subject: 'CN=localhost, O=Vigil Test',
        issuer: 'CN=localhost, O=Vigil Test',
        subject_alt_name: 'DNS:localhost, IP Address:127.0.0.1',
        valid_from: new Date(cert.validFrom).toISOString(),
        valid_to: new Date(cert.validTo).toISOString(),
        days_remaining: 29,
        expired: false,
        key_type: 'RSA 2048',
        self_signed: true,
        fingerprint_sha256: cert.fingerprint256,
      });
      const validFrom = Date.parse(body.valid_from);
      expect(Math.abs(validFrom - Date.now())).toBeLessThan(5 * 60_000);
      expect(Date.parse(body.valid_to) - validFrom).toBe(30 * DAY_MS);
    });

    it('reads the files on each request: a renewed CA-signed EC certificate shows as such', async () => {
      copyFileSync(join(dir, 'ec.pem'), certFile());
      copyFileSync(join(dir, 'ec.key'), keyFile());
      const body = await status();
      expect(body).toMatchObject({
        enabled: true,
        subject: 'CN=vigil.home',
        issuer: 'CN=Vigil Test CA',
        subject_alt_name: null,
        days_remaining: 9,
        expired: false,
        key_type: 'EC prime256v1',
        self_signed: false,
      });
      expect(body.error).toBeUndefined();
    });

    it('says when the key does not belong to the certificate, or a file cannot be read', async () => {
      copyFileSync(join(dir, 'original-cert.pem'), certFile());
      copyFileSync(join(dir, 'ec.key'), keyFile());
      const mismatch = await status();
      expect(mismatch).toMatchObject({
        enabled: true,
        key_type: 'RSA 2048',
        subject: 'CN=localhost, O=Vigil Test',
      });
      expect(mismatch.error).toBe('The private key in SSL_KEY_FILE does not match the certificate');

      rmSync(certFile());
      const missing = await status();
      expect(missing).toMatchObject({ enabled: true, cert_file: certFile(), subject: null, key_type: null });
      expect(missing.error).toMatch(/^Cannot read the certificate in SSL_CERT_FILE: .*ENOENT/);
    });
  });
});
