import { and, eq, lt, sql } from 'drizzle-orm';
import { type IncrementResponse, rateLimit, type Store } from 'express-rate-limit';
import { rateLimitWindows } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { ApiProblem } from './problem';

const WINDOW_SECONDS = 60;

/**
 * A per-API-key budget over a one-minute window, counted in Postgres so it holds across every API
 * process: N processes still allow the budget once, not N times.
 */
export function perKeyRateLimit(db: Database, requestsPerMinute: number) {
  return rateLimit({
    windowMs: WINDOW_SECONDS * 1000,
    limit: requestsPerMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: new PostgresWindowStore(db),
    keyGenerator: (_req, res) => String(res.locals.auth?.apiKeyId),
    handler: (_req, _res, next) => {
      next(
        new ApiProblem(
          429,
          'rate_limited',
          `This API key made more than ${requestsPerMinute} requests in a minute. Wait for the number of seconds in Retry-After, then try again.`,
        ),
      );
    },
  });
}

/**
 * Fixed windows aligned on the database's clock (so every process agrees where a minute starts), one
 * row per key and window, bumped by one atomic upsert per request. A key's first hit in a window
 * deletes its older rows, so the table holds at most one row per key without a sweeper. (Written here
 * rather than taken from @acpr/rate-limit-postgresql, which brings a second Postgres driver and runs
 * its own migrations outside drizzle/ for what is one statement.)
 */
class PostgresWindowStore implements Store {
  readonly localKeys = false;
  // Prepared once: building the statement per request cost more CPU than the round trip itself.
  private readonly bump;
  private readonly purgeOlder;

  constructor(private readonly db: Database) {
    const windowStart = sql`to_timestamp(floor(extract(epoch from now()) / ${sql.raw(String(WINDOW_SECONDS))}) * ${sql.raw(String(WINDOW_SECONDS))})`;
    this.bump = db
      .insert(rateLimitWindows)
      .values({ key: sql.placeholder('key'), windowStart, hits: 1 })
      .onConflictDoUpdate({ target: [rateLimitWindows.key, rateLimitWindows.windowStart], set: { hits: sql`${rateLimitWindows.hits} + 1` } })
      .returning({ hits: rateLimitWindows.hits, windowStart: rateLimitWindows.windowStart })
      .prepare('rate_limit_bump');
    this.purgeOlder = db
      .delete(rateLimitWindows)
      .where(and(eq(rateLimitWindows.key, sql.placeholder('key')), lt(rateLimitWindows.windowStart, sql.placeholder('windowStart'))))
      .prepare('rate_limit_purge_older');
  }

  async increment(key: string): Promise<IncrementResponse> {
    const [row] = await this.bump.execute({ key });
    if (row!.hits === 1) await this.purgeOlder.execute({ key, windowStart: row!.windowStart.toISOString() });
    return { totalHits: row!.hits, resetTime: new Date(row!.windowStart.getTime() + WINDOW_SECONDS * 1000) };
  }

  async decrement(key: string): Promise<void> {
    await this.db
      .update(rateLimitWindows)
      .set({ hits: sql`greatest(${rateLimitWindows.hits} - 1, 0)` })
      .where(eq(rateLimitWindows.key, key));
  }

  async resetKey(key: string): Promise<void> {
    await this.db.delete(rateLimitWindows).where(eq(rateLimitWindows.key, key));
  }
}
