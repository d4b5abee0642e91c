import { Inject, Injectable } from '@nestjs/common';
import { createPrivateKey, KeyObject, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { SslStatusResponseDto } from './dto/ssl-status.dto';

const DAY_MS = 86_400_000;

/** `RSA 2048`, `EC prime256v1`, `Ed25519`... */
export function describeKey(key: KeyObject): string {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return `RSA ${details.modulusLength ?? '?'}`;
    case 'rsa-pss':
      return `RSA-PSS ${details.modulusLength ?? '?'}`;
    case 'dsa':
      return `DSA ${details.modulusLength ?? '?'}`;
    case 'ec':
      return `EC ${details.namedCurve ?? '?'}`;
    case 'ed25519':
      return 'Ed25519';
    case 'ed448':
      return 'Ed448';
    default:
      return String(key.asymmetricKeyType ?? 'unknown').toUpperCase();
  }
}

/** X509Certificate's multi-line distinguished name as one line: `CN=vigil.home, O=Home`. */
const oneLine = (dn: string) =>
  dn
    .split('\n')
    .map((part) => part.trim())
    .filter(Boolean)
    .join(', ');

/**
 * GET /system/ssl-status: whether the service serves https, and what the certificate in SSL_CERT_FILE
 * says. The files are read on each request (a renewed certificate shows here before the restart that
 * serves it).
 */
@Injectable()
export class SslStatusService {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async status(): Promise<SslStatusResponseDto> {
    const status: SslStatusResponseDto = {
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
    };
    const ssl = this.config.ssl;
    if (!ssl) return status;
    status.enabled = true;
    status.cert_file = ssl.certFile;
    status.key_file = ssl.keyFile;

    let cert: X509Certificate;
    try {
      cert = new X509Certificate(await readFile(ssl.certFile));
    } catch (error) {
      status.error = `Cannot read the certificate in SSL_CERT_FILE: ${firstLine(error)}`;
      return status;
    }
    const validFrom = new Date(cert.validFrom);
    const validTo = new Date(cert.validTo);
    const now = Date.now();
    Object.assign(status, {
      subject: oneLine(cert.subject),
      issuer: oneLine(cert.issuer),
      subject_alt_name: cert.subjectAltName ?? null,
      valid_from: validFrom.toISOString(),
      valid_to: validTo.toISOString(),
      days_remaining: Math.floor((validTo.getTime() - now) / DAY_MS),
      expired: now < validFrom.getTime() || now > validTo.getTime(),
      key_type: describeKey(cert.publicKey),
      self_signed: cert.checkIssued(cert) && safeVerify(cert),
      fingerprint_sha256: cert.fingerprint256,
    } satisfies Partial<SslStatusResponseDto>);

    try {
      const key = createPrivateKey(await readFile(ssl.keyFile));
      if (!cert.checkPrivateKey(key))
        status.error = 'The private key in SSL_KEY_FILE does not match the certificate';
    } catch (error) {
      status.error = `Cannot read the private key in SSL_KEY_FILE: ${firstLine(error)}`;
    }
    return status;
  }
}

function safeVerify(cert: X509Certificate): boolean {
  try {
    return cert.verify(cert.publicKey);
  } catch {
    return false;
  }
}

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0];
