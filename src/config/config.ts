import { isIP } from 'node:net';
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadOrCreateSecret } from './secrets';

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The service's whole configuration, read once from the environment (decisions.md §6). */
export interface AppConfig {
  port: number;
  host: string;
  /** `undefined` means "start the embedded PostgreSQL under DATA_DIR". */
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  dataDir: string;
  jwtSecret: string;
  jwtExpiresInSeconds: number;
  encryptionKey: Buffer;
  adminPassword: string | undefined;
  trustedProxies: string[];
  ssl: { certFile: string; keyFile: string } | undefined;
  logLevel: LogLevel;
  corsOrigins: string[];
  /** bcrypt cost factor; not an environment variable (tests lower it to keep the suite fast). */
  bcryptRounds: number;
  /** How often batched API-key usage is written to the database. */
  usageFlushIntervalMs: number;
}

export const APP_CONFIG = Symbol('APP_CONFIG');

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`Invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function value(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  return trimmed === '' ? undefined : trimmed;
}

function parsePort(raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError('PORT', `must be an integer from 1 to 65535 (got "${raw}")`);
  const port = Number(raw);
  if (port < 1 || port > 65535)
    throw new ConfigError('PORT', `must be an integer from 1 to 65535 (got "${raw}")`);
  return port;
}

function parseUrl(name: string, raw: string | undefined, protocols: string[]): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      name,
      `is not a valid URL (expected ${protocols.map((p) => `${p}//...`).join(' or ')})`,
    );
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')} (got "${url.protocol}")`);
  }
  return raw;
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Parses `JWT_EXPIRES_IN`: seconds (`3600`) or a number with a unit (`30m`, `24h`, `7d`). */
export function parseDuration(name: string, raw: string | undefined, fallbackSeconds: number): number {
  if (raw === undefined) return fallbackSeconds;
  const match = /^(\d+)\s*([smhd]?)$/.exec(raw);
  if (!match) throw new ConfigError(name, `must be seconds or a number with s/m/h/d (got "${raw}")`);
  const seconds = Number(match[1]) * DURATION_UNITS[match[2] || 's'];
  if (seconds < 60 || seconds > 365 * 86400) {
    throw new ConfigError(name, `must be between 1 minute and 365 days (got "${raw}")`);
  }
  return seconds;
}

function isCidrOrIp(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/');
  if (rest.length > 0) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d+$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

function parseTrustedProxies(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    if (!isCidrOrIp(entry)) {
      throw new ConfigError(
        'TRUSTED_PROXIES',
        `must be a comma list of IP addresses or CIDR ranges (bad entry "${entry}")`,
      );
    }
  }
  return entries;
}

function parseCorsOrigins(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    if (entry === '*') continue;
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin !== entry.replace(/\/$/, '')) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `must be a comma list of origins like https://home.example.com, or * (bad entry "${entry}")`,
      );
    }
  }
  return entries.map((e) => e.replace(/\/$/, ''));
}

function readableFile(name: string, path: string): string {
  try {
    if (!statSync(path).isFile()) throw new Error('not a file');
    readFileSync(path);
  } catch {
    throw new ConfigError(name, `must name a readable file (got "${path}")`);
  }
  return path;
}

function parseSsl(env: Env): AppConfig['ssl'] {
  const cert = value(env, 'SSL_CERT_FILE');
  const key = value(env, 'SSL_KEY_FILE');
  // SSL_CERT_FILE alone is OpenSSL's own variable for a CA bundle (many systems set it), so it does not
  // turn https on by itself: only the pair does. SSL_KEY_FILE alone is a mistake.
  if (key === undefined) return undefined;
  if (cert === undefined) throw new ConfigError('SSL_CERT_FILE', 'must be set when SSL_KEY_FILE is set');
  return { certFile: readableFile('SSL_CERT_FILE', cert), keyFile: readableFile('SSL_KEY_FILE', key) };
}

function parseEncryptionKey(raw: string): Buffer {
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, 'hex');
  const decoded = Buffer.from(raw, 'base64');
  if (decoded.length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(raw)) return decoded;
  throw new ConfigError('ENCRYPTION_KEY', 'must be 32 bytes written as 64 hex characters or as base64');
}

/**
 * Reads and validates every variable of decisions.md §6. A bad value throws a ConfigError that names
 * the variable. Secrets that are not given (JWT_SECRET, ENCRYPTION_KEY) are generated once and kept
 * under DATA_DIR so restarts keep sessions and encrypted data.
 */
export function loadConfig(env: Env = process.env): AppConfig {
  const dataDir = resolve(value(env, 'DATA_DIR') ?? './data');
  const logLevel = (value(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }
  const adminPassword = value(env, 'ADMIN_PASSWORD');
  if (adminPassword !== undefined && (adminPassword.length < 8 || Buffer.byteLength(adminPassword) > 72)) {
    throw new ConfigError('ADMIN_PASSWORD', 'must be 8 to 72 bytes long');
  }
  const jwtSecretRaw = value(env, 'JWT_SECRET');
  if (jwtSecretRaw !== undefined && jwtSecretRaw.length < 32) {
    throw new ConfigError('JWT_SECRET', 'must be at least 32 characters long');
  }
  const encryptionRaw = value(env, 'ENCRYPTION_KEY');
  const encryptionKey = encryptionRaw !== undefined ? parseEncryptionKey(encryptionRaw) : undefined;

  const config: AppConfig = {
    port: parsePort(value(env, 'PORT'), 8000),
    host: value(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: parseUrl('DATABASE_URL', value(env, 'DATABASE_URL'), ['postgres:', 'postgresql:']),
    redisUrl: parseUrl('REDIS_URL', value(env, 'REDIS_URL'), ['redis:', 'rediss:']),
    dataDir,
    jwtSecret: '',
    jwtExpiresInSeconds: parseDuration('JWT_EXPIRES_IN', value(env, 'JWT_EXPIRES_IN'), 24 * 3600),
    encryptionKey: Buffer.alloc(0),
    adminPassword,
    trustedProxies: parseTrustedProxies(value(env, 'TRUSTED_PROXIES')),
    ssl: parseSsl(env),
    logLevel: logLevel as LogLevel,
    corsOrigins: parseCorsOrigins(value(env, 'CORS_ORIGINS')),
    bcryptRounds: 12,
    usageFlushIntervalMs: 250,
  };
  config.jwtSecret = jwtSecretRaw ?? loadOrCreateSecret(dataDir, 'jwt_secret', 48).toString('base64url');
  config.encryptionKey = encryptionKey ?? loadOrCreateSecret(dataDir, 'encryption_key', 32);
  return config;
}
