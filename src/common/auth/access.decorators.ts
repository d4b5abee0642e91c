import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiExtension, ApiResponse, ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Scope } from '../../modules/api-keys/entities/api-key.entity';
import { ErrorResponseDto } from '../errors/error-response.dto';
import type { Principal } from './principal';

/** How a route may be reached. Every route must declare one; the AuthGuard refuses routes without. */
export type AccessPolicy = { kind: 'public' } | { kind: 'scope'; scope: Scope } | { kind: 'session' };

export const ACCESS_POLICY = 'vigil:access-policy';

export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { description: "The API key's requests per minute.", schema: { type: 'integer' } },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer' },
  },
  'X-RateLimit-Reset': {
    description: 'Unix epoch seconds at which the current window ends.',
    schema: { type: 'integer' },
  },
} as const;

// Factories, not shared instances: a swagger decorator instance applied to several classes accumulates.
const authErrors = () => [
  ApiResponse({
    status: 401,
    description:
      'No credentials ("Not authenticated"), or a wrong, revoked, expired or malformed key or token.',
    type: ErrorResponseDto,
    example: { detail: 'Invalid or expired API key', status_code: 401 },
  }),
  ApiResponse({
    status: 429,
    description: "The API key's per-minute limit is exceeded.",
    type: ErrorResponseDto,
    headers: {
      ...RATE_LIMIT_HEADERS,
      'Retry-After': { description: 'Whole seconds until the window ends.', schema: { type: 'integer' } },
    },
    example: { detail: 'Rate limit exceeded: 100/minute. Retry after 42 seconds.', status_code: 429 },
  }),
];

const credentials = () => [ApiSecurity('api_key'), ApiSecurity('bearer'), ApiSecurity('cookie')];

/** No credentials needed. */
export const Public = () =>
  applyDecorators(
    SetMetadata(ACCESS_POLICY, { kind: 'public' } satisfies AccessPolicy),
    ApiExtension('x-required-scope', 'none'),
  );

/**
 * Requires `scope` (API key scopes, or the user's role). `admin` satisfies every scope. Documents the
 * scope, the accepted credentials and the 401/403/429 answers in the OpenAPI document.
 */
export const RequireScope = (scope: Scope) =>
  applyDecorators(
    SetMetadata(ACCESS_POLICY, { kind: 'scope', scope } satisfies AccessPolicy),
    ApiExtension('x-required-scope', scope),
    ...credentials(),
    ...authErrors(),
    ApiResponse({
      status: 403,
      description: `The credentials lack the \`${scope}\` scope.`,
      type: ErrorResponseDto,
      example: { detail: `Insufficient permissions. Required scope: ${scope}`, status_code: 403 },
    }),
  );

/** Requires a logged-in user (cookie or bearer JWT); API keys are refused with 403. */
export const RequireSession = () =>
  applyDecorators(
    SetMetadata(ACCESS_POLICY, { kind: 'session' } satisfies AccessPolicy),
    ApiExtension('x-required-scope', 'session'),
    ApiSecurity('bearer'),
    ApiSecurity('cookie'),
    ...authErrors(),
    ApiResponse({
      status: 403,
      description: 'Called with an API key: this endpoint needs a user session.',
      type: ErrorResponseDto,
      example: { detail: 'This endpoint requires a user session (cookie or bearer token)', status_code: 403 },
    }),
  );

/** The authenticated caller, as set by the AuthGuard. */
export const CurrentPrincipal = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Principal | undefined =>
    context.switchToHttp().getRequest<Request>().principal,
);
