// An entry point compiled to JavaScript by esbuild before node runs it, for `npm start` (bin/start.mjs).
// Run through tsx (`node --import tsx`), the compiler stays in the process for its whole life: tsx's
// module hooks on a loader thread of their own (a second V8 heap) and esbuild's process. Plain
// JavaScript, since it runs before anything is compiled.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, stop } from 'esbuild';

// Each module keeps its own address: the sources find what lies beside them (the migrations, the
// fixtures, package.json, worker threads' scripts) from import.meta.url, which in a bundle would
// otherwise be the bundle's.
const keepModuleAddresses = {
  name: 'keep-module-addresses',
  setup(compiler) {
    compiler.onLoad({ filter: /\.ts$/ }, async ({ path }) => ({
      contents: (await readFile(path, 'utf8'))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(path))),
      loader: 'ts',
    }));
  },
};

/**
 * `entry` (a TypeScript file) and the project's modules it imports compiled into one bundle under
 * `buildDir`, the dependencies left to node_modules as they are, so `buildDir` must be inside the
 * project: the compiled modules find the dependencies from there as the sources do. Split where a
 * module is imported lazily (`await import`), so it is still loaded only then. Each distinct output
 * is written once, in a folder named by its hash; older ones are removed. Resolves with the compiled
 * entry point's path.
 */
export async function compile(entry, buildDir) {
  // esbuild writes source maps relative to this folder; each build is moved to a sibling of it, at the same depth.
  const compiledInto = join(buildDir, 'compiled');
  let outputFiles;
  try {
    ({ outputFiles } = await build({
      entryPoints: [entry],
      bundle: true,
      splitting: true,
      packages: 'external',
      format: 'esm',
      // ES modules wherever the build lies, whatever a package.json above it says.
      outExtension: { '.js': '.mjs' },
      platform: 'node',
      target: 'node20',
      sourcemap: 'linked',
      // The sources are on disk; a stack trace needs only the lines.
      sourcesContent: false,
      outdir: compiledInto,
      write: false,
      plugins: [keepModuleAddresses],
      logLevel: 'error',
    }));
  } finally {
    // esbuild answers from a process of its own, which would otherwise stay beside the service.
    await stop();
  }
  const hash = createHash('sha256');
  for (const file of outputFiles) hash.update(relative(compiledInto, file.path)).update('\0').update(file.contents);
  const name = hash.digest('hex').slice(0, 16);
  const directory = join(buildDir, name);
  if (!existsSync(directory)) {
    // Written aside and renamed, so another start on the same sources never reads half a build.
    const partial = `${directory}.${process.pid}.partial`;
    for (const file of outputFiles) {
      const path = join(partial, relative(compiledInto, file.path));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, file.contents);
    }
    try {
      renameSync(partial, directory);
    } catch (error) {
      // Another start renamed the same build first.
      if (!existsSync(directory)) throw error;
      rmSync(partial, { recursive: true, force: true });
    }
  }
  for (const old of readdirSync(buildDir)) {
    if (old !== name && !old.endsWith('.partial')) rmSync(join(buildDir, old), { recursive: true, force: true });
  }
  return join(directory, `${basename(entry, extname(entry))}.mjs`);
}

/**
 * Stack traces name the TypeScript line: a frame in the compiled modules under `directory` is mapped
 * through the build's source map, read the first time a stack needs it. Node's own source maps
 * (--enable-source-maps) would read and keep the map of every module loaded, the dependencies' too,
 * and its SourceMap keeps each of the 115,000 segments of ours as an array: 25 MiB for the process's
 * life, against 2 MiB of typed arrays here (docs/benchmarks.md, Memory of npm start).
 */
export function mapStackTraces(directory) {
  const buildUrl = `${pathToFileURL(directory).href}/`;
  const maps = new Map();
  const sourceMapOf = (fileUrl) => {
    if (!maps.has(fileUrl)) {
      let map = null;
      try {
        map = parseSourceMap(JSON.parse(readFileSync(new URL(`${fileUrl}.map`), 'utf8')), fileUrl);
      } catch {
        // No map beside it: the frame stays as it is.
      }
      maps.set(fileUrl, map);
    }
    return maps.get(fileUrl);
  };
  const frameText = (site) => {
    const text = `${site}`;
    const fileUrl = site.getFileName();
    if (!fileUrl?.startsWith(buildUrl)) return text;
    const [line, column] = [site.getLineNumber(), site.getColumnNumber()];
    const origin = sourceMapOf(fileUrl)?.originOf(line, column);
    if (!origin) return text;
    return text.replace(`${fileUrl}:${line}:${column}`, `${origin.path}:${origin.line}:${origin.column}`);
  };
  Error.prepareStackTrace = (error, sites) => {
    let header;
    try {
      header = `${error}`;
    } catch {
      header = Object.prototype.toString.call(error);
    }
    return `${header}${sites.map((site) => `\n    at ${frameText(site)}`).join('')}`;
  };
}

const BASE64_DIGITS = new Int8Array(128).fill(-1);
for (const [value, digit] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) {
  BASE64_DIGITS[digit.charCodeAt(0)] = value;
}

/**
 * A source map (version 3) as typed arrays, one entry per segment that names a source, and the
 * segment a generated position falls in (lines and columns counted from 1, as in a stack trace).
 */
function parseSourceMap({ mappings, sources }, mapUrl) {
  const paths = sources.map((source) => fileURLToPath(new URL(source, mapUrl)));
  const lineStarts = [0];
  const [columns, sourceIndexes, originLines, originColumns] = [[], [], [], []];
  const fields = [];
  let [column, source, originLine, originColumn] = [0, 0, 0, 0];
  for (let at = 0; at < mappings.length; ) {
    const char = mappings.charCodeAt(at);
    if (char === 59 /* ; a new generated line */) {
      lineStarts.push(columns.length);
      column = 0;
      at += 1;
      continue;
    }
    if (char === 44 /* , */) {
      at += 1;
      continue;
    }
    // One segment: up to five base64 VLQ numbers, each relative to the one before it.
    fields.length = 0;
    while (at < mappings.length && mappings.charCodeAt(at) !== 44 && mappings.charCodeAt(at) !== 59) {
      let [value, shift, digit] = [0, 0, 0];
      do {
        digit = BASE64_DIGITS[mappings.charCodeAt(at)];
        at += 1;
        value += (digit & 31) * 2 ** shift;
        shift += 5;
      } while (digit & 32);
      fields.push(value % 2 ? -Math.floor(value / 2) : value / 2);
    }
    column += fields[0];
    if (fields.length < 4) continue;
    source += fields[1];
    originLine += fields[2];
    originColumn += fields[3];
    columns.push(column);
    sourceIndexes.push(source);
    originLines.push(originLine);
    originColumns.push(originColumn);
  }
  lineStarts.push(columns.length);
  const table = {
    lineStarts: Int32Array.from(lineStarts),
    columns: Int32Array.from(columns),
    sourceIndexes: Int32Array.from(sourceIndexes),
    originLines: Int32Array.from(originLines),
    originColumns: Int32Array.from(originColumns),
  };
  return {
    originOf(line, column) {
      if (line < 1 || line >= table.lineStarts.length) return null;
      const [first, end] = [table.lineStarts[line - 1], table.lineStarts[line]];
      if (first === end) return null;
      // The last segment starting at or before the column; the line's first when the column is before them all.
      let segment = first;
      while (segment + 1 < end && table.columns[segment + 1] <= column - 1) segment += 1;
      return {
        path: paths[table.sourceIndexes[segment]],
        line: table.originLines[segment] + 1,
        column: table.originColumns[segment] + 1,
      };
    },
  };
}
