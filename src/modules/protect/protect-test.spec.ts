import type { ProtectLogLine } from './protect-api';
import { loginFailure } from './protect-test';

const error = (message: string): ProtectLogLine => ({ level: 'error', message });

/** An error as the library logs it when its `instanceof` checks fail (util.inspect: stack and properties). */
const inspected = (text: string, code: string) =>
  error(
    `127.0.0.1:7443: API error: Unknown error: Error: ${text}\n    at TLSSocket.onConnectSecure (node:_tls_wrap:1699:34)\n` +
      `    at TLSWrap.callbackTrampoline (node:internal/async_hooks:130:17) {\n  code: '${code}'\n}`,
  );

describe('loginFailure (why the library could not log in)', () => {
  it.each([
    [
      'a wrong password',
      [
        error(
          '127.0.0.1:7443: API error: Invalid login credentials given. Please check your login and password.',
        ),
      ],
      'Authentication failed: wrong username or password',
    ],
    [
      'an untrusted certificate (plain Node)',
      [error('127.0.0.1:7443: API error: Error: DEPTH_ZERO_SELF_SIGNED_CERT | self-signed certificate.')],
      "TLS verification failed: the console's certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); turn verify_tls off for a self-signed console certificate",
    ],
    [
      'an untrusted certificate (inspected error)',
      [inspected('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT')],
      "TLS verification failed: the console's certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); turn verify_tls off for a self-signed console certificate",
    ],
    [
      'a certificate for another name',
      [error('127.0.0.1:7443: API error: Error: ERR_TLS_CERT_ALTNAME_INVALID | Hostname/IP does not match.')],
      "TLS verification failed: the console's certificate is not trusted (ERR_TLS_CERT_ALTNAME_INVALID); turn verify_tls off for a self-signed console certificate",
    ],
    [
      'a refused connection (plain Node)',
      [error('127.0.0.1:7443: API error: Connection refused.')],
      'Host unreachable: the console refused the connection',
    ],
    [
      'a refused connection (inspected error)',
      [inspected('connect ECONNREFUSED 127.0.0.1:7443', 'ECONNREFUSED')],
      'Host unreachable: the console refused the connection',
    ],
    [
      'an unknown host name',
      [
        error(
          'nvr.example: API error: Hostname or IP address not found: nvr.example. Please ensure the address you configured for this UniFi Protect controller is correct.',
        ),
      ],
      'Host unreachable: the host name was not found (DNS)',
    ],
    [
      'no route',
      [error('10.0.0.5:443: API error: Error: EHOSTUNREACH | connect EHOSTUNREACH 10.0.0.5:443.')],
      'Host unreachable: no route to the console',
    ],
    [
      'a black hole',
      [error('10.0.0.5:443: API error: Connection timed out.')],
      'Connection timed out: the console did not answer the login',
    ],
    [
      'a console that refuses for now (429)',
      [
        error(
          '10.0.0.5:443: API error: Unable to connect to the Protect controller. This is temporary and may occur during device reboots.',
        ),
      ],
      'Login failed: the console refused the login for now (too many attempts, or it is restarting); try again later',
    ],
  ])('names %s', (_what, lines, message) => {
    expect(loginFailure(lines)).toBe(message);
  });

  it('keeps only the first line of an unknown error (never a stack trace)', () => {
    const message = loginFailure([
      { level: 'info', message: 'something' },
      inspected('something unexpected', 'EWEIRD'),
    ]);
    expect(message).toBe(
      'Login failed: 127.0.0.1:7443: API error: Unknown error: Error: something unexpected',
    );
    expect(loginFailure([])).toBe('Login failed');
  });
});
