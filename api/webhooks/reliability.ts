import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { reliabilityProfiles } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { DEFAULT_RELIABILITY_PROFILE, type ReliabilityProfile, reliabilityProfileSchema } from '../../webhooks/chaos';
import { defineRoute } from '../http/route';

const storedReliabilityProfileSchema = reliabilityProfileSchema
  .extend({ updated_at: z.iso.datetime().nullable() })
  .meta({ id: 'WebhookReliabilityProfile' });

/** Each mode may be sent in part: the fields given replace the stored ones, the rest stay. */
const updateProfileSchema = z
  .object({
    transient_503: reliabilityProfileSchema.shape.transient_503.partial().optional(),
    slow: reliabilityProfileSchema.shape.slow.partial().optional(),
    rate_limit: reliabilityProfileSchema.shape.rate_limit.partial().optional(),
  })
  .strict()
  .meta({ id: 'UpdateWebhookReliabilityProfile' });

/** The organization's chaos profile, applied by the delivery activity to every attempt. */
export function webhookReliabilityRoutes({ db }: { db: Database }) {
  async function load(organizationId: string): Promise<{ profile: ReliabilityProfile; updatedAt: Date | null }> {
    const [row] = await db.select().from(reliabilityProfiles).where(eq(reliabilityProfiles.organizationId, organizationId));
    return row
      ? { profile: reliabilityProfileSchema.parse(row.profile), updatedAt: row.updatedAt }
      : { profile: DEFAULT_RELIABILITY_PROFILE, updatedAt: null };
  }

  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/webhook-reliability',
      operationId: 'getWebhookReliability',
      summary: 'Read the chaos profile: transient 503, slow and rate-limit modes',
      tag: 'Webhooks',
      auth: 'api_key',
      success: { status: 200, description: 'The chaos profile (all modes off by default)', schema: storedReliabilityProfileSchema },
      handler: async ({ auth }) => {
        const { profile, updatedAt } = await load(auth.organizationId);
        return { ...profile, updated_at: updatedAt?.toISOString() ?? null };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/sandbox/webhook-reliability',
      operationId: 'updateWebhookReliability',
      summary: 'Set chaos modes',
      description:
        'Per mode: `first_n_attempts` affects attempts 1..N of every delivery; `rate` (0..1) affects any other attempt at random. ' +
        'rate_limit answers 429 with `retry_after_seconds`; transient_503 answers 503; neither calls the receiver. slow holds the signed request for `delay_ms` before sending it. ' +
        'Chaos is recorded on each attempt it touches and never changes the envelope.',
      tag: 'Webhooks',
      auth: 'api_key',
      body: updateProfileSchema,
      success: { status: 200, description: 'The updated profile', schema: storedReliabilityProfileSchema },
      errors: [415, 422],
      handler: async ({ auth, body }) => {
        const { profile: current } = await load(auth.organizationId);
        const profile: ReliabilityProfile = {
          transient_503: { ...current.transient_503, ...body.transient_503 },
          slow: { ...current.slow, ...body.slow },
          rate_limit: { ...current.rate_limit, ...body.rate_limit },
        };
        const updatedAt = new Date();
        await db
          .insert(reliabilityProfiles)
          .values({ organizationId: auth.organizationId, profile, updatedAt })
          .onConflictDoUpdate({ target: reliabilityProfiles.organizationId, set: { profile, updatedAt } });
        return { ...profile, updated_at: updatedAt.toISOString() };
      },
    }),
  ];
}
