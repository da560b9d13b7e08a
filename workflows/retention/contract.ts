import type { RetentionTarget } from '../../platform/retention';

/**
 * The retention workflow's contract, shared by the workflow, the worker's schedule set-up and the
 * tests: what it purges (RETENTION_TARGETS, platform/retention.ts), with what input, and the Schedule that runs it.
 */

export interface RetentionInput {
  deliveryRetentionDays: number;
  /** The most a delivery is kept from its arrival, however recently it was replayed (DELIVERY_MAX_RETENTION_DAYS); at least deliveryRetentionDays. */
  deliveryMaxRetentionDays?: number;
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
