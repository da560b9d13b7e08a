import { z } from 'zod';
import { fhirResourceSchema } from '../fhir/resource-json';

/**
 * The webhook envelope (CONVENTIONS.md, Webhooks): the POST body of every delivery. This schema is
 * the one definition: the type below, the catalog's examples and the OpenAPI document derive from it.
 */
export const webhookEnvelopeSchema = z
  .object({
    id: z.string().meta({ example: 'evt_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    event: z.string().meta({ example: 'adt.patient.admitted' }),
    connection_id: z.string().nullable(),
    environment: z.string().meta({ example: 'sandbox' }),
    occurred_at: z.iso.datetime(),
    resource: fhirResourceSchema,
  })
  .meta({ id: 'WebhookEnvelope', description: 'The POST body of a webhook delivery' });

export type WebhookEnvelope = z.input<typeof webhookEnvelopeSchema>;
