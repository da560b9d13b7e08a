import type { Request, RequestHandler } from 'express';
import { ApiProblem } from './problem';

/**
 * Budgets for callers that have no API key to count against (issue 23, fair sharing): the OAuth
 * endpoints, the FHIR endpoint and failed authentication, per client address. Each request spends
 * what it costs (a token exchange signs a JWT and writes rows; a search scans more than a read), from
 * a bucket that refills its whole budget each minute. Kept in this process, not the database: a
 * database write per unauthenticated request would itself be the cheapest way to load the service,
 * and N API processes allow N budgets, the bound still holding per process.
 */
export interface CostBudget {
  /** Spends `cost` for `key`; answers the seconds until it could be spent when the bucket is short. */
  spend(key: string, cost: number): { allowed: true } | { allowed: false; retryAfterSeconds: number };
  /** Whether `key` has nothing left (without spending). */
  exhausted(key: string): { exhausted: false } | { exhausted: true; retryAfterSeconds: number };
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets kept at most: past this the longest-idle are dropped (a full bucket and a dropped one are the same). */
const MAX_BUCKETS = 50_000;

export function createCostBudget(perMinute: number, now: () => number = Date.now): CostBudget {
  const buckets = new Map<string, Bucket>();
  const refillPerMs = perMinute / 60_000;

  function current(key: string): Bucket {
    const time = now();
    const known = buckets.get(key);
    const bucket = known
      ? { tokens: Math.min(perMinute, known.tokens + (time - known.at) * refillPerMs), at: time }
      : { tokens: perMinute, at: time };
    // Re-inserted, so the map's order is least recently used first.
    buckets.delete(key);
    buckets.set(key, bucket);
    if (buckets.size > MAX_BUCKETS) buckets.delete(buckets.keys().next().value!);
    return bucket;
  }
  const waitFor = (bucket: Bucket, cost: number) => Math.max(1, Math.ceil((cost - bucket.tokens) / refillPerMs / 1000));

  return {
    spend(key, cost) {
      const bucket = current(key);
      if (bucket.tokens < cost) return { allowed: false, retryAfterSeconds: waitFor(bucket, cost) };
      bucket.tokens -= cost;
      return { allowed: true };
    },
    exhausted(key) {
      const bucket = current(key);
      return bucket.tokens < 1 ? { exhausted: true, retryAfterSeconds: waitFor(bucket, 1) } : { exhausted: false };
    },
  };
}

/** The caller's address (Express's req.ip: the socket's, or the proxy chain's when `trust proxy` is set). */
export const clientAddress = (req: Request): string => req.ip ?? req.socket.remoteAddress ?? 'unknown';

export function rateLimited(detail: string, retryAfterSeconds: number): ApiProblem {
  return new ApiProblem(429, 'rate_limited', detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
}

/** Spends each request's cost from its address's budget; over it, 429 with Retry-After (shaped per surface by the problem handler). */
export function costLimit(options: { budget: CostBudget; surface: string; perMinute: number; costOf(req: Request): number }): RequestHandler {
  return (req, _res, next) => {
    const spent = options.budget.spend(clientAddress(req), options.costOf(req));
    if (!spent.allowed) {
      throw rateLimited(
        `This address used its budget of ${options.surface} requests (${options.perMinute} units a minute; costlier requests count more). Wait ${spent.retryAfterSeconds} s (Retry-After), then try again.`,
        spent.retryAfterSeconds,
      );
    }
    next();
  };
}

/**
 * Failed authentication, per address: every 401 the service answers spends one unit (the problem
 * handler charges it), and an address with none left is refused before its credential is looked up,
 * on every surface (API keys, OAuth clients, FHIR tokens), until its budget refills.
 */
export function refuseAfterFailedAuthentication(failures: CostBudget, perMinute: number): RequestHandler {
  return (req, res, next) => {
    const address = clientAddress(req);
    res.on('finish', () => {
      if (res.statusCode === 401) failures.spend(address, 1);
    });
    const state = failures.exhausted(address);
    if (state.exhausted) {
      throw rateLimited(
        `Too many failed authentications from this address (${perMinute} a minute). Wait ${state.retryAfterSeconds} s (Retry-After), then try again with a valid credential.`,
        state.retryAfterSeconds,
      );
    }
    next();
  };
}
