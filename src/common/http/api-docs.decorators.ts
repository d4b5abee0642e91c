import { applyDecorators, Type } from '@nestjs/common';
import { ApiOperation, ApiResponse } from '@nestjs/swagger';
import { RATE_LIMIT_HEADERS } from '../auth/access.decorators';
import { ErrorResponseDto } from '../errors/error-response.dto';

const ERROR_EXAMPLES: Record<number, { description: string; detail: string }> = {
  400: {
    description: 'Malformed JSON, or a request a business rule does not allow.',
    detail: 'Malformed JSON in request body',
  },
  404: { description: 'Unknown or malformed id.', detail: 'Not Found' },
  409: { description: 'Conflicts with existing state.', detail: 'A record with these values already exists' },
  413: { description: 'Request body larger than 1 MiB.', detail: 'Request body too large (limit 1 MiB)' },
  415: { description: 'Body is not JSON.', detail: 'Content-Type must be application/json' },
  422: {
    description: 'Request validation failed.',
    detail: 'Request validation failed: body.name: name should not be empty',
  },
};

/** Documents an operation: summary, description and its error answers (beyond 401/403/429 of the access decorators). */
export function ApiOp(options: { summary: string; description?: string; errors?: number[] }) {
  return applyDecorators(
    ApiOperation({ summary: options.summary, description: options.description }),
    ...(options.errors ?? []).map((status) =>
      ApiResponse({
        status,
        description: ERROR_EXAMPLES[status].description,
        type: ErrorResponseDto,
        example:
          status === 422
            ? {
                detail: ERROR_EXAMPLES[status].detail,
                status_code: 422,
                errors: [{ field: 'body.name', message: 'name should not be empty' }],
              }
            : { detail: ERROR_EXAMPLES[status].detail, status_code: status },
      }),
    ),
  );
}

/** Documents the success answer, with the X-RateLimit-* headers that every API-key response carries. */
export function ApiSuccess(options: {
  status?: number;
  type?: Type<unknown>;
  isArray?: boolean;
  description: string;
}) {
  return ApiResponse({
    status: options.status ?? 200,
    description: options.description,
    type: options.type,
    isArray: options.isArray,
    headers: { ...RATE_LIMIT_HEADERS },
  });
}

/** Documents a 200 answer that is a JPEG image, with its Cache-Control header. */
export function ApiJpegResponse(cacheControl: string) {
  return ApiResponse({
    status: 200,
    description: 'The JPEG image.',
    content: { 'image/jpeg': { schema: { type: 'string', format: 'binary' } } },
    headers: {
      ...RATE_LIMIT_HEADERS,
      'Cache-Control': { description: cacheControl, schema: { type: 'string' } },
    },
  });
}
