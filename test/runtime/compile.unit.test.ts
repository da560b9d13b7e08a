import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-compile-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const COMPILE_MODULE = new URL('../../runtime/compile.mjs', import.meta.url).href;

/** What bin/start.mjs does, in a node of its own without tsx: compile `entry`, map stack traces, run it. */
function compileAndRun(entry: string, buildDir: string): string {
  const launcher = `
    import { dirname } from 'node:path';
    import { pathToFileURL } from 'node:url';
    import { compile, mapStackTraces } from ${JSON.stringify(COMPILE_MODULE)};
    const entry = await compile(process.argv[1], process.argv[2]);
    mapStackTraces(dirname(entry));
    await import(pathToFileURL(entry).href);`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', launcher, entry, buildDir], { encoding: 'utf8' });
}

describe('compiling an entry point before node runs it (npm start)', () => {
  it('keeps each module its own address and names the TypeScript line in a stack trace', () => {
    const sources = join(scratch, 'sources');
    const buildDir = join(scratch, 'build');
    mkdirSync(join(sources, 'lib'), { recursive: true });
    writeFileSync(
      join(sources, 'lib', 'fail.ts'),
      [
        'export const address: string = import.meta.url;',
        '',
        'export function fail(reason: string): never {',
        '  throw new Error(reason);',
        '}',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(sources, 'main.ts'),
      [
        "import { address, fail } from './lib/fail';",
        'let stack: string | undefined;',
        'try {',
        "  fail('from TypeScript');",
        '} catch (error) {',
        '  stack = (error as Error).stack;',
        '}',
        'console.log(JSON.stringify({ main: import.meta.url, lib: address, stack }));',
        '',
      ].join('\n'),
    );

    const first = JSON.parse(compileAndRun(join(sources, 'main.ts'), buildDir));
    expect(first.main).toBe(pathToFileURL(join(sources, 'main.ts')).href);
    expect(first.lib).toBe(pathToFileURL(join(sources, 'lib', 'fail.ts')).href);
    expect(first.stack).toMatch(/^Error: from TypeScript\n/);
    expect(first.stack).toContain(`at fail (${join(sources, 'lib', 'fail.ts')}:4:`);
    expect(first.stack).toContain(`${join(sources, 'main.ts')}:4:`);
    const [build] = readdirSync(buildDir);

    // The same sources again: the same build. Changed sources: a new one, the old one removed.
    compileAndRun(join(sources, 'main.ts'), buildDir);
    expect(readdirSync(buildDir)).toEqual([build]);
    writeFileSync(join(sources, 'main.ts'), "console.log(JSON.stringify({ main: 'changed' }));\n");
    expect(JSON.parse(compileAndRun(join(sources, 'main.ts'), buildDir))).toEqual({ main: 'changed' });
    expect(readdirSync(buildDir)).toHaveLength(1);
    expect(readdirSync(buildDir)).not.toContain(build);
  });
});
