import { mkdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from '../drizzle/schema';
import { createWatchedListener } from './listener';
import { createPgliteDatabase, hasPgliteDatabase, lockDirectory, pgliteDirectory } from './pglite-directory';
import { PGLITE_SETTINGS } from './pglite-settings';

export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

/** The rows of a raw statement, whichever driver answered it: postgres.js answers an array, PGlite an object holding `rows`. */
export async function executeRows<T>(db: Database, statement: SQL): Promise<T[]> {
  const result = (await db.execute(statement)) as unknown as T[] | { rows: T[] };
  return Array.isArray(result) ? result : result.rows;
}

export interface DatabaseHandle {
  db: Database;
  /** `postgres` when DATABASE_URL is set, else the embedded `pglite` database. */
  kind: 'postgres' | 'pglite';
  /** Where the data lives, for start-up output (no password). */
  location: string;
  /**
   * Calls `onNotify` with the payload of every NOTIFY on `channel`, from any process sharing the
   * database, and `onListen` each time listening (re)starts: notifications sent while the connection
   * was down are lost, so a listener treats `onListen` as "assume you missed some".
   */
  listen: Listen;
  close(): Promise<void>;
}

/** `onDrop`: listening has just been lost (the connection closed or stopped answering); `onListen` follows once it is back. */
export type Listen = (channel: string, onNotify: (payload: string) => void, onListen: () => void, onDrop?: () => void) => Promise<void>;

/** How the LISTEN connection is watched (platform/listener.ts): a heartbeat each second, a retry every quarter second while down. */
const LISTENER_WATCH = { heartbeatMs: 1_000, retryMs: 250 } as const;

const migrationsFolder = fileURLToPath(new URL('../drizzle', import.meta.url));

// Any constant works, as long as every process sharing the database uses the same one.
const MIGRATION_LOCK_ID = 727_001;

/**
 * postgres.js settings for every pool we open. `fetch_types: false`: by default each new connection
 * first asks for the array types, and when the database drops the connection during that query the
 * failure escapes as an unhandled rejection, which ends the process (porsager/postgres#1192, open):
 * a database outage must give 503s, not a crash. No column or parameter of ours is a Postgres array.
 */
const CLIENT_OPTIONS = {
  onnotice: () => {},
  connect_timeout: 10,
  fetch_types: false,
  backoff: reconnectDelaySeconds,
  // A connection idle this long is closed: one left half-open by a failover is not handed a query later.
  idle_timeout: 60,
} as const;

/**
 * The longest any one statement of the service may run (Postgres `statement_timeout`): a query stuck
 * behind a lock or a runaway plan ends with 57014, answered 503 like an outage, instead of holding a
 * request and a pooled connection without end. Migrations wait for each other, so they have none.
 */
export const STATEMENT_TIMEOUT_MS = 30_000;

/**
 * How long a connection that failed waits before connecting again, with the query it holds, in
 * seconds. postgres.js grows it to 20 s over an outage (3^n / 100), so requests made during a
 * Postgres restart stayed held up to 20 s after it was back. Short and capped: serving again within
 * a second of Postgres accepting connections; jittered, so the pool does not reconnect in step.
 */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.05 * 2 ** failures, 0.5) * (0.75 + Math.random() / 4);
}

/** Opens the database and applies every committed migration in `drizzle/` before returning. */
export async function openDatabase(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** Told every statement sent to Postgres (not PGlite), as it is sent: how the benchmarks count statements per delivery. */
  onStatement?: (statement: string) => void;
}): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    await migratePostgresOnce(options.databaseUrl);
    const onStatement = options.onStatement;
    const client = postgres(options.databaseUrl, {
      ...CLIENT_OPTIONS,
      max: 10,
      connection: { statement_timeout: STATEMENT_TIMEOUT_MS },
      ...(onStatement ? { debug: (_connection: number, statement: string) => onStatement(statement) } : {}),
    });
    const db = drizzlePostgres(preparingStatements(client), { schema });
    const listener = createWatchedListener(options.databaseUrl, CLIENT_OPTIONS, LISTENER_WATCH);
    return {
      db: db as unknown as Database,
      kind: 'postgres',
      location: redactPassword(options.databaseUrl),
      listen: async (channel, onNotify, onListen, onDrop) => {
        listener.subscribe(channel, { onNotify, onListen, ...(onDrop ? { onDrop } : {}) });
      },
      close: async () => {
        await listener.close();
        await client.end({ timeout: 5 });
      },
    };
  }
  const directory = pgliteDirectory(options.dataDir);
  mkdirSync(directory, { recursive: true });
  const releaseLock = lockDirectory(directory);
  try {
    if (!hasPgliteDatabase(directory)) await createPgliteDatabase(directory);
    const client = new PGlite(directory, { startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS] });
    const db = drizzlePglite(client, { schema });
    await migratePglite(db, { migrationsFolder });
    const close = async () => {
      await client.close();
      releaseLock();
    };
    const listen: Listen = async (channel, onNotify, onListen) => {
      await client.listen(channel, onNotify);
      onListen();
    };
    return { db: db as unknown as Database, kind: 'pglite', location: directory, listen, close };
  } catch (error) {
    releaseLock();
    throw error;
  }
}

/**
 * The client drizzle is given: every statement it sends is prepared. drizzle's postgres.js driver runs
 * each one unprepared (`unsafe(text, params, { prepare: false })`, drizzle-orm#6096), for which
 * postgres.js first asks Postgres to parse and describe the statement and waits for the answer before
 * binding it: two round trips, and a parse and a plan, every time. Prepared, a statement is parsed
 * once per connection and then runs in one round trip (a delivery's five statements: figures in
 * docs/benchmarks.md). Statement texts come from the code with values as parameters; only a list's
 * length (`inArray`, a multi-row insert) makes a text of its own, so a connection holds some dozens to
 * hundreds, dropped with it (postgres.js replaces a connection after 30 to 60 minutes). A statement a
 * migration invalidated is prepared again by postgres.js itself.
 */
export function preparingStatements(client: postgres.Sql): postgres.Sql {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (text: string, parameters?: unknown[], options?: postgres.UnsafeQueryOptions) =>
          target.unsafe(text, parameters as postgres.ParameterOrJSON<never>[], { ...options, prepare: true });
      }
      // A transaction's (and a savepoint's) statements go through the client its callback is handed.
      if (property === 'begin' || property === 'savepoint') {
        const open = Reflect.get(target, property, receiver) as (...args: unknown[]) => unknown;
        return (...args: unknown[]) => {
          const work = args.pop() as (transaction: postgres.Sql) => unknown;
          return open.call(target, ...args, (transaction: postgres.Sql) => work(preparingStatements(transaction)));
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

/** API and workers may start together; a session advisory lock makes them migrate one at a time. */
async function migratePostgresOnce(databaseUrl: string): Promise<void> {
  const client = postgres(databaseUrl, { ...CLIENT_OPTIONS, max: 1 });
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migratePostgres(drizzlePostgres(client), { migrationsFolder });
    await client`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** Socket and driver codes of a connection that failed or dropped (node, postgres.js). */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);
/** SQLSTATEs of a server shutting down, starting up or full (class 08, 57P01–57P03, 53300), or of a statement over its time limit (57014). */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|53300|57014)$/;

/**
 * Whether an error means the database cannot be reached right now (as opposed to a query that is
 * wrong): the API answers those 503 with Retry-After. Looks through drizzle's wrapping (`cause`).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth += 1) {
    const { code, message, errors } = current as { code?: unknown; message?: unknown; errors?: unknown };
    if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
    // PGlite is in-process: it is unavailable only once closed (shutdown).
    if (typeof message === 'string' && message.includes('PGlite is closed')) return true;
    if (Array.isArray(errors) && errors.some(isDatabaseUnavailable)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Runs `work` again while the database is unavailable (isDatabaseUnavailable), backing off up to
 * 2 s between tries, for at most `withinMs`; any other error, or the time running out, is thrown.
 * For a write that must not be lost once something irreversible happened before it (a webhook sent).
 */
export async function retryWhileUnavailable<T>(work: () => Promise<T>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    try {
      return await work();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || Date.now() + delayMs > deadline) throw error;
      await sleep(delayMs);
    }
  }
}

/**
 * Text as Postgres can store it: a `text` value cannot hold NUL (U+0000), so each becomes U+FFFD, the
 * character an undecodable byte becomes. For text from outside that is kept as it came (a receiver's
 * answer, an HL7 field), where refusing is not an option because the work is already under way.
 */
export function storableText<T extends string | null | undefined>(value: T): T {
  return (typeof value === 'string' ? value.replaceAll('\u0000', '\uFFFD') : value) as T;
}

export async function pingDatabase(db: Database): Promise<void> {
  await db.execute(sql`select 1`);
}

function redactPassword(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
