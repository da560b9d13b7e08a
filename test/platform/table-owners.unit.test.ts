import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { EXPIRED_ROWS_PURGER, SQL_INFRASTRUCTURE, TABLE_OWNERS } from '../../drizzle/owners';
import * as schema from '../../drizzle/schema';

/**
 * Every table has one owning module that writes it (drizzle/owners.ts), and SQL lives only in those
 * modules: a file elsewhere that names a table or writes a `sql` template fails here, naming the
 * file, so a route or an activity calls the owner instead. An owner may read other tables (a join);
 * only a table's owner inserts, updates or deletes its rows.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tables = Object.entries(schema)
  .filter(([, value]) => is(value, PgTable))
  .map(([name]) => name);
const owners = new Set<string>([...Object.values(TABLE_OWNERS), EXPIRED_ROWS_PURGER.module]);

/** Source files of the product (not its tests, benchmarks, the schema or its migrations). */
function sourceFiles(folder = root): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    const rel = relative(root, path);
    if (name.startsWith('.') || ['node_modules', 'test', 'bench', 'drizzle'].includes(rel)) return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') && folder !== root ? [rel] : [];
  });
}

interface SqlUse {
  /** Tables named as values (imported from the schema). */
  tables: Set<string>;
  /** Tables this file inserts, updates or deletes (which of the three), by the query builder or in a `sql` template. */
  writes: Map<string, Set<string>>;
  sqlTemplates: number;
}

function sqlUse(file: string): SqlUse {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const tableNames = new Map<string, string>();
  let sqlTag: string | null = null;
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || statement.importClause?.isTypeOnly) continue;
    const from = (statement.moduleSpecifier as ts.StringLiteral).text;
    const named = statement.importClause?.namedBindings;
    if (!named || !ts.isNamedImports(named)) continue;
    for (const element of named.elements) {
      if (element.isTypeOnly) continue;
      const imported = (element.propertyName ?? element.name).text;
      if (from.endsWith('drizzle/schema') && tables.includes(imported)) tableNames.set(element.name.text, imported);
      if (from === 'drizzle-orm' && imported === 'sql') sqlTag = element.name.text;
    }
  }
  const use: SqlUse = { tables: new Set(tableNames.values()), writes: new Map(), sqlTemplates: 0 };
  const write = (table: string, kind: string) => use.writes.set(table, new Set([...(use.writes.get(table) ?? []), kind]));
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const [argument] = node.arguments;
      if (['insert', 'update', 'delete'].includes(method) && argument && ts.isIdentifier(argument) && tableNames.has(argument.text)) {
        write(tableNames.get(argument.text)!, method);
      }
    }
    if (ts.isTaggedTemplateExpression(node) && ts.isIdentifier(node.tag) && node.tag.text === sqlTag) {
      use.sqlTemplates += 1;
      if (ts.isTemplateExpression(node.template)) {
        let before = node.template.head.text;
        for (const span of node.template.templateSpans) {
          const kind = /\b(insert|update|delete)(?:\s+into|\s+from)?\s*$/i.exec(before)?.[1]?.toLowerCase();
          if (kind && ts.isIdentifier(span.expression) && tableNames.has(span.expression.text)) write(tableNames.get(span.expression.text)!, kind);
          before = span.literal.text;
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return use;
}

const uses = new Map(sourceFiles().map((file) => [file, sqlUse(file)]));

describe('each table has one owning module, and SQL lives only there', () => {
  it('names an owner for every table, and each owner of a table in use exists', () => {
    expect(Object.keys(TABLE_OWNERS).sort()).toEqual([...tables].sort());
    const inUse = new Set([...uses.values()].flatMap((use) => [...use.tables]));
    for (const [table, owner] of Object.entries(TABLE_OWNERS)) if (inUse.has(table)) expect(uses.has(owner), `${table}: ${owner}`).toBe(true);
    for (const module of [EXPIRED_ROWS_PURGER.module, ...SQL_INFRASTRUCTURE]) expect(uses.has(module), module).toBe(true);
  });

  it('finds SQL only in owning modules', () => {
    const outside = [...uses]
      .filter(([file, use]) => !owners.has(file) && !SQL_INFRASTRUCTURE.includes(file) && (use.tables.size > 0 || use.sqlTemplates > 0))
      .map(([file, use]) => `${file}: ${[...use.tables].join(', ') || 'a sql template'}`);
    expect(outside).toEqual([]);
  });

  it('lets only its owner write a table (and the retention activity delete what expired)', () => {
    const purged = new Set<string>(EXPIRED_ROWS_PURGER.tables);
    const foreign = [...uses].flatMap(([file, use]) =>
      [...use.writes]
        .filter(([table]) => TABLE_OWNERS[table as keyof typeof TABLE_OWNERS] !== file)
        .filter(([table, kinds]) => !(file === EXPIRED_ROWS_PURGER.module && purged.has(table) && [...kinds].every((kind) => kind === 'delete')))
        .map(([table, kinds]) => `${file}: ${[...kinds].join(', ')} ${table}`),
    );
    expect(foreign).toEqual([]);
  });

  it('sees a write outside the owner (the check itself can fail)', () => {
    const probe = sqlUse('webhooks/delivery-records.ts');
    expect(probe.writes).toEqual(
      new Map([
        ['deliveries', new Set(['insert', 'update', 'delete'])],
        ['deliveryAttempts', new Set(['insert', 'update', 'delete'])],
        ['stagedEnvelopes', new Set(['insert', 'delete'])],
      ]),
    );
  });
});
