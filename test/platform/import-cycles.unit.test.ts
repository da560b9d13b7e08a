import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { LAYERS } from '../../layers';

/**
 * No import circles among the source files (type-only imports included: a circle of types is still
 * two modules that cannot be understood one without the other). The layering lint refuses circles
 * between folders; this finds them inside a folder too, as Tarjan's strongly connected components.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function sourceFiles(): string[] {
  return LAYERS.flat().flatMap((folder) =>
    readdirSync(join(root, folder), { recursive: true })
      .map(String)
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && !name.split('/').includes('node_modules'))
      .map((name) => join(folder, name)),
  );
}

/** The source files a file imports (relative specifiers only; packages are not ours). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .flatMap((specifier) => {
      const base = resolve(root, dirname(file), specifier);
      const found = [base, `${base}.ts`, join(base, 'index.ts')].find((path) => path.endsWith('.ts') && existsSync(path));
      return found ? [relative(root, found)] : [];
    });
}

/** Every circle: the strongly connected components with more than one file, or a file that imports itself. */
function importCircles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}

describe('import circles', () => {
  it('finds none among the source files', () => {
    const graph = new Map(sourceFiles().map((file) => [file, importsOf(file)]));
    expect(graph.size).toBeGreaterThan(100);
    expect(importCircles(graph)).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(importCircles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
