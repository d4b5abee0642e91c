import type { Principal } from '../auth/principal';
import type { RateLimitState } from '../rate-limit/rate-limit-headers';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the request-id middleware for every request; echoed as X-Request-Id. */
    requestId: string;
    /** Set by the AuthGuard once the caller is authenticated. */
    principal?: Principal;
    /** Set by the AuthGuard for API-key requests; turned into X-RateLimit-* headers. */
    rateLimit?: RateLimitState;
  }
}

export {};
