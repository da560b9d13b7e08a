import type { Priority } from '@temporalio/common';

/**
 * Temporal's fairness key for an organization's work (Task Queue Fairness, switched on in every
 * server the product runs: runtime/temporal.ts, runtime/cluster/server-config.ts,
 * docker-compose.yml). Matching dispatches a task queue's backlog round robin across the keys its
 * tasks carry, so one organization's burst of runs waits behind its own work, never another's
 * (docs/api/fair-sharing.md). Every organization has the default weight (1): an equal share.
 * A run's activities and child workflows inherit it.
 */
export function organizationFairness(organizationId: string): Priority {
  return { fairnessKey: organizationId };
}
