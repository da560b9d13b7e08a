import { z } from 'zod';
import type { ChaosMode, ExportChaosMode } from './vocabulary';

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

const exportRate = z.number().min(0).max(1).meta({ description: 'Probability (0..1) that a new export is affected (1: every export, 0: off)' });

// Chaos for FHIR Bulk Data exports, picked once per export by its first step; one entry per mode of the vocabulary.
const exportModeSchemas = {
  fail: z
    .object({ rate: exportRate })
    .strict()
    .meta({ description: 'The export fails before writing any file: its status URL answers 500 with an OperationOutcome' }),
  slow: z
    .object({
      rate: exportRate,
      delay_ms: z.number().int().min(0).max(600_000).meta({ description: 'Waited (a durable timer) before each resource type is written' }),
    })
    .strict()
    .meta({ description: 'The export waits delay_ms before each type, so clients see 202 with X-Progress for a while' }),
  partial: z
    .object({
      rate: exportRate,
      every_nth: z.number().int().min(2).max(1_000).meta({ description: 'Every nth resource of each type is left out of the output' }),
    })
    .strict()
    .meta({
      description:
        'The export completes with part of its output: each resource left out is reported in the manifest’s `error` files as an OperationOutcome',
    }),
} satisfies Record<ExportChaosMode, z.ZodType>;

export const exportChaosProfileSchema = z.object(exportModeSchemas).strict().meta({ id: 'ExportChaosProfile' });
export type ExportChaosProfile = z.infer<typeof exportChaosProfileSchema>;

export const DEFAULT_EXPORT_CHAOS_PROFILE: ExportChaosProfile = {
  fail: { rate: 0 },
  slow: { rate: 0, delay_ms: 5_000 },
  partial: { rate: 0, every_nth: 10 },
};

export const reliabilityProfileSchema = z
  .object({
    ...modeSchemas,
    // A profile stored before exports had chaos has no entry: all off.
    bulk_export: exportChaosProfileSchema.default(DEFAULT_EXPORT_CHAOS_PROFILE).meta({ description: 'Chaos for FHIR Bulk Data exports (`$export`)' }),
  })
  .strict()
  .meta({ id: 'ChaosProfile' });

export type ReliabilityProfile = z.infer<typeof reliabilityProfileSchema>;

export const DEFAULT_RELIABILITY_PROFILE: ReliabilityProfile = {
  transient_503: { first_n_attempts: 0, rate: 0 },
  slow: { first_n_attempts: 0, rate: 0, delay_ms: 3_000 },
  rate_limit: { first_n_attempts: 0, rate: 0, retry_after_seconds: 5 },
  bulk_export: DEFAULT_EXPORT_CHAOS_PROFILE,
};

/** When several modes would apply to one attempt, the first of these wins. */
const PRECEDENCE: ChaosMode[] = ['rate_limit', 'transient_503', 'slow'];

export type ChaosEffect = { mode: 'transient_503' } | { mode: 'slow'; delayMs: number } | { mode: 'rate_limit'; retryAfterMs: number };

/** The chaos that touches this attempt, if any. */
export function pickChaos(
  profile: Pick<ReliabilityProfile, ChaosMode>,
  attemptNumber: number,
  random: () => number = Math.random,
): ChaosEffect | null {
  const mode = PRECEDENCE.find((candidate) => attemptNumber <= profile[candidate].first_n_attempts || random() < profile[candidate].rate);
  if (mode === 'slow') return { mode, delayMs: profile.slow.delay_ms };
  if (mode === 'rate_limit') return { mode, retryAfterMs: profile.rate_limit.retry_after_seconds * 1000 };
  return mode ? { mode } : null;
}

/** The chaos an export gets, decided once by its first step: a failure, a delay per type, and every nth resource left out. */
export interface ExportChaos {
  fail: boolean;
  slowMs: number | null;
  partialEveryNth: number | null;
}

export function pickExportChaos(profile: ExportChaosProfile, random: () => number = Math.random): ExportChaos {
  const affected = (rate: number) => rate > 0 && random() < rate;
  return {
    fail: affected(profile.fail.rate),
    slowMs: affected(profile.slow.rate) ? profile.slow.delay_ms : null,
    partialEveryNth: affected(profile.partial.rate) ? profile.partial.every_nth : null,
  };
}
