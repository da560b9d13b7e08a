import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from '../drizzle/schema';

export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface DatabaseHandle {
  db: Database;
  /** `postgres` when DATABASE_URL is set, else the embedded `pglite` database. */
  kind: 'postgres' | 'pglite';
  /** Where the data lives, for start-up output (no password). */
  location: string;
  close(): Promise<void>;
}

const migrationsFolder = fileURLToPath(new URL('../drizzle', import.meta.url));

// Any constant works, as long as every process sharing the database uses the same one.
const MIGRATION_LOCK_ID = 727_001;

/** Opens the database and applies every committed migration in `drizzle/` before returning. */
export async function openDatabase(options: { databaseUrl?: string | undefined; dataDir: string }): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    await migratePostgresOnce(options.databaseUrl);
    const client = postgres(options.databaseUrl, { max: 10, onnotice: () => {}, connect_timeout: 10 });
    const db = drizzlePostgres(client, { schema });
    return {
      db: db as unknown as Database,
      kind: 'postgres',
      location: redactPassword(options.databaseUrl),
      close: () => client.end({ timeout: 5 }),
    };
  }
  const directory = join(options.dataDir, 'pglite');
  mkdirSync(directory, { recursive: true });
  const client = new PGlite(directory);
  const db = drizzlePglite(client, { schema });
  await migratePglite(db, { migrationsFolder });
  return { db: db as unknown as Database, kind: 'pglite', location: directory, close: () => client.close() };
}

/** API and workers may start together; a session advisory lock makes them migrate one at a time. */
async function migratePostgresOnce(databaseUrl: string): Promise<void> {
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migratePostgres(drizzlePostgres(client), { migrationsFolder });
    await client`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await client.end({ timeout: 5 });
  }
}

export async function pingDatabase(db: Database): Promise<void> {
  await db.execute(sql`select 1`);
}

function redactPassword(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
