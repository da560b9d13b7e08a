import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt, { type Token } from 'markdown-it';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The README, CONVENTIONS.md and docs/ are what a newcomer reads: every relative link and #anchor in
 * them must lead somewhere, every repository path they quote must exist, every name they quote as an
 * export of a file (`startProcess` (`runtime/process.ts`)) must be exported by it, and every difference from the spec's
 * decisions recorded in CONVENTIONS.md must be findable from docs/architecture/decisions.md (the spec
 * asks for them to be written down; the README links there). Parsed with markdown-it (links inside
 * tables, code spans and escapes are its business, not a regular expression's) and headings slugged
 * with github-slugger, the algorithm GitHub uses for its anchors.
 */

const root = resolve(import.meta.dirname, '../..');
const README_MAX_LINES = 200;

/** Extensions of the files the docs quote; `patient/Observation.rs` (a SMART scope) is no path. */
const FILE_EXTENSIONS = new Set(['ts', 'js', 'mjs', 'json', 'jsonl', 'ndjson', 'md', 'sql', 'yml', 'yaml', 'sh', 'go', 'mod', 'html']);

/** Quoted paths that a clone does not hold: made by a test run, git-ignored. */
const MADE_AT_RUN_TIME = new Set(['test/artifacts/']);

const markdown = new MarkdownIt();

interface Document {
  file: string;
  anchors: Set<string>;
  links: { href: string; line: number }[];
  quotedPaths: { path: string; line: number }[];
  quotedExports: { name: string; path: string; line: number }[];
}

function markdownFiles(): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name));
  return ['README.md', 'CONVENTIONS.md', ...docs.sort()];
}

function textOf(inline: Token | undefined): string {
  return (inline?.children ?? []).map((child) => (child.type === 'text' || child.type === 'code_inline' ? child.content : '')).join('');
}

/**
 * `api/webhooks/connections.ts` (a folder, a name and a known extension) or `workflows/retention/` (two
 * folders or more); not a placeholder, a URL path, a MIME type, a scope, or git-ignored state (`.tools/`).
 */
function looksLikeRepositoryPath(text: string): boolean {
  if (!/^[\w@-][\w@.-]*(\/[\w@.-]+)+\/?$/.test(text)) return false;
  if (text.endsWith('/')) return true;
  return FILE_EXTENSIONS.has(text.slice(text.lastIndexOf('.') + 1));
}

/** `startProcess`, `idSchema(prefix)`, `WorkflowGateway.startOnce`: a name, perhaps called, perhaps a member. */
const QUOTED_NAME = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?(?:\(.*\))?$/;
const SOURCE_FILE = /^[\w@.-]+(\/[\w@.-]+)+\.(ts|mjs|js)$/;
/** What joins a name to the file it claims to come from: `name` (`file`), `name` in `file`, `file` (`name`), `file`, `name`. */
const NAME_THEN_FILE = /^\s*(\(|\(in|\(see|in|from|of)\s*$/;
const FILE_THEN_NAME = /^\s*(\(|,)\s*$/;

/** Names quoted beside a source file, as that file's exports. */
function quotedExports(children: Token[]): { name: string; path: string }[] {
  const found: { name: string; path: string }[] = [];
  const code = children.flatMap((child, index) => (child.type === 'code_inline' ? [index] : []));
  for (const [at, index] of code.entries()) {
    const next = code[at + 1];
    if (next === undefined) continue;
    const between = textOf({ children: children.slice(index + 1, next) } as Token);
    const [first, second] = [children[index]!.content, children[next]!.content];
    if (QUOTED_NAME.test(first) && SOURCE_FILE.test(second) && NAME_THEN_FILE.test(between)) found.push({ name: first, path: second });
    if (SOURCE_FILE.test(first) && QUOTED_NAME.test(second) && FILE_THEN_NAME.test(between)) found.push({ name: second, path: first });
  }
  return found;
}

function parse(file: string, text: string): Document {
  const tokens = markdown.parse(text, {});
  const slugger = new GithubSlugger();
  const document: Document = { file, anchors: new Set(), links: [], quotedPaths: [], quotedExports: [] };
  tokens.forEach((token, index) => {
    if (token.type === 'heading_open') document.anchors.add(slugger.slug(textOf(tokens[index + 1])));
    if (token.type !== 'inline') return;
    const line = (token.map?.[0] ?? 0) + 1;
    for (const child of token.children ?? []) {
      const href = child.type === 'link_open' ? child.attrGet('href') : null;
      if (href !== null) document.links.push({ href: String(href), line });
      if (child.type === 'code_inline' && looksLikeRepositoryPath(child.content)) document.quotedPaths.push({ path: child.content, line });
    }
    document.quotedExports.push(...quotedExports(token.children ?? []).map((quoted) => ({ ...quoted, line })));
  });
  return document;
}

/** The names a module exports (its own declarations, `export { … }` and `export * from` re-exports), read with the TypeScript parser. */
function exportsOf(path: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(path) || !existsSync(join(root, path))) return names;
  seen.add(path);
  const source = ts.createSourceFile(path, readFileSync(join(root, path), 'utf8'), ts.ScriptTarget.Latest);
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      if (statement.exportClause && ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) names.add(element.name.text);
      } else if (statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier)) {
        const target = join(dirname(path), statement.moduleSpecifier.text);
        for (const candidate of [`${target}.ts`, join(target, 'index.ts')]) for (const name of exportsOf(candidate, seen)) names.add(name);
      }
      continue;
    }
    const exported = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) continue;
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) if (ts.isIdentifier(declaration.name)) names.add(declaration.name.text);
    } else if ('name' in statement && statement.name && ts.isIdentifier(statement.name as ts.Node)) {
      names.add((statement.name as ts.Identifier).text);
    }
  }
  return names;
}

/** Names quoted as a file's exports that the file does not export (or, for `Type.member`, whose member it never names). */
function staleExports(documents: Map<string, Document>): string[] {
  return [...documents.values()].flatMap((document) =>
    document.quotedExports
      .filter(({ name, path }) => {
        const [, exported, member] = QUOTED_NAME.exec(name)!;
        if (!exportsOf(path).has(exported!)) return true;
        return member !== undefined && !new RegExp(`\\b${member}\\b`).test(readFileSync(join(root, path), 'utf8'));
      })
      .map(({ name, path, line }) => `${document.file}:${line}: \`${name}\` is not exported by \`${path}\``),
  );
}

function anchorsOf(file: string, documents: Map<string, Document>): Set<string> {
  return (documents.get(file) ?? parse(file, readFileSync(join(root, file), 'utf8'))).anchors;
}

/** Relative links whose file does not exist, or whose #anchor is no heading of that file. */
function brokenLinks(documents: Map<string, Document>): string[] {
  const broken: string[] = [];
  for (const document of documents.values()) {
    for (const { href, line } of document.links) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // http:, https:, mailto:: outside the repository
      const [pathPart = '', anchor] = decodeURIComponent(href).split('#');
      const target = pathPart === '' ? document.file : relative(root, resolve(root, dirname(document.file), pathPart));
      const where = `${document.file}:${line} → ${href}`;
      if (target.startsWith('..') || (!documents.has(target) && !existsSync(join(root, target)))) broken.push(`${where}: no file ${target}`);
      else if (anchor === undefined) continue;
      else if (!target.endsWith('.md')) broken.push(`${where}: an anchor into a file that is not Markdown`);
      else if (!anchorsOf(target, documents).has(anchor)) broken.push(`${where}: ${target} has no heading #${anchor}`);
    }
  }
  return broken;
}

/** Quoted repository paths (`platform/config.ts`) that no longer exist. */
function stalePaths(documents: Map<string, Document>): string[] {
  return [...documents.values()].flatMap((document) =>
    document.quotedPaths
      .filter(({ path }) => !MADE_AT_RUN_TIME.has(path) && !existsSync(join(root, path)))
      .map(({ path, line }) => `${document.file}:${line}: \`${path}\``),
  );
}

/** The bold titles of the list items under heading `section` ("Cancel and replay are Temporal Updates, not bare signals"). */
function boldTitlesUnder(text: string, section: string): string[] {
  const tokens = markdown.parse(text, {});
  const slugger = new GithubSlugger();
  const titles: string[] = [];
  let inSection = false;
  tokens.forEach((token, index) => {
    if (token.type === 'heading_open') inSection = slugger.slug(textOf(tokens[index + 1])) === section;
    if (!inSection || token.type !== 'inline' || tokens[index - 2]?.type !== 'list_item_open') return;
    const children = token.children ?? [];
    const open = children.findIndex((child) => child.type === 'strong_open');
    const close = children.findIndex((child) => child.type === 'strong_close');
    const before = textOf({ children: children.slice(0, Math.max(open, 0)) } as Token);
    if (open < 0 || close < open || before.trim() !== '') return;
    titles.push(textOf({ children: children.slice(open + 1, close) } as Token).replace(/\.$/, ''));
  });
  return titles;
}

describe('the README and docs/', () => {
  const documents = new Map(markdownFiles().map((file) => [file, parse(file, readFileSync(join(root, file), 'utf8'))]));

  it(`keep the README under ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length - 1;
    expect(lines).toBeLessThan(README_MAX_LINES);
  });

  it('link only to files that exist and to headings those files have', () => {
    expect(brokenLinks(documents)).toEqual([]);
  });

  it('quote only repository paths that exist', () => {
    expect(stalePaths(documents)).toEqual([]);
  });

  it('quote as a file’s exports only names that file exports', () => {
    const quoted = [...documents.values()].flatMap((document) => document.quotedExports);
    expect(quoted.length).toBeGreaterThan(5);
    expect(staleExports(documents)).toEqual([]);
  });

  it("list every difference from the spec's decisions that CONVENTIONS.md records", () => {
    const recorded = boldTitlesUnder(readFileSync(join(root, 'CONVENTIONS.md'), 'utf8'), 'where-the-product-differs-from-these-conventions');
    const listed = boldTitlesUnder(
      readFileSync(join(root, 'docs/architecture/decisions.md'), 'utf8'),
      'where-the-product-differs-from-the-specs-decisions',
    );
    expect(recorded.length).toBeGreaterThan(0);
    expect(recorded.filter((title) => !listed.includes(title))).toEqual([]);
  });

  it('would report a missing file, a missing heading and a stale path', () => {
    const probe = [
      '# A page',
      '',
      'See [gone](nowhere.md), [a heading here](#a-page), [none here](#no-such-heading), [the README](../README.md#first-request),',
      '`api/nowhere/routes.ts`, `platform/config.ts`, `workflows/nowhere/`, the scope `patient/Observation.rs`, `text/plain`,',
      'the path `/fhir/R4/metadata` and `.tools/temporal-cli-1.5.1/`.',
    ].join('\n');
    const documents = new Map([['docs/probe.md', parse('docs/probe.md', probe)]]);
    expect(brokenLinks(documents)).toEqual([
      'docs/probe.md:3 → nowhere.md: no file docs/nowhere.md',
      'docs/probe.md:3 → #no-such-heading: docs/probe.md has no heading #no-such-heading',
    ]);
    expect(stalePaths(documents)).toEqual(['docs/probe.md:3: `api/nowhere/routes.ts`', 'docs/probe.md:3: `workflows/nowhere/`']);
  });

  it('would report a name its file does not export', () => {
    const probe = [
      'Every process starts with `startProcess` (`runtime/process.ts`), ids are checked with `idSchema(prefix)` in `platform/ids.ts`,',
      'work is accepted by `acceptWorkTwice` (`api/http/accepted-work.ts`), `platform/ids.ts` (`madeUpName`) answers nothing,',
      'and `WorkflowGateway.startTwice` from `platform/workflow-gateway.ts` is no method.',
    ].join('\n');
    const documents = new Map([['docs/probe.md', parse('docs/probe.md', probe)]]);
    expect(documents.get('docs/probe.md')!.quotedExports.map(({ name }) => name)).toEqual([
      'startProcess',
      'idSchema(prefix)',
      'acceptWorkTwice',
      'madeUpName',
      'WorkflowGateway.startTwice',
    ]);
    expect(staleExports(documents)).toEqual([
      'docs/probe.md:1: `acceptWorkTwice` is not exported by `api/http/accepted-work.ts`',
      'docs/probe.md:1: `madeUpName` is not exported by `platform/ids.ts`',
      'docs/probe.md:1: `WorkflowGateway.startTwice` is not exported by `platform/workflow-gateway.ts`',
    ]);
  });
});
