import { readFileSync } from 'node:fs';
import { getTableName, isTable } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import * as schema from '../../drizzle/schema';
import { RETENTION_TARGETS, TABLE_RETENTION } from '../../platform/retention';

const tables = Object.values(schema)
  .filter((value) => isTable(value))
  .map((table) => getTableName(table))
  .sort();

const privacyPage = readFileSync(new URL('../../docs/api/privacy.md', import.meta.url), 'utf8');

describe('every inbound byte has a retention limit', () => {
  it('names every table of the schema, with the target that purges it or why it holds no inbound content', () => {
    expect(Object.keys(TABLE_RETENTION).sort()).toEqual(tables);
  });

  it('purges every target a table names, and every target purges some table', () => {
    const named = new Set(Object.values(TABLE_RETENTION).flatMap((retention) => ('target' in retention ? [retention.target] : [])));
    for (const target of named) expect(RETENTION_TARGETS).toContain(target);
    for (const target of RETENTION_TARGETS) expect(named.has(target), target).toBe(true);
  });

  it('lists every table in the retention table of docs/api/privacy.md', () => {
    const rows = privacyPage.split('\n').filter((line) => line.startsWith('|'));
    for (const table of tables)
      expect(
        rows.some((row) => row.includes(`\`${table}\``)),
        table,
      ).toBe(true);
  });
});
