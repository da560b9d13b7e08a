import { z } from 'zod';
import type { Database } from '../../platform/database';
import { exportChaosProfileSchema, type ReliabilityProfile, reliabilityProfileSchema } from '../../webhooks/chaos';
import { loadReliabilityProfile, saveReliabilityProfile } from '../../webhooks/reliability-profiles';
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
    bulk_export: z
      .object({
        fail: exportChaosProfileSchema.shape.fail.partial().optional(),
        slow: exportChaosProfileSchema.shape.slow.partial().optional(),
        partial: exportChaosProfileSchema.shape.partial.partial().optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .meta({ id: 'UpdateWebhookReliabilityProfile' });

/** The organization's chaos profile, applied by the delivery activity to every attempt. */
export function webhookReliabilityRoutes({ db }: { db: Database }) {
  const load = (organizationId: string) => loadReliabilityProfile(db, organizationId);

  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/webhook-reliability',
      operationId: 'getWebhookReliability',
      summary: 'Read the chaos profile: transient 503, slow and rate-limit modes for webhooks; failing, slow and partial bulk exports',
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
        'Chaos is recorded on each attempt it touches and never changes the envelope. ' +
        '`bulk_export` applies to FHIR Bulk Data exports, picked once per export with each mode’s `rate`: `fail` ends the export with an OperationOutcome, `slow` waits `delay_ms` before each resource type, `partial` leaves every `every_nth` resource out and reports each in the manifest’s `error` files.',
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
          bulk_export: {
            fail: { ...current.bulk_export.fail, ...body.bulk_export?.fail },
            slow: { ...current.bulk_export.slow, ...body.bulk_export?.slow },
            partial: { ...current.bulk_export.partial, ...body.bulk_export?.partial },
          },
        };
        const updatedAt = await saveReliabilityProfile(db, auth.organizationId, profile);
        return { ...profile, updated_at: updatedAt.toISOString() };
      },
    }),
  ];
}
