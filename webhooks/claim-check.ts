import type { NewDelivery } from './new-delivery';

/**
 * Claim checks for large envelopes. Temporal refuses a payload over 2 MB, and a 256 KiB HL7 v2
 * message maps to an envelope of several MiB; every workflow input and activity argument is also kept
 * in the run's history, twice for a delivery (its input, then its first attempt's). So an envelope
 * over STAGE_ENVELOPES_OVER_BYTES is stored in Postgres before the workflow starts (checkIn in
 * webhooks/delivery-records.ts), and the workflow and its activities carry only the delivery's id:
 * the activity that records the delivery moves the envelope into the delivery row, where every
 * attempt and replay reads it, as for any delivery.
 *
 * Smaller envelopes travel inline. A claim check costs a delivery two more database statements
 * (stage; then move and check), which would slow the recording of every delivery (figures:
 * docs/benchmarks.md, Webhook deliveries), for a history that stays far below Temporal's limits at
 * 64 KiB (its blob-size warning is at 512 KiB).
 */
export const STAGE_ENVELOPES_OVER_BYTES = 64 * 1024;

/** A new delivery whose envelope waits in staged_envelopes under the delivery's id. */
export type StagedDelivery = Omit<NewDelivery, 'envelopeBody'> & { envelopeStaged: true };

/** A new delivery as a delivery workflow carries it: with its envelope, or with the claim check for it. */
export type CarriedDelivery = NewDelivery | StagedDelivery;

export const isStaged = (delivery: CarriedDelivery): delivery is StagedDelivery => 'envelopeStaged' in delivery;

/** Whether this envelope travels as a claim check. */
export const needsClaimCheck = (envelopeBody: string) => Buffer.byteLength(envelopeBody, 'utf8') > STAGE_ENVELOPES_OVER_BYTES;
