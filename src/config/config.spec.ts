import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from './config';

/** Explicit secrets, so a load writes nothing (used where DATA_DIR is not a temporary folder). */
const SECRETS = { JWT_SECRET: 'j'.repeat(32), ENCRYPTION_KEY: 'ab'.repeat(32) };

describe('loadConfig', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-config-'));
  });
  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Loads with a temporary DATA_DIR and `env` on top. */
  const load = (env: Record<string, string | undefined> = {}) => loadConfig({ DATA_DIR: dataDir, ...env });

  function expectConfigError(env: Record<string, string>, variable: string): ConfigError {
    let caught: unknown;
    try {
      load(env);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
    return error;
  }

  describe('defaults', () => {
    it('listens on 0.0.0.0:8000 with info logs, 24 h tokens, no Redis, CORS, proxies or https', () => {
      const config = load();
      expect(config.port).toBe(8000);
      expect(config.host).toBe('0.0.0.0');
      expect(config.jwtExpiresInSeconds).toBe(24 * 3600);
      expect(config.logLevel).toBe('info');
      expect(config.databaseUrl).toBeUndefined();
      expect(config.redisUrl).toBeUndefined();
      expect(config.corsOrigins).toEqual([]);
      expect(config.trustedProxies).toEqual([]);
      expect(config.ssl).toBeUndefined();
      expect(config.adminPassword).toBeUndefined();
    });

    it('uses ./data, resolved against the working directory, when DATA_DIR is unset', () => {
      const config = loadConfig({ ...SECRETS });
      expect(config.dataDir).toBe(resolve(process.cwd(), 'data'));
    });

    it('resolves a relative DATA_DIR to an absolute path', () => {
      const config = loadConfig({ ...SECRETS, DATA_DIR: 'some/relative/dir' });
      expect(config.dataDir).toBe(resolve(process.cwd(), 'some/relative/dir'));
    });

    it('treats empty or blank variables as unset (as docker compose passes them)', () => {
      const config = load({ PORT: '', LOG_LEVEL: '  ', CORS_ORIGINS: '', REDIS_URL: '', JWT_EXPIRES_IN: '' });
      expect(config.port).toBe(8000);
      expect(config.logLevel).toBe('info');
      expect(config.corsOrigins).toEqual([]);
      expect(config.redisUrl).toBeUndefined();
      expect(config.jwtExpiresInSeconds).toBe(24 * 3600);
    });
  });

  describe('valid values', () => {
    it('reads every variable', () => {
      const config = load({
        PORT: ' 8443 ',
        HOST: '127.0.0.1',
        DATABASE_URL: 'postgresql://vigil:pw@db:5432/vigil',
        REDIS_URL: 'rediss://cache:6380/0',
        LOG_LEVEL: 'DEBUG',
        TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.1,::1, fd00::/64',
        CORS_ORIGINS: 'https://home.example.com/, http://ha.local:8123',
        ADMIN_PASSWORD: 'correct horse',
        JWT_SECRET: 's'.repeat(40),
        JWT_EXPIRES_IN: '30m',
      });
      expect(config.port).toBe(8443);
      expect(config.host).toBe('127.0.0.1');
      expect(config.databaseUrl).toBe('postgresql://vigil:pw@db:5432/vigil');
      expect(config.redisUrl).toBe('rediss://cache:6380/0');
      expect(config.logLevel).toBe('debug');
      expect(config.trustedProxies).toEqual(['10.0.0.0/8', '192.168.1.1', '::1', 'fd00::/64']);
      expect(config.corsOrigins).toEqual(['https://home.example.com', 'http://ha.local:8123']);
      expect(config.adminPassword).toBe('correct horse');
      expect(config.jwtSecret).toBe('s'.repeat(40));
      expect(config.jwtExpiresInSeconds).toBe(1800);
    });

    it.each([
      ['3600', 3600],
      ['90s', 90],
      ['12h', 12 * 3600],
      ['7d', 7 * 86400],
    ])('reads JWT_EXPIRES_IN=%s as %i seconds', (raw, seconds) => {
      expect(load({ JWT_EXPIRES_IN: raw }).jwtExpiresInSeconds).toBe(seconds);
    });

    it('accepts ENCRYPTION_KEY as 64 hex characters or as base64 of 32 bytes', () => {
      const bytes = randomBytes(32);
      expect(load({ ENCRYPTION_KEY: bytes.toString('hex') }).encryptionKey.equals(bytes)).toBe(true);
      expect(load({ ENCRYPTION_KEY: bytes.toString('base64') }).encryptionKey.equals(bytes)).toBe(true);
    });

    it('serves https when both SSL files are set and readable', () => {
      const cert = join(dataDir, 'cert.pem');
      const key = join(dataDir, 'key.pem');
      writeFileSync(cert, 'cert');
      writeFileSync(key, 'key');
      expect(load({ SSL_CERT_FILE: cert, SSL_KEY_FILE: key }).ssl).toEqual({ certFile: cert, keyFile: key });
    });

    it('ignores SSL_CERT_FILE alone (OpenSSL uses it for CA bundles)', () => {
      expect(load({ SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt' }).ssl).toBeUndefined();
    });

    it('accepts CORS_ORIGINS=*', () => {
      expect(load({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    });
  });

  describe('bad values throw a ConfigError naming the variable', () => {
    it.each([
      ['PORT', 'abc'],
      ['PORT', '70000'],
      ['PORT', '0'],
      ['PORT', '-1'],
      ['PORT', '80.5'],
      ['DATABASE_URL', 'mysql://x'],
      ['DATABASE_URL', 'not a url'],
      ['REDIS_URL', 'http://x'],
      ['LOG_LEVEL', 'loud'],
      ['TRUSTED_PROXIES', 'not-an-ip'],
      ['TRUSTED_PROXIES', '10.0.0.1, 10.0.0.0/33'],
      ['TRUSTED_PROXIES', '10.0.0.0/8/1'],
      ['CORS_ORIGINS', 'ftp://x'],
      ['CORS_ORIGINS', 'https://home.example.com/app'],
      ['CORS_ORIGINS', 'home.example.com'],
      ['ENCRYPTION_KEY', 'abcd'],
      ['ENCRYPTION_KEY', 'ab'.repeat(31)],
      ['ENCRYPTION_KEY', randomBytes(16).toString('base64')],
      ['JWT_SECRET', 'too-short'],
      ['JWT_SECRET', 'x'.repeat(31)],
      ['ADMIN_PASSWORD', 'short'],
      ['ADMIN_PASSWORD', 'p'.repeat(73)],
      ['JWT_EXPIRES_IN', 'soon'],
      ['JWT_EXPIRES_IN', '-5m'],
      ['JWT_EXPIRES_IN', '10s'],
      ['JWT_EXPIRES_IN', '400d'],
    ])('%s=%s', (variable, raw) => {
      const error = expectConfigError({ [variable]: raw }, variable);
      expect(error.message).toMatch(/^Invalid configuration: /);
    });

    it('names SSL_CERT_FILE when SSL_KEY_FILE is set without it', () => {
      const key = join(dataDir, 'key.pem');
      writeFileSync(key, 'key');
      expectConfigError({ SSL_KEY_FILE: key }, 'SSL_CERT_FILE');
    });

    it('names the SSL file that cannot be read', () => {
      const cert = join(dataDir, 'cert.pem');
      writeFileSync(cert, 'cert');
      const missing = join(dataDir, 'missing.pem');
      expect(
        expectConfigError({ SSL_CERT_FILE: cert, SSL_KEY_FILE: missing }, 'SSL_KEY_FILE').message,
      ).toContain(missing);
      expectConfigError({ SSL_CERT_FILE: missing, SSL_KEY_FILE: cert }, 'SSL_CERT_FILE');
      expectConfigError({ SSL_CERT_FILE: dataDir, SSL_KEY_FILE: cert }, 'SSL_CERT_FILE');
    });

    it('does not echo a bad secret back in the message', () => {
      const error = expectConfigError({ JWT_SECRET: 'hunter2-secret' }, 'JWT_SECRET');
      expect(error.message).not.toContain('hunter2-secret');
      const password = expectConfigError({ ADMIN_PASSWORD: 'pw1234' }, 'ADMIN_PASSWORD');
      expect(password.message).not.toContain('pw1234');
    });
  });

  describe('generated secrets', () => {
    const secretFile = (name: string) => join(dataDir, 'secrets', name);

    it('generates JWT_SECRET and ENCRYPTION_KEY once and keeps them under DATA_DIR/secrets', () => {
      const first = load();
      expect(first.jwtSecret.length).toBeGreaterThanOrEqual(32);
      expect(first.encryptionKey.length).toBe(32);
      const second = load();
      expect(second.jwtSecret).toBe(first.jwtSecret);
      expect(second.encryptionKey.equals(first.encryptionKey)).toBe(true);
      expect(existsSync(secretFile('jwt_secret'))).toBe(true);
      expect(existsSync(secretFile('encryption_key'))).toBe(true);
      // Stored in the file, not derived from anything: the key on disk is the key in use.
      const stored = Buffer.from(readFileSync(secretFile('encryption_key'), 'utf8').trim(), 'base64');
      expect(stored.equals(first.encryptionKey)).toBe(true);
    });

    it('keeps the secret files readable by the service user only (0600, folder 0700)', () => {
      load();
      expect(statSync(secretFile('jwt_secret')).mode & 0o777).toBe(0o600);
      expect(statSync(secretFile('encryption_key')).mode & 0o777).toBe(0o600);
      expect(statSync(join(dataDir, 'secrets')).mode & 0o777).toBe(0o700);
    });

    it('generates different secrets for a different DATA_DIR', () => {
      const other = mkdtempSync(join(tmpdir(), 'vigil-config-'));
      try {
        const a = load();
        const b = loadConfig({ DATA_DIR: other });
        expect(b.jwtSecret).not.toBe(a.jwtSecret);
        expect(b.encryptionKey.equals(a.encryptionKey)).toBe(false);
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    });

    it('creates a DATA_DIR that does not exist yet', () => {
      const nested = join(dataDir, 'a', 'b');
      const config = loadConfig({ DATA_DIR: nested });
      expect(config.dataDir).toBe(nested);
      expect(existsSync(join(nested, 'secrets', 'jwt_secret'))).toBe(true);
    });

    it('uses given secrets and writes no file for them', () => {
      const config = load({ ...SECRETS });
      expect(config.jwtSecret).toBe(SECRETS.JWT_SECRET);
      expect(config.encryptionKey.toString('hex')).toBe(SECRETS.ENCRYPTION_KEY);
      expect(existsSync(secretFile('jwt_secret'))).toBe(false);
      expect(existsSync(secretFile('encryption_key'))).toBe(false);
    });

    it('refuses to start with a damaged secret file instead of silently replacing it', () => {
      load();
      writeFileSync(secretFile('encryption_key'), 'c2hvcnQ=\n');
      expect(() => load()).toThrow(/encryption_key.*damaged/);
    });
  });
});
