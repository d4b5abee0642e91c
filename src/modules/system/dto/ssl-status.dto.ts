import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

const nullableString = (description: string, example: string | null, format?: string) =>
  ApiProperty({ type: String, nullable: true, format, description, example });

export class SslStatusResponseDto {
  @ApiProperty({
    description: 'Whether this service serves https (SSL_CERT_FILE and SSL_KEY_FILE are both set).',
    example: true,
  })
  enabled: boolean;

  @nullableString('SSL_CERT_FILE; null when https is off.', '/etc/vigil/tls/cert.pem')
  cert_file: string | null;

  @nullableString('SSL_KEY_FILE; null when https is off.', '/etc/vigil/tls/key.pem')
  key_file: string | null;

  @nullableString('Subject of the certificate, e.g. `CN=vigil.home, O=Home`.', 'CN=vigil.home')
  subject: string | null;

  @nullableString('Issuer of the certificate (equal to the subject when self-signed).', 'CN=vigil.home')
  issuer: string | null;

  @nullableString(
    'Subject alternative names (the host names and addresses the certificate is valid for).',
    'DNS:vigil.home, IP Address:192.168.1.10',
  )
  subject_alt_name: string | null;

  @nullableString('Start of the validity window.', '2026-11-01T00:00:00.000Z', 'date-time')
  valid_from: string | null;

  @nullableString('End of the validity window.', '2027-11-01T00:00:00.000Z', 'date-time')
  valid_to: string | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Whole days until `valid_to` (negative once expired).',
    example: 343,
  })
  days_remaining: number | null;

  @ApiProperty({
    type: Boolean,
    nullable: true,
    description: 'True when the current time is outside the validity window.',
    example: false,
  })
  expired: boolean | null;

  @nullableString('Public key algorithm and size or curve, e.g. `RSA 2048`, `EC prime256v1`.', 'RSA 2048')
  key_type: string | null;

  @ApiProperty({
    type: Boolean,
    nullable: true,
    description: 'Whether the certificate is signed by its own key (browsers warn unless it is trusted).',
    example: true,
  })
  self_signed: boolean | null;

  @nullableString('SHA-256 fingerprint of the certificate.', '3A:9F:...:C2')
  fingerprint_sha256: string | null;

  @ApiPropertyOptional({
    description:
      'Why the certificate or key cannot be read or do not belong together (https is on, the fields ' +
      'above that could not be read are null).',
    example: 'The private key does not match the certificate',
  })
  error?: string;
}
