import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { SERVICE_VERSION } from '../common/version';
import { ErrorResponseDto } from '../common/errors/error-response.dto';

const DESCRIPTION = `Vigil manages cameras, detects events, describes them with AI vision providers and serves them
over REST and a WebSocket.

**Authentication.** Send an API key in \`X-API-Key\`, or a user's JWT as \`Authorization: Bearer <token>\` or in the
\`vigil_access_token\` cookie (from \`POST /api/v1/auth/login\`). When \`X-API-Key\` is present it alone decides.
Each operation lists its required scope in \`x-required-scope\` (\`admin\` satisfies every scope).

**Rate limits.** API-key requests only: fixed one-minute windows per key. Every API-key response carries
\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (Unix epoch seconds); over the limit, 429
with \`Retry-After\`.

**Errors.** Every error is \`{"detail": "...", "status_code": N}\`; 422 validation errors add
\`errors: [{field, message}]\`. Unknown routes and unknown or malformed ids are 404.`;

/** Builds the OpenAPI document served at /openapi.json and committed as openapi.json. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Vigil API')
    .setDescription(DESCRIPTION)
    .setVersion(SERVICE_VERSION)
    .addServer('/', 'This server')
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An API key (vgl_...).' },
      'api_key',
    )
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A token from /auth/login.' },
      'bearer',
    )
    .addCookieAuth(
      'vigil_access_token',
      { type: 'apiKey', in: 'cookie', name: 'vigil_access_token' },
      'cookie',
    )
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    extraModels: [ErrorResponseDto],
    operationIdFactory: (_controllerKey: string, methodKey: string) => methodKey,
  });
  // Public operations say so explicitly: no credentials (`security: []`).
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods) as {
      'x-required-scope'?: string;
      security?: unknown[];
    }[]) {
      if (operation && operation['x-required-scope'] === 'none') operation.security = [];
    }
  }
  return document;
}
