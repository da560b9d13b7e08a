import { createHash } from 'node:crypto';
import { and, eq, lt, sql } from 'drizzle-orm';
import type { NextFunction, RequestHandler, Response } from 'express';
import { rateLimitWindows } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { ApiProblem } from './problem';

const WINDOW_MS = 60_000;

/**
 * A per-API-key budget over a one-minute window, counted in Postgres so it holds across every API
 * process: N processes allow the budget once, not N times. Every answer carries the IETF draft-8
 * `RateLimit` and `RateLimit-Policy` headers; a refusal, `Retry-After` too. (The headers are those
 * express-rate-limit wrote, byte for byte; its middleware is not used: it hashed the key for the
 * policy and awaited five times on every request, where a request below its process's share of the
 * budget needs no await at all.)
 */
export function perKeyRateLimit(db: Database, requestsPerMinute: number): RequestHandler {
  const store = new PostgresWindowStore(db, requestsPerMinute);
  const name = `"${requestsPerMinute}-in-1min"`;
  /** RateLimit-Policy by key: its partition key is a hash of the key's id, the same for every request. */
  const policies = new Map<string, string>();
  const answer = (res: Response, next: NextFunction, key: string, counted: Counted) => {
    const resetSeconds = Math.max(0, Math.ceil((counted.resetTime - Date.now()) / 1000));
    if (!res.headersSent) {
      let policy = policies.get(key);
      if (policy === undefined) {
        policy = `${name}; q=${requestsPerMinute}; w=${WINDOW_MS / 1000}; pk=:${partitionKey(key)}:`;
        policies.set(key, policy);
      }
      res.setHeader('RateLimit', `${name}; r=${Math.max(requestsPerMinute - counted.totalHits, 0)}; t=${resetSeconds}`);
      res.setHeader('RateLimit-Policy', policy);
    }
    if (counted.totalHits <= requestsPerMinute) return next();
    if (!res.headersSent) res.setHeader('Retry-After', String(resetSeconds));
    throw new ApiProblem(
      429,
      'rate_limited',
      `This API key made more than ${requestsPerMinute} requests in a minute. Wait for the number of seconds in Retry-After, then try again.`,
    );
  };
  return (_req, res, next) => {
    const key = String(res.locals.auth?.apiKeyId);
    const counted = store.increment(key);
    if (counted instanceof Promise) return counted.then((settled) => answer(res, next, key, settled));
    answer(res, next, key, counted);
  };
}

/** The key's share of the policy header (draft-8 `pk`): 12 hex digits of its SHA-256, in base64. */
function partitionKey(key: string): string {
  return Buffer.from(createHash('sha256').update(key).digest('hex').slice(0, 12)).toString('base64');
}

interface Counted {
  /** The key's count in this window, this request included. */
  totalHits: number;
  /** When the window ends (epoch ms). */
  resetTime: number;
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
class PostgresWindowStore {
  private readonly tallies = new Map<string, Tally>();
  // Prepared once: building the statement per write cost more CPU than the round trip itself.
  private readonly add;
  private readonly purgeOlder;

  constructor(
    db: Database,
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

  /** Counts one request: at once while this process answers its share, else after the write (a promise). */
  increment(key: string): Counted | Promise<Counted> {
    const window = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS;
    let tally = this.tallies.get(key);
    if (!tally || tally.window !== window) {
      tally = { window, shared: 0, pending: 0, purged: false };
      this.tallies.set(key, tally);
    }
    const resetTime = window + WINDOW_MS;
    const ownAllowance = Math.floor((this.limit - tally.shared) / SHARE_OF_REMAINING);
    if (tally.shared >= this.limit || tally.pending < ownAllowance) {
      tally.pending += 1;
      return { totalHits: tally.shared + tally.pending, resetTime };
    }
    const hits = tally.pending + 1;
    tally.pending = 0;
    return this.write(key, tally, hits, resetTime);
  }

  private async write(key: string, tally: Tally, hits: number, resetTime: number): Promise<Counted> {
    const windowStart = new Date(tally.window).toISOString();
    const [row] = await this.add.execute({ key, windowStart, hits });
    tally.shared = Math.max(tally.shared, row!.hits);
    if (!tally.purged) {
      tally.purged = true;
      await this.purgeOlder.execute({ key, windowStart });
    }
    return { totalHits: row!.hits, resetTime };
  }
}
