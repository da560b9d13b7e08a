import { count } from 'drizzle-orm';
import type { Logger } from 'pino';
import { organizations } from '../drizzle/schema';
import type { Database } from '../platform/database';
import type { ResolveHost } from '../webhooks/targets';
import { createDeliveryActivities } from './deliveries';
import { createRetentionActivities } from './retention';

export interface ActivityDependencies {
  db: Database;
  allowPrivateTargets: boolean;
  webhookTimeoutMs: number;
  /** The DNS lookup webhook targets are checked and pinned with; the system resolver when absent. */
  resolveHost?: ResolveHost;
  /** Where housekeeping activities report what they did (the retention counts). */
  logger?: Logger;
}

/**
 * Every activity the worker runs, built from its dependencies (Temporal's dependency-injection
 * pattern) so tests and processes hand in their own database and settings.
 */
export function createActivities({ db, allowPrivateTargets, webhookTimeoutMs, resolveHost, logger }: ActivityDependencies) {
  return {
    ...createDeliveryActivities({ db, allowPrivateTargets, timeoutMs: webhookTimeoutMs, resolveHost }),
    ...createRetentionActivities({ db, logger }),

    /** Proves a workflow can reach the database through the worker. */
    async checkDatabase(): Promise<{ organizations: number }> {
      const [row] = await db.select({ organizations: count() }).from(organizations);
      return { organizations: row?.organizations ?? 0 };
    },
  };
}

export type SandboxActivities = ReturnType<typeof createActivities>;
