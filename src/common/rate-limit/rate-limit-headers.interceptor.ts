import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Observable } from 'rxjs';
import { applyRateLimitHeaders } from './rate-limit-headers';

/**
 * Sets the X-RateLimit-* headers on every API-key response that reaches a handler. Responses refused
 * before the handler (403, 429) get the same headers from the HttpErrorFilter.
 */
@Injectable()
export class RateLimitHeadersInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http') {
      const http = context.switchToHttp();
      applyRateLimitHeaders(http.getResponse<Response>(), http.getRequest<Request>().rateLimit);
    }
    return next.handle();
  }
}
