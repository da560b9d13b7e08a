import { rateLimit } from 'express-rate-limit';
import { ApiProblem } from './problem';

/**
 * A per-API-key budget over a one-minute window. Counters live in this process's memory: with
 * several API processes each one enforces the budget on its own.
 */
export function perKeyRateLimit(requestsPerMinute: number) {
  return rateLimit({
    windowMs: 60_000,
    limit: requestsPerMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    keyGenerator: (_req, res) => String(res.locals.auth?.apiKeyId),
    handler: (_req, _res, next) => {
      next(
        new ApiProblem(
          429,
          'rate_limited',
          `This API key made more than ${requestsPerMinute} requests in a minute. Wait for the number of seconds in Retry-After, then try again.`,
        ),
      );
    },
  });
}
