/**
 * The retention workflow's contract, shared by the workflow, the worker's schedule set-up and the
 * tests: what it purges, with what input, and the Schedule that runs it.
 */

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

export interface RetentionInput {
  deliveryRetentionDays: number;
  /** Rows per delete, so one purge never holds locks on a large backlog for long. */
  batchSize?: number;
}

/** Rows purged per target, and the attempts that went with the deliveries. */
export type RetentionCounts = Record<RetentionTarget | 'delivery_attempts', number>;

export const DEFAULT_RETENTION_BATCH_SIZE = 1000;

/** One Schedule per task queue (`retention-sandbox`), so deployments sharing a namespace keep theirs apart. */
export const retentionScheduleId = (taskQueue: string) => `retention-${taskQueue}`;

/** How often the Schedule runs the purge. */
export const RETENTION_INTERVAL = '1 hour';
