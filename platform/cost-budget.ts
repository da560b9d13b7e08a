/**
 * A cost budget per key (issue 23, fair sharing): each call spends what it costs from a bucket that
 * refills its whole budget each minute. Kept in the process, not the database: a database write per
 * unauthenticated request would itself be the cheapest way to load the service, and N processes allow
 * N budgets, the bound still holding per process. The API budgets OAuth, FHIR and failed
 * authentication per client address (api/http/cost-limit.ts), HL7 v2 per organization.
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

const NOT_EXHAUSTED = { exhausted: false } as const;

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
      // Read only: asked on every request, mostly of addresses with no bucket (a bucket is made by spending).
      const known = buckets.get(key);
      if (!known) return NOT_EXHAUSTED;
      const bucket = { tokens: Math.min(perMinute, known.tokens + (now() - known.at) * refillPerMs), at: known.at };
      return bucket.tokens < 1 ? { exhausted: true, retryAfterSeconds: waitFor(bucket, 1) } : NOT_EXHAUSTED;
    },
  };
}
