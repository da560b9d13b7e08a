import { and, count, eq, inArray, lt } from 'drizzle-orm';
import { type AggregatorQuery, aggregatorQueries } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import type { AggregatorQueryRequest, StoredResult } from './query';
import type { AggregatorQueryStatus } from './vocabulary';

/** The one module that writes `aggregator_queries`: a query as its workflow records it, and its answer. */

/** Recorded once, by the API before the query's workflow starts (a retried request finds it). */
export async function recordNewQuery(
  db: Database,
  query: { queryId: string; organizationId: string; request: AggregatorQueryRequest },
): Promise<void> {
  await db
    .insert(aggregatorQueries)
    .values({ id: query.queryId, organizationId: query.organizationId, status: 'running', request: query.request })
    .onConflictDoNothing();
}

/** The request a query was recorded with, by id alone (for the worker: its workflow holds the id). */
export async function queryRequest(db: Database, queryId: string): Promise<AggregatorQueryRequest> {
  const [stored] = await db.select({ request: aggregatorQueries.request }).from(aggregatorQueries).where(eq(aggregatorQueries.id, queryId));
  if (!stored) throw new Error(`aggregator query ${queryId} has no record`);
  return stored.request as AggregatorQueryRequest;
}

/** A query's status and stored result, by id alone (for the worker: its workflow holds the id). */
export async function queryOutcome(db: Database, queryId: string): Promise<Pick<AggregatorQuery, 'status' | 'result'> | undefined> {
  const [stored] = await db
    .select({ status: aggregatorQueries.status, result: aggregatorQueries.result })
    .from(aggregatorQueries)
    .where(eq(aggregatorQueries.id, queryId));
  return stored;
}

/** Stores the answer once: only a query still running takes it. */
export async function recordQueryAnswer(
  db: Database,
  queryId: string,
  answer: { status: AggregatorQueryStatus; result: StoredResult; completedAt: Date },
) {
  await db
    .update(aggregatorQueries)
    .set(answer)
    .where(and(eq(aggregatorQueries.id, queryId), eq(aggregatorQueries.status, 'running')));
}

/** The organization's query with this id, or undefined (another organization's is not found either). */
export async function findQuery(db: Database, organizationId: string, id: string): Promise<AggregatorQuery | undefined> {
  const [row] = await db
    .select()
    .from(aggregatorQueries)
    .where(and(eq(aggregatorQueries.organizationId, organizationId), eq(aggregatorQueries.id, id)));
  return row;
}

/** How many of the organization's queries are still running (its in-flight bound counts them). */
export async function runningQueries(db: Database, organizationId: string): Promise<number> {
  const [row] = await db
    .select({ running: count() })
    .from(aggregatorQueries)
    .where(and(eq(aggregatorQueries.organizationId, organizationId), eq(aggregatorQueries.status, 'running')));
  return row?.running ?? 0;
}

/**
 * Retention: queries that arrived before `cutoff`, whatever became of them, since the request holds
 * the demographics it was sent (docs/api/privacy.md). At most `batchSize`; returns how many went.
 */
export async function purgeQueriesArrivedBefore(db: Database, cutoff: Date, batchSize: number): Promise<number> {
  const batch = db.select({ id: aggregatorQueries.id }).from(aggregatorQueries).where(lt(aggregatorQueries.createdAt, cutoff)).limit(batchSize);
  const gone = await db.delete(aggregatorQueries).where(inArray(aggregatorQueries.id, batch)).returning({ id: aggregatorQueries.id });
  return gone.length;
}
