import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

// Migrations come from the schema (CONVENTIONS.md, Migrations): `npm run db:generate` diffs
// drizzle/schema.ts against the newest snapshot in drizzle/meta. Committed migrations that the
// snapshots do not know about (hand-written SQL) make it recreate existing tables.

const DRIZZLE = fileURLToPath(new URL('../../drizzle/', import.meta.url));
// The CLI npm runs for `db:generate` (the package exports only its API modules).
const DRIZZLE_KIT = join(dirname(createRequire(import.meta.url).resolve('drizzle-kit')), 'bin.cjs');

interface Journal {
  entries: { idx: number; tag: string }[];
}

describe('migrations', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'migrations-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('the newest committed migration has its drizzle-kit snapshot', () => {
    const journal = JSON.parse(readFileSync(join(DRIZZLE, 'meta', '_journal.json'), 'utf8')) as Journal;
    const newest = journal.entries.at(-1)!;
    expect(existsSync(join(DRIZZLE, `${newest.tag}.sql`))).toBe(true);
    expect(existsSync(join(DRIZZLE, 'meta', `${String(newest.idx).padStart(4, '0')}_snapshot.json`))).toBe(true);
  });

  it('db:generate on the committed schema writes no migration', async () => {
    // drizzle-kit writes into its `out` folder, so it runs on a copy of drizzle/meta; it resolves
    // `out` and `schema` against its working directory, hence the relative paths.
    cpSync(join(DRIZZLE, 'meta'), join(scratch, 'drizzle', 'meta'), { recursive: true });
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [DRIZZLE_KIT, 'generate', '--dialect', 'postgresql', '--schema', relative(scratch, join(DRIZZLE, 'schema.ts')), '--out', './drizzle'],
      { cwd: scratch, timeout: 30_000 },
    );
    const written = readdirSync(join(scratch, 'drizzle')).filter((name) => name.endsWith('.sql'));
    const sql = written.map((name) => readFileSync(join(scratch, 'drizzle', name), 'utf8')).join('\n');
    expect(sql, 'drizzle/schema.ts differs from the newest snapshot: run npm run db:generate -- --name <topic>').toBe('');
    // A rename makes drizzle-kit ask interactively; without a terminal it stops there.
    expect(stdout, `drizzle-kit did not finish: ${stderr.trim().split('\n')[0]}`).toContain('No schema changes');
  });
});
