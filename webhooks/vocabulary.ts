/**
 * The webhook domain's vocabulary, each list written once: the schema's columns, the API's zod
 * schemas, the activities and the workflows derive their types from these tuples. It imports nothing,
 * so every layer may use it, the drizzle schema included (CONVENTIONS.md, Layers).
 */

/** Delivery states (CONVENTIONS.md, Webhooks): pending → succeeded | retrying → … → succeeded | failed | cancelled. */
export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatusValue = (typeof DELIVERY_STATUSES)[number];

/** States a delivery never leaves by itself; only a replay reopens them. */
export const TERMINAL_DELIVERY_STATUSES = ['succeeded', 'failed', 'cancelled'] as const satisfies readonly DeliveryStatusValue[];

export function isTerminal(status: DeliveryStatusValue): boolean {
  return (TERMINAL_DELIVERY_STATUSES as readonly DeliveryStatusValue[]).includes(status);
}

/** Why an attempt was made. */
export const ATTEMPT_TRIGGERS = ['initial', 'retry', 'replay'] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

/**
 * How an attempt ended: `gone` is a 410, which stops the delivery at once. `sending` is the intent an
 * attempt records before it sends; `unknown` is such an intent whose worker stopped before recording
 * the answer, so whether the receiver got it is not known (it counts as a failed attempt).
 */
export const ATTEMPT_OUTCOMES = ['succeeded', 'failed', 'gone', 'unknown', 'sending'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** Where the attempt's URL came from: the connection's override, the organization default, or the FHIR Subscription notified. */
export const TARGET_SOURCES = ['connection', 'organization', 'subscription'] as const;
export type TargetSource = (typeof TARGET_SOURCES)[number];

/** The chaos modes a reliability profile can switch on. */
export const CHAOS_MODES = ['transient_503', 'slow', 'rate_limit'] as const;
export type ChaosMode = (typeof CHAOS_MODES)[number];

/** The chaos modes a reliability profile can switch on for bulk exports (interop/bulk-export/). */
export const EXPORT_CHAOS_MODES = ['fail', 'slow', 'partial'] as const;
export type ExportChaosMode = (typeof EXPORT_CHAOS_MODES)[number];
