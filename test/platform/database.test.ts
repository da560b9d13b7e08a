import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import * as schema from '../../drizzle/schema';
import { DatabaseInUseError, openDatabase } from '../../platform/database';
import { createOrganization, issueApiKey, lookUpApiKey, revokeApiKey } from '../../platform/organizations';
import { createScratchDatabase } from '../support/scratch-database';

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

/**
 * A TCP proxy to Postgres that cuts any connection on which the client sends postgres.js's start-up
 * array-types query, the way an outage can land at that moment.
 */
async function startTypeQueryCutter(url: string) {
  const target = new URL(url);
  const upstreamPort = Number(target.port || 5432);
  const upstreamHost = target.hostname;
  const sockets = new Set<Socket>();
  let cuts = 0;
  const server = createServer((client) => {
    const upstream = connect(upstreamPort, upstreamHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('data', (chunk) => {
      if (chunk.includes('typarray')) {
        cuts += 1;
        client.destroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target.hostname = '127.0.0.1';
  target.port = String((server.address() as AddressInfo).port);
  return {
    url: target.toString(),
    cuts: () => cuts,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('connections to Postgres', () => {
  it('never run the start-up query whose failure would end the process (porsager/postgres#1192)', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    await withEmptyDatabase(async (url) => {
      const cutter = await startTypeQueryCutter(url);
      try {
        const database = await openDatabase({ databaseUrl: cutter.url, dataDir: scratch });
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
      expect(cutter.cuts()).toBe(0);
      expect(unhandled).toEqual([]);
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
