import { and, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { purgeExpiredAuthorizations } from '../claims/pas/authorization-records';
import { bulkExports, idempotencyKeys, smartAuthorizations, smartClientAssertions, smartLaunches, smartTokens } from '../drizzle/schema';
import { purgeQueriesArrivedBefore } from '../interop/aggregator/records';
import type { Database } from '../platform/database';
import type { RetentionTarget } from '../platform/retention';
import { purgeFinishedDeliveries } from '../webhooks/delivery-records';

export interface PurgeResult {
  rows: number;
  /** Delivery attempts deleted with the deliveries (0 for other targets). */
  attempts: number;
}

/** The retention workflow's one activity: a batch of deletes for one target. */
export function createRetentionActivities({ db, logger }: { db: Database; logger?: Logger | undefined }) {
  const purges: Record<RetentionTarget, (cutoff: Date, batchSize: number, maximumCutoff: Date) => Promise<PurgeResult>> = {
    idempotency_keys: async (cutoff, batchSize) => {
      const batch = db
        .select({ organizationId: idempotencyKeys.organizationId, key: idempotencyKeys.key })
        .from(idempotencyKeys)
        .where(lt(idempotencyKeys.expiresAt, cutoff))
        .limit(batchSize);
      const gone = await db
        .delete(idempotencyKeys)
        .where(sql`(${idempotencyKeys.organizationId}, ${idempotencyKeys.key}) in (${batch})`)
        .returning({ key: idempotencyKeys.key });
      return { rows: gone.length, attempts: 0 };
    },
    // Never exchanged: a picker request, a code, or a client_credentials grant whose token has expired. Once exchanged it holds the grant its tokens belong to.
    authorization_codes: async (cutoff, batchSize) => {
      const batch = db
        .select({ id: smartAuthorizations.id })
        .from(smartAuthorizations)
        .where(and(lt(smartAuthorizations.expiresAt, cutoff), isNull(smartAuthorizations.exchangedAt)))
        .limit(batchSize);
      const gone = await db.delete(smartAuthorizations).where(inArray(smartAuthorizations.id, batch)).returning({ id: smartAuthorizations.id });
      return { rows: gone.length, attempts: 0 };
    },
    launch_handles: async (cutoff, batchSize) => {
      const batch = db
        .select({ handleHash: smartLaunches.handleHash })
        .from(smartLaunches)
        .where(lt(smartLaunches.expiresAt, cutoff))
        .limit(batchSize);
      const gone = await db.delete(smartLaunches).where(inArray(smartLaunches.handleHash, batch)).returning({ handleHash: smartLaunches.handleHash });
      return { rows: gone.length, attempts: 0 };
    },
    // A revoked token is refused as an unknown one is, so its row serves nothing.
    tokens: async (cutoff, batchSize) => {
      const batch = db
        .select({ id: smartTokens.id })
        .from(smartTokens)
        .where(or(lt(smartTokens.expiresAt, cutoff), lt(smartTokens.revokedAt, cutoff)))
        .limit(batchSize);
      const gone = await db.delete(smartTokens).where(inArray(smartTokens.id, batch)).returning({ id: smartTokens.id });
      return { rows: gone.length, attempts: 0 };
    },
    client_assertions: async (cutoff, batchSize) => {
      const batch = db
        .select({ clientId: smartClientAssertions.clientId, jti: smartClientAssertions.jti })
        .from(smartClientAssertions)
        .where(lt(smartClientAssertions.expiresAt, cutoff))
        .limit(batchSize);
      const gone = await db
        .delete(smartClientAssertions)
        .where(sql`(${smartClientAssertions.clientId}, ${smartClientAssertions.jti}) in (${batch})`)
        .returning({ jti: smartClientAssertions.jti });
      return { rows: gone.length, attempts: 0 };
    },
    // Finished deliveries with no work in flight: their owner decides which may go.
    deliveries: (cutoff, batchSize, maximumCutoff) => purgeFinishedDeliveries(db, cutoff, batchSize, maximumCutoff),
    // Counted from arrival, whatever became of the query: its request holds the demographics it was sent.
    aggregator_queries: async (cutoff, batchSize) => ({ rows: await purgeQueriesArrivedBefore(db, cutoff, batchSize), attempts: 0 }),
    // An export past its expiry, its files with it (cascade): ended a while ago, or abandoned (api/fhir/bulk-export.ts).
    bulk_exports: async (cutoff, batchSize) => {
      const batch = db.select({ id: bulkExports.id }).from(bulkExports).where(lt(bulkExports.expiresAt, cutoff)).limit(batchSize);
      const gone = await db.delete(bulkExports).where(inArray(bulkExports.id, batch)).returning({ id: bulkExports.id });
      return { rows: gone.length, attempts: 0 };
    },
    prior_authorizations: async (cutoff, batchSize) => ({ rows: await purgeExpiredAuthorizations(db, cutoff, batchSize), attempts: 0 }),
  };

  return {
    /** One batch of the retention workflow; it deletes only what is past its cutoff, so it is safe to retry. */
    async purgeBatch(input: { target: RetentionTarget; cutoff: string; batchSize: number; maximumCutoff?: string }): Promise<PurgeResult> {
      const cutoff = new Date(input.cutoff);
      const purged = await purges[input.target](cutoff, input.batchSize, input.maximumCutoff ? new Date(input.maximumCutoff) : cutoff);
      if (purged.rows > 0) logger?.info({ target: input.target, cutoff: input.cutoff, ...purged }, `Retention purged ${purged.rows} ${input.target}`);
      return purged;
    },
  };
}
