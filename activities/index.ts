import { count } from 'drizzle-orm';
import { organizations } from '../drizzle/schema';
import type { Database } from '../platform/database';

export interface ActivityDependencies {
  db: Database;
}

/**
 * Every activity the worker runs, built from its dependencies (Temporal's dependency-injection
 * pattern) so tests and processes hand in their own database.
 */
export function createActivities({ db }: ActivityDependencies) {
  return {
    /** Proves a workflow can reach the database through the worker. */
    async checkDatabase(): Promise<{ organizations: number }> {
      const [row] = await db.select({ organizations: count() }).from(organizations);
      return { organizations: row?.organizations ?? 0 };
    },
  };
}

export type SandboxActivities = ReturnType<typeof createActivities>;
