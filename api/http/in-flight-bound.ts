import { and, count, eq } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Database } from '../../platform/database';
import { ApiProblem } from './problem';

/** Seconds a client over its bound is asked to wait: work in flight typically settles within them. */
const RETRY_AFTER_SECONDS = 10;

/**
 * Per-organization bounds on work that runs for a while (issue 23, fair sharing): an organization with
 * `limit` scenario runs or aggregator queries still running is answered 429 until one ends, so one
 * tenant cannot fill the worker with its own. Counted from the recorded rows, so a burst that starts
 * faster than its workflows record may pass the bound by what was in between.
 */
export async function assertWithinInFlightBound(
  db: Database,
  work: { table: PgTable; organizationId: PgColumn; status: PgColumn },
  organizationId: string,
  limit: number,
  what: string,
): Promise<void> {
  const [row] = await db
    .select({ running: count() })
    .from(work.table)
    .where(and(eq(work.organizationId, organizationId), eq(work.status, 'running')));
  if ((row?.running ?? 0) < limit) return;
  throw new ApiProblem(
    429,
    'too_many_in_flight',
    `Your organization already has ${limit} ${what} running, its bound. Wait for one to end (or cancel one), then try again.`,
    { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } },
  );
}
