import { z } from 'zod';
import type { ChaosMode } from './vocabulary';

/**
 * The organization's reliability profile (CONVENTIONS.md, Webhooks: the chaos profile): which chaos
 * the delivery activity injects, per mode (transient 503, slow, rate limit), each with a deterministic
 * option (the first N attempts of every delivery) and a probabilistic one (a rate).
 *
 * Names: "reliability" is the per-organization setting, as the route (`/v1/sandbox/webhook-reliability`)
 * and the table (`reliability_profiles`) call it; "chaos" is what it injects into an attempt (the
 * modes, `pickChaos`, the attempt's public `chaos` field). The OpenAPI component keeps its published
 * id `ChaosProfile`, which partners' generated clients name their types after.
 */
const firstN = z.number().int().min(0).max(100).meta({ description: 'Affect attempts 1..N of every delivery (0: off)' });
const rate = z.number().min(0).max(1).meta({ description: 'Probability (0..1) of affecting any other attempt (0: off)' });

// One entry per chaos mode of the vocabulary: `satisfies` refuses a missing or an extra one.
const modeSchemas = {
  transient_503: z
    .object({ first_n_attempts: firstN, rate })
    .strict()
    .meta({ description: 'The attempt fails as if the receiver answered 503; the receiver is not called' }),
  slow: z
    .object({
      first_n_attempts: firstN,
      rate,
      delay_ms: z
        .number()
        .int()
        .min(0)
        .max(60_000)
        .meta({ description: 'Added before the request is sent; past the 15 s timeout the attempt times out' }),
    })
    .strict()
    .meta({ description: 'The request is signed, then held for delay_ms before it is sent' }),
  rate_limit: z
    .object({ first_n_attempts: firstN, rate, retry_after_seconds: z.number().int().min(0).max(3_600) })
    .strict()
    .meta({ description: 'The attempt fails as if the receiver answered 429 with this Retry-After; the receiver is not called' }),
} satisfies Record<ChaosMode, z.ZodType>;

export const reliabilityProfileSchema = z.object(modeSchemas).strict().meta({ id: 'ChaosProfile' });

export type ReliabilityProfile = z.infer<typeof reliabilityProfileSchema>;

export const DEFAULT_RELIABILITY_PROFILE: ReliabilityProfile = {
  transient_503: { first_n_attempts: 0, rate: 0 },
  slow: { first_n_attempts: 0, rate: 0, delay_ms: 3_000 },
  rate_limit: { first_n_attempts: 0, rate: 0, retry_after_seconds: 5 },
};

/** When several modes would apply to one attempt, the first of these wins. */
const PRECEDENCE: ChaosMode[] = ['rate_limit', 'transient_503', 'slow'];

export type ChaosEffect = { mode: 'transient_503' } | { mode: 'slow'; delayMs: number } | { mode: 'rate_limit'; retryAfterMs: number };

/** The chaos that touches this attempt, if any. */
export function pickChaos(profile: ReliabilityProfile, attemptNumber: number, random: () => number = Math.random): ChaosEffect | null {
  const mode = PRECEDENCE.find((candidate) => attemptNumber <= profile[candidate].first_n_attempts || random() < profile[candidate].rate);
  if (mode === 'slow') return { mode, delayMs: profile.slow.delay_ms };
  if (mode === 'rate_limit') return { mode, retryAfterMs: profile.rate_limit.retry_after_seconds * 1000 };
  return mode ? { mode } : null;
}
