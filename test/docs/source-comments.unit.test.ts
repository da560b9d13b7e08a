import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Comments cite files by path (`the OpenAPI document (api/http/openapi.ts)`): a file moved or renamed
 * leaves the comment pointing nowhere. Every path a comment in the source cites must exist, from the
 * repository root or from the commenting file's folder.
 */

const root = resolve(import.meta.dirname, '../..');
const SKIPPED = new Set(['node_modules', '.git', '.data', '.tools', 'test/artifacts']);
/** `api/http/openapi.ts`, `docs/benchmarks.md`: a folder, a name and an extension of a file we keep. */
const CITED_PATH = /(?<![\w./@:-])((?:[a-z][\w-]*\/)+[\w.-]+\.(?:ts|md|json|sql|go|mjs))\b/g;
const COMMENT = /^\s*(\/\/|\/\*|\*)|\s\/\/\s/;

/**
 * Files cited by work that landed before them, each with the work that writes it. Remove an entry once
 * its file exists; a cited file missing from this list is drift.
 */
const CITED_BEFORE_WRITTEN = new Map([['docs/api/fhir-subscriptions.md', 'issue 34 item 6, FHIR Subscriptions: its page']]);

function sourceFiles(folder = root): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (SKIPPED.has(relative(root, path))) return [];
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(root, path)] : [];
  });
}

/** Paths cited in the comments of `text` (the file `file`) that exist neither from the root nor beside it. */
function staleCitations(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, index) =>
    COMMENT.test(line)
      ? [...line.matchAll(CITED_PATH)]
          .map((match) => match[1]!)
          .filter((path) => !CITED_BEFORE_WRITTEN.has(path) && !existsSync(join(root, path)) && !existsSync(join(root, dirname(file), path)))
          .map((path) => `${file}:${index + 1}: ${path}`)
      : [],
  );
}

describe('comments in the source', () => {
  it('cite only files that exist', () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((file) => staleCitations(file, readFileSync(join(root, file), 'utf8')))).toEqual([]);
  });

  it('would report a cited file that does not exist', () => {
    const probe = [
      '/** One zod definition produces the OpenAPI document (api/openapi.ts). */',
      "import { route } from './route'; // see api/http/route.ts and ./contract.ts",
      '// A URL such as https://example.org/fhir/base.json is no path; CONVENTIONS.md, Webhooks; (test/support/nowhere.ts)',
      "const path = 'not/a/comment.ts';",
    ].join('\n');
    expect(staleCitations('api/probe.ts', probe)).toEqual(['api/probe.ts:1: api/openapi.ts', 'api/probe.ts:3: test/support/nowhere.ts']);
  });
});
