/**
 * The vocabularies the tables store, each list written once: the drizzle schema, the zod schemas of
 * the API, the activities and the workflows all derive their types from these tuples. They live
 * beside the schema because every layer above it uses them.
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

/** Which tier the attempt's URL came from: the connection's override or the organization default. */
export const TARGET_SOURCES = ['connection', 'organization'] as const;
export type TargetSource = (typeof TARGET_SOURCES)[number];

/** The chaos modes a reliability profile can switch on. */
export const CHAOS_MODES = ['transient_503', 'slow', 'rate_limit'] as const;
export type ChaosMode = (typeof CHAOS_MODES)[number];

/**
 * An aggregator query runs until its workflow has merged every source's answer, then says how that
 * went (docs/api/aggregator.md): `completed` when every source answered, `partial` when some
 * failed or timed out, `failed` when none answered.
 */
export const AGGREGATOR_QUERY_STATUSES = ['running', 'completed', 'partial', 'failed'] as const;
export type AggregatorQueryStatus = (typeof AGGREGATOR_QUERY_STATUSES)[number];

/** Scenario run states: `running` until every step is done (`completed`), or `cancelled`, or `failed` (an error stopped it). */
export const SCENARIO_RUN_STATUSES = ['running', 'completed', 'cancelled', 'failed'] as const;
export type ScenarioRunStatus = (typeof SCENARIO_RUN_STATUSES)[number];

export function isRunEnded(status: ScenarioRunStatus): boolean {
  return status !== 'running';
}

/** A step's state: `waiting` while its delay runs (or, at manual pace, until advanced). */
export const SCENARIO_STEP_STATUSES = ['pending', 'waiting', 'done', 'skipped', 'cancelled'] as const;
export type ScenarioStepStatus = (typeof SCENARIO_STEP_STATUSES)[number];

/** How a run's clock moves: typical delays as they are, divided by `time_scale`, or only when advanced. */
export const PACE_MODES = ['realtime', 'accelerated', 'manual'] as const;
export type PaceMode = (typeof PACE_MODES)[number];

/**
 * How strictly an inbound HL7 v2 message is checked: `lenient` (findings are warnings on an AA, as
 * production listeners answer) or `strict` (findings are errors, AE), per HL7 identity and per request.
 */
export const HL7_CONFORMANCE_MODES = ['lenient', 'strict'] as const;
export type Hl7ConformanceMode = (typeof HL7_CONFORMANCE_MODES)[number];

/** What is purged, in this order; each is a kind of row past its use. */
export const RETENTION_TARGETS = [
  /** Idempotency-Key records past their 24 h. */
  'idempotency_keys',
  /** SMART authorization codes and picker requests that expired unused. */
  'authorization_codes',
  /** SMART EHR launch handles past their lifetime. */
  'launch_handles',
  /** SMART access and refresh tokens that expired or were revoked. */
  'tokens',
  /** The jti of client assertions (SMART Backend Services) past their exp: such an assertion no longer verifies. */
  'client_assertions',
  /** Finished deliveries (with their attempts) older than DELIVERY_RETENTION_DAYS. */
  'deliveries',
] as const;
export type RetentionTarget = (typeof RETENTION_TARGETS)[number];
