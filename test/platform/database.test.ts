import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq, getTableName, is, sql } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import * as schema from '../../drizzle/schema';
import { isDatabaseUnavailable, openDatabase, STATEMENT_TIMEOUT_MS } from '../../platform/database';
import { createOrganization, issueApiKey, lookUpApiKey, revokeApiKey } from '../../platform/organizations';
import { DatabaseInUseError } from '../../platform/pglite-directory';
import { createScratchDatabase } from '../support/scratch-database';
import { startTcpProxy } from '../support/tcp-proxy';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-db-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// Every table the schema declares, and every migration the journal lists.
const EXPECTED_TABLES = (Object.values(schema) as unknown[])
  .filter((value): value is PgTable => is(value, PgTable))
  .map((table) => getTableName(table))
  .sort();
const journal = JSON.parse(readFileSync(new URL('../../drizzle/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] };

/** Runs `body` against a new, empty database on the test server, dropped afterwards. */
async function withEmptyDatabase(body: (url: string) => Promise<void>): Promise<void> {
  const database = await createScratchDatabase(inject('adminDatabaseUrl'), 'sandbox_empty');
  try {
    await body(database.url);
  } finally {
    await database.drop();
  }
}

async function readSchema(url: string): Promise<{ tables: string[]; migrations: number }> {
  const direct = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const tables = await direct`select table_name from information_schema.tables where table_schema = 'public' order by table_name`;
    const [applied] = await direct`select count(*)::int as count from drizzle.__drizzle_migrations`;
    return { tables: tables.map((row) => row.table_name as string), migrations: applied!.count as number };
  } finally {
    await direct.end();
  }
}

describe('migrations on Postgres', () => {
  it('build the whole schema in an empty database, and a second run changes nothing', async () => {
    await withEmptyDatabase(async (url) => {
      await (await openDatabase({ databaseUrl: url, dataDir: scratch })).close();
      await (await openDatabase({ databaseUrl: url, dataDir: scratch })).close();
      expect(EXPECTED_TABLES).toContain('organizations');
      expect(await readSchema(url)).toEqual({ tables: EXPECTED_TABLES, migrations: journal.entries.length });
    });
  });

  it('let several processes start at once, each migration applied once', async () => {
    await withEmptyDatabase(async (url) => {
      const handles = await Promise.all([1, 2, 3].map(() => openDatabase({ databaseUrl: url, dataDir: scratch })));
      await Promise.all(handles.map((handle) => handle.close()));
      expect(await readSchema(url)).toEqual({ tables: EXPECTED_TABLES, migrations: journal.entries.length });
    });
  });
});

describe('connections to Postgres', () => {
  it('never run the start-up query whose failure would end the process (porsager/postgres#1192)', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    await withEmptyDatabase(async (url) => {
      const target = new URL(url);
      // Cuts any connection at postgres.js's start-up array-types query, the way an outage can land then.
      const cutter = await startTcpProxy(
        { host: target.hostname, port: Number(target.port || 5432) },
        { cutOnClientChunk: (chunk) => chunk.includes('typarray') },
      );
      target.host = cutter.address;
      try {
        const database = await openDatabase({ databaseUrl: target.toString(), dataDir: scratch });
        try {
          const organization = await createOrganization(database.db, { name: 'Cut Connection Health' });
          expect(organization.id).toMatch(/^org_/);
        } finally {
          await database.close();
        }
      } finally {
        await cutter.close();
        process.off('unhandledRejection', record);
      }
      expect(cutter.cutConnections()).toBe(0);
      expect(unhandled).toEqual([]);
    });
  });
});

describe('statements', () => {
  it('each run under a time limit, and one over it counts as the database being unavailable (503), not as a wrong query', async () => {
    await withEmptyDatabase(async (url) => {
      const database = await openDatabase({ databaseUrl: url, dataDir: scratch });
      try {
        const [shown] = (await database.db.execute(sql`show statement_timeout`)) as unknown as { statement_timeout: string }[];
        expect(shown!.statement_timeout).toBe(`${STATEMENT_TIMEOUT_MS / 1000}s`);
        const overLimit = await database.db
          .transaction(async (tx) => {
            await tx.execute(sql`set local statement_timeout = 50`);
            await tx.execute(sql`select pg_sleep(1)`);
          })
          .then(
            () => null,
            (error: unknown) => error,
          );
        expect(overLimit).toBeTruthy();
        expect(isDatabaseUnavailable(overLimit)).toBe(true);
      } finally {
        await database.close();
      }
    });
  });
});

describe('prepared statements', () => {
  it('are parsed once per connection and then only run: query-builder and raw statements, in a transaction and outside', async () => {
    await withEmptyDatabase(async (url) => {
      const database = await openDatabase({ databaseUrl: url, dataDir: scratch });
      const preparedHere = async (runner: Pick<typeof database.db, 'execute'>) =>
        (await runner.execute(
          sql`select statement, (generic_plans + custom_plans)::int as runs from pg_prepared_statements where statement like '%organizations%' and statement not like '%pg_prepared_statements%'`,
        )) as unknown as { statement: string; runs: number }[];
      try {
        // One statement at a time: postgres.js keeps using the one connection it opened, whose prepared statements these are.
        for (const id of ['org_a', 'org_b', 'org_c']) {
          await database.db.select().from(schema.organizations).where(eq(schema.organizations.id, id));
        }
        const outside = await preparedHere(database.db);
        expect(outside).toHaveLength(1);
        expect(outside[0]).toMatchObject({ statement: expect.stringContaining('from "organizations" where "organizations"."id" = $1'), runs: 3 });

        const inside = await database.db.transaction(async (tx) => {
          for (const name of ['a', 'b']) await tx.execute(sql`select count(*) from organizations where name = ${name}`);
          return preparedHere(tx);
        });
        expect(inside.find((row) => row.statement.includes('where name = $1'))).toMatchObject({ runs: 2 });
      } finally {
        await database.close();
      }
    });
  });
});

describe('embedded PGlite', () => {
  it('runs the same migrations and the same queries, and keeps data across restarts', async () => {
    const dataDir = join(scratch, 'pglite-data');
    const first = await openDatabase({ dataDir });
    expect(first.kind).toBe('pglite');
    const organization = await createOrganization(first.db, { name: 'PGlite Health' });
    const issued = await issueApiKey(first.db, organization.id);
    await first.close();

    const second = await openDatabase({ dataDir });
    try {
      expect(await lookUpApiKey(second.db, issued.key)).toEqual({ status: 'active', organizationId: organization.id, apiKeyId: issued.id });
      expect(await revokeApiKey(second.db, issued.key)).toBe(true);
      expect(await lookUpApiKey(second.db, issued.key)).toEqual({ status: 'revoked' });
    } finally {
      await second.close();
    }
  });

  it('refuses a second process on the same directory instead of corrupting it', async () => {
    const dataDir = join(scratch, 'pglite-locked');
    const holder = await openDatabase({ dataDir });
    try {
      // A live process other than ours holds the lock: simulate it with our parent's pid.
      writeFileSync(join(dataDir, 'pglite.lock'), String(process.ppid));
      await expect(openDatabase({ dataDir })).rejects.toThrow(DatabaseInUseError);
      await expect(openDatabase({ dataDir })).rejects.toThrow(/in use by process \d+.*DATABASE_URL/);
    } finally {
      await holder.close();
    }
  });
});
