import { request } from 'node:https';
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import type { SecretBox } from '../../common/crypto/secret-box';
import type { ProtectControllerEntity } from './entities/protect-controller.entity';
import type { ProtectApi, ProtectNvrBootstrap } from 'unifi-protect';
import {
  consoleAddress,
  createProtectApi,
  disposeProtectApi,
  ProtectLog,
  type ProtectLogLine,
} from './protect-api';

/** The whole test answers within this (the specification's 15 s, with slack for the response). */
export const CONTROLLER_TEST_DEADLINE_MS = 14_000;
/** Each network probe before the login (TLS handshake, the UniFi OS check) gets this long. */
const PROBE_TIMEOUT_MS = 5_000;

/** What it takes to reach a console (a saved controller's, or one being tested). */
export interface ControllerConnection {
  host: string;
  port: number;
  username: string;
  password: string;
  verifyTls: boolean;
}

/** A saved controller's connection, its password decrypted. */
export function savedConnection(
  controller: ProtectControllerEntity,
  secrets: SecretBox,
): ControllerConnection {
  return {
    host: controller.host,
    port: controller.port,
    username: controller.username,
    password: secrets.decrypt(controller.passwordEncrypted),
    verifyTls: controller.verifyTls,
  };
}

export interface ControllerTestResult {
  success: boolean;
  message: string;
  console_name: string | null;
  version: string | null;
  camera_count: number | null;
  latency_ms: number;
}

/** A test step that failed, with the message the user sees. */
class TestFailure extends Error {}

const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** What a failed connection attempt means for the user, by the error's code. */
export function describeConnectError(error: NodeJS.ErrnoException, where: string): string {
  const code = error.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `Host unreachable: ${where} was not found (DNS)`;
  if (code === 'ECONNREFUSED') return `Host unreachable: ${where} refused the connection`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EHOSTDOWN')
    return `Host unreachable: no route to ${where}`;
  if (code === 'ETIMEDOUT') return `Connection timed out: no answer from ${where}`;
  if (CERTIFICATE_ERRORS.has(code))
    return `TLS verification failed: the certificate of ${where} is not trusted (${code}); turn verify_tls off for a self-signed console certificate`;
  if (code === 'ECONNRESET')
    return `Not a UniFi Protect console: ${where} closed the connection during the TLS handshake`;
  return `Not a UniFi Protect console: no TLS connection to ${where} (${code || error.message})`;
}

/** The TLS handshake alone: unreachable hosts, timeouts and untrusted certificates, told apart quickly. */
function probeTls(target: ControllerConnection, where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: target.host,
      port: target.port,
      servername: isIP(target.host) ? undefined : target.host,
      rejectUnauthorized: target.verifyTls,
      timeout: PROBE_TIMEOUT_MS,
    });
    socket.once('secureConnect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('timeout', () => {
      socket.destroy();
      reject(
        new TestFailure(`Connection timed out: no answer from ${where} within ${PROBE_TIMEOUT_MS / 1000} s`),
      );
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      reject(new TestFailure(describeConnectError(error, where))),
    );
  });
}

/**
 * The TLS handshake alone (within PROBE_TIMEOUT_MS), for connections about to log in: null when it works,
 * else why not (host unreachable, timed out, TLS verification failed), long before the library would say.
 */
export async function tlsFailure(target: ControllerConnection): Promise<string | null> {
  try {
    await probeTls(target, consoleAddress(target.host, target.port));
    return null;
  } catch (error) {
    if (error instanceof TestFailure) return error.message;
    throw error;
  }
}

/** UniFi OS answers `GET /` with an X-CSRF-Token header (the library's login needs it); other servers do not. */
function probeUnifiOs(target: ControllerConnection, where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        path: '/',
        method: 'GET',
        rejectUnauthorized: target.verifyTls,
        timeout: PROBE_TIMEOUT_MS,
        headers: { 'user-agent': 'vigil' },
      },
      (res) => {
        res.resume();
        if (res.headers['x-csrf-token']) resolve();
        else
          reject(
            new TestFailure(
              `Not a UniFi Protect console: ${where} answered HTTP ${res.statusCode} without the UniFi OS login (no CSRF token)`,
            ),
          );
      },
    );
    req.once('timeout', () => {
      req.destroy();
      reject(
        new TestFailure(
          `Connection timed out: ${where} did not answer an HTTPS request within ${PROBE_TIMEOUT_MS / 1000} s`,
        ),
      );
    });
    req.once('error', (error: NodeJS.ErrnoException) =>
      reject(new TestFailure(describeConnectError(error, where))),
    );
    req.end();
  });
}

/**
 * Why the library's login() answered false, from its log lines. Connection and certificate errors are told
 * by their codes: the library logs them as `Error: <code> | …` or, when its `instanceof` checks fail (another
 * realm, as under Jest), as an inspected error with its stack and `code: '<code>'`. A stack never reaches the
 * message.
 */
export function loginFailure(lines: ProtectLogLine[]): string {
  const text = lines.map((l) => l.message).join('\n');
  if (/Invalid login credentials/i.test(text)) return 'Authentication failed: wrong username or password';
  if (/Insufficient privileges/i.test(text))
    return 'Authentication failed: the user may not sign in to Protect (give it view rights)';
  const certificate = [...CERTIFICATE_ERRORS].find((code) => text.includes(code));
  if (certificate)
    return `TLS verification failed: the console's certificate is not trusted (${certificate}); turn verify_tls off for a self-signed console certificate`;
  if (/ECONNREFUSED|Connection refused/i.test(text))
    return 'Host unreachable: the console refused the connection';
  if (/ENOTFOUND|EAI_AGAIN|Hostname or IP address not found/i.test(text))
    return 'Host unreachable: the host name was not found (DNS)';
  if (/EHOSTUNREACH|ENETUNREACH|EHOSTDOWN/.test(text)) return 'Host unreachable: no route to the console';
  if (/timed out|taking too long|ETIMEDOUT/i.test(text))
    return 'Connection timed out: the console did not answer the login';
  if (/Unable to connect/i.test(text))
    return 'Login failed: the console refused the login for now (too many attempts, or it is restarting); try again later';
  const last = lines.filter((l) => l.level === 'error').pop();
  const reason = last?.message.split('\n')[0].trim().slice(0, 300);
  return `Login failed${reason ? `: ${reason}` : ''}`;
}

/** Login and bootstrap through the library: the console's bootstrap, or a TestFailure saying why not. */
async function loginAndBootstrap(
  api: ProtectApi,
  log: ProtectLog,
  target: ControllerConnection,
): Promise<ProtectNvrBootstrap> {
  if (!(await api.login(consoleAddress(target.host, target.port), target.username, target.password)))
    throw new TestFailure(loginFailure(log.lines));
  const ok = await api.getBootstrap();
  const bootstrap = api.bootstrap;
  if (!bootstrap?.nvr || !Array.isArray(bootstrap.cameras))
    throw new TestFailure(
      'Not a UniFi Protect console: UniFi OS answered, but not the Protect application (is Protect installed and running?)',
    );
  if (!ok)
    throw new TestFailure(
      `Connected to ${consoleName(bootstrap) ?? 'the console'}, but it refused the realtime update stream`,
    );
  return bootstrap;
}

export function consoleName(bootstrap: ProtectNvrBootstrap): string | null {
  return bootstrap.nvr.name ?? bootstrap.nvr.marketName ?? null;
}

export type ConsoleRead =
  | { ok: true; bootstrap: ProtectNvrBootstrap; latencyMs: number }
  | { ok: false; message: string; latencyMs: number };

/**
 * One look at a console, within CONTROLLER_TEST_DEADLINE_MS: the TLS handshake, the UniFi OS check, then
 * login and bootstrap through the same library the connections use. A failure says precisely why:
 * authentication failed, TLS verification failed, host unreachable, timed out, not a Protect console.
 */
export async function readConsole(target: ControllerConnection): Promise<ConsoleRead> {
  const started = Date.now();
  const where = consoleAddress(target.host, target.port);
  const log = new ProtectLog();
  const state: { api: ProtectApi | null; over: boolean } = { api: null, over: false };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TestFailure(
            `Connection timed out: ${where} did not complete the login within ${CONTROLLER_TEST_DEADLINE_MS / 1000} s`,
          ),
        ),
      CONTROLLER_TEST_DEADLINE_MS,
    );
  });
  const attempt = async () => {
    await probeTls(target, where);
    await probeUnifiOs(target, where);
    const api = await createProtectApi(log, target.verifyTls);
    if (state.over) {
      disposeProtectApi(api); // the deadline passed meanwhile
      throw new TestFailure('Connection timed out');
    }
    state.api = api;
    return loginAndBootstrap(api, log, target);
  };
  try {
    const bootstrap = await Promise.race([attempt(), deadline]);
    return { ok: true, bootstrap, latencyMs: Date.now() - started };
  } catch (error) {
    if (!(error instanceof TestFailure)) throw error;
    return { ok: false, message: error.message, latencyMs: Date.now() - started };
  } finally {
    state.over = true;
    clearTimeout(timer);
    // A library call still running after the deadline ends quietly once its pools are gone.
    if (state.api) disposeProtectApi(state.api);
  }
}

/** POST /protect/controllers/test: readConsole as the API answers it (nothing is saved). */
export async function testController(target: ControllerConnection): Promise<ControllerTestResult> {
  const read = await readConsole(target);
  if (!read.ok)
    return {
      success: false,
      message: read.message,
      console_name: null,
      version: null,
      camera_count: null,
      latency_ms: read.latencyMs,
    };
  const name = consoleName(read.bootstrap);
  const version = read.bootstrap.nvr.version ?? null;
  const count = read.bootstrap.cameras.length;
  return {
    success: true,
    message: `Connected to ${name ?? 'the console'} (Protect ${version ?? 'unknown version'}, ${count} camera${count === 1 ? '' : 's'})`,
    console_name: name,
    version,
    camera_count: count,
    latency_ms: read.latencyMs,
  };
}
