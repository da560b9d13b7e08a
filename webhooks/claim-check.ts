import type { NewDelivery } from './new-delivery';

/**
 * Claim checks. Every workflow input and activity argument is kept in the run's history (twice for a
 * delivery: its input, then its first attempt's) for the namespace's retention, beyond the sandbox's
 * own retention limits, and Temporal refuses a payload over 2 MB (a 256 KiB HL7 v2 message maps to an
 * envelope of several MiB). So every delivery the API starts, which carries what a partner sent (an
 * HL7 message's Bundle), is stored in Postgres before its workflow starts (checkIn in
 * webhooks/delivery-records.ts), and the workflow and its activities carry only the delivery's id
 * (docs/api/privacy.md): whoever records the delivery first (the API right after the start, or the
 * first attempt) moves the envelope into the delivery row, where every attempt and replay reads it.
 * That costs a delivery one more database statement, the stage (figures: docs/benchmarks.md, Webhook
 * deliveries).
 *
 * Deliveries a workflow starts (scenario steps, reports) carry the sandbox's own synthetic content and
 * travel inline unless their envelope is over STAGE_ENVELOPES_OVER_BYTES.
 */
export const STAGE_ENVELOPES_OVER_BYTES = 64 * 1024;

/** A new delivery whose envelope waits in staged_envelopes under the delivery's id. */
export type StagedDelivery = Omit<NewDelivery, 'envelopeBody'> & { envelopeStaged: true };

/** A new delivery as a delivery workflow carries it: with its envelope, or with the claim check for it. */
export type CarriedDelivery = NewDelivery | StagedDelivery;

export const isStaged = (delivery: CarriedDelivery): delivery is StagedDelivery => 'envelopeStaged' in delivery;

/** Whether this envelope travels as a claim check. */
export const needsClaimCheck = (envelopeBody: string) => Buffer.byteLength(envelopeBody, 'utf8') > STAGE_ENVELOPES_OVER_BYTES;
