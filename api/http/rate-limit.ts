import { and, eq, lt, sql } from 'drizzle-orm';
import { type IncrementResponse, rateLimit, type Store } from 'express-rate-limit';
import { rateLimitWindows } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { ApiProblem } from './problem';

const WINDOW_MS = 60_000;

/**
 * A per-API-key budget over a one-minute window, counted in Postgres so it holds across every API
 * process: N processes allow the budget once, not N times.
 */
export function perKeyRateLimit(db: Database, requestsPerMinute: number) {
  return rateLimit({
    windowMs: WINDOW_MS,
    limit: requestsPerMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: new PostgresWindowStore(db, requestsPerMinute),
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

/** A process may answer this share of what is left of a key's budget before it next tells the others. */
const SHARE_OF_REMAINING = 8;

interface Tally {
  /** Start of the window (ms) these counts belong to. */
  window: number;
  /** The key's count in the database at this process's last write. */
  shared: number;
  /** Requests this process admitted since, not yet added to the database. */
  pending: number;
  purged: boolean;
}

/**
 * One-minute windows aligned on the clock, one row per key and window in `rate_limit_windows`, counted
 * by an atomic upsert (`hits = hits + n`), so every process adds to the same count. A round trip per
 * request would cost more than the request itself, so each process answers a share of what is left of
 * the budget on its own, then adds those hits in one write and learns the others' in its answer: far
 * from the limit that is one write per many requests; within SHARE_OF_REMAINING requests of it, one
 * write per request, and the count is exact. One process is always exact; with N, while each answers
 * its share before writing, the others' unwritten shares are what a key can briefly exceed its budget
 * by: at most (N − 1) / SHARE_OF_REMAINING of what was left when they last wrote. A key over its budget
 * is refused locally until the window ends, as counts only rise within one. A key's first write in a
 * window deletes its older rows, so the table holds about one row per key without a sweeper. (Written
 * here rather than taken from @acpr/rate-limit-postgresql, which writes on every request, brings a
 * second Postgres driver and runs its own migrations outside drizzle/.)
 */
class PostgresWindowStore implements Store {
  readonly localKeys = false;
  private readonly tallies = new Map<string, Tally>();
  // Prepared once: building the statement per write cost more CPU than the round trip itself.
  private readonly add;
  private readonly purgeOlder;

  constructor(
    private readonly db: Database,
    private readonly limit: number,
  ) {
    this.add = db
      .insert(rateLimitWindows)
      .values({
        key: sql.placeholder('key'),
        windowStart: sql`${sql.placeholder('windowStart')}::timestamptz`,
        hits: sql`${sql.placeholder('hits')}::integer`,
      })
      .onConflictDoUpdate({
        target: [rateLimitWindows.key, rateLimitWindows.windowStart],
        set: { hits: sql`${rateLimitWindows.hits} + excluded.hits` },
      })
      .returning({ hits: rateLimitWindows.hits })
      .prepare('rate_limit_add');
    this.purgeOlder = db
      .delete(rateLimitWindows)
      .where(
        and(eq(rateLimitWindows.key, sql.placeholder('key')), lt(rateLimitWindows.windowStart, sql`${sql.placeholder('windowStart')}::timestamptz`)),
      )
      .prepare('rate_limit_purge_older');
  }

  async increment(key: string): Promise<IncrementResponse> {
    const window = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS;
    let tally = this.tallies.get(key);
    if (!tally || tally.window !== window) {
      tally = { window, shared: 0, pending: 0, purged: false };
      this.tallies.set(key, tally);
    }
    const resetTime = new Date(window + WINDOW_MS);
    const ownAllowance = Math.floor((this.limit - tally.shared) / SHARE_OF_REMAINING);
    if (tally.shared >= this.limit || tally.pending < ownAllowance) {
      tally.pending += 1;
      return { totalHits: tally.shared + tally.pending, resetTime };
    }
    const hits = tally.pending + 1;
    tally.pending = 0;
    const windowStart = new Date(window).toISOString();
    const [row] = await this.add.execute({ key, windowStart, hits });
    tally.shared = Math.max(tally.shared, row!.hits);
    if (!tally.purged) {
      tally.purged = true;
      await this.purgeOlder.execute({ key, windowStart });
    }
    return { totalHits: row!.hits, resetTime };
  }

  async decrement(key: string): Promise<void> {
    const tally = this.tallies.get(key);
    if (tally && tally.pending > 0) {
      tally.pending -= 1;
      return;
    }
    await this.db
      .update(rateLimitWindows)
      .set({ hits: sql`greatest(${rateLimitWindows.hits} - 1, 0)` })
      .where(eq(rateLimitWindows.key, key));
  }

  async resetKey(key: string): Promise<void> {
    this.tallies.delete(key);
    await this.db.delete(rateLimitWindows).where(eq(rateLimitWindows.key, key));
  }
}
