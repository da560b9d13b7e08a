import { proxyActivities } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import { RETENTION_TARGETS } from '../../platform/retention';
import { DEFAULT_RETENTION_BATCH_SIZE, type RetentionCounts, type RetentionInput } from './contract';

const { purgeBatch } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 10 },
});

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Purges what the service no longer needs, one batch at a time until a batch comes back short. Run by the retention Schedule (contract.ts); every batch deletes only rows past
 * their cutoff, so a run retried or overlapping another is harmless.
 */
export async function retentionWorkflow(input: RetentionInput): Promise<RetentionCounts> {
  const batchSize = input.batchSize ?? DEFAULT_RETENTION_BATCH_SIZE;
  // The workflow clock is deterministic: every batch of this run uses the same cutoffs.
  const now = Date.now();
  const counts: RetentionCounts = {
    idempotency_keys: 0,
    authorization_codes: 0,
    launch_handles: 0,
    tokens: 0,
    client_assertions: 0,
    deliveries: 0,
    aggregator_queries: 0,
    bulk_exports: 0,
    prior_authorizations: 0,
    delivery_attempts: 0,
  };
  const retained = now - input.deliveryRetentionDays * DAY_MS;
  const maximum = now - Math.max(input.deliveryMaxRetentionDays ?? 0, input.deliveryRetentionDays) * DAY_MS;
  for (const target of RETENTION_TARGETS) {
    const cutoff = new Date(target === 'deliveries' || target === 'aggregator_queries' ? retained : now).toISOString();
    const maximumCutoff = target === 'deliveries' ? new Date(maximum).toISOString() : undefined;
    for (;;) {
      const purged = await purgeBatch({ target, cutoff, batchSize, maximumCutoff });
      counts[target] += purged.rows;
      counts.delivery_attempts += purged.attempts;
      if (purged.rows < batchSize) break;
    }
  }
  // The counts are the run's result, shown in the Web UI; each batch logs its own (activities/retention.ts).
  return counts;
}
