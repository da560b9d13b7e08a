// `npm start` (package.json): bin/start.ts compiled to JavaScript by esbuild into .build/start/, then
// run by node itself (runtime/compile.mjs), without tsx: the service idles about 55 MiB smaller
// (docs/benchmarks.md, Memory of npm start). The other entry points, the tests and the worker
// threads that load TypeScript keep tsx. The script also sets two of glibc's malloc variables (read as
// the process starts, so they can only be set there): MALLOC_ARENA_MAX=2, since every thread that
// allocates (the Temporal core's, the workflow thread, libuv's) otherwise gets a C heap arena of its
// own, and each keeps what it freed; and MALLOC_TRIM_THRESHOLD_=131072, since glibc otherwise raises
// the free memory it keeps at a heap's top (up to 64 MiB) each time a large block is freed (setting it
// also keeps blocks of 128 KiB and more in mappings of their own, given back when freed; figures:
// docs/operations/configuration.md, MALLOC_ARENA_MAX and MALLOC_TRIM_THRESHOLD_).
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compile, mapStackTraces } from '../runtime/compile.mjs';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

let entry;
try {
  entry = await compile(join(PROJECT_ROOT, 'bin', 'start.ts'), join(PROJECT_ROOT, '.build', 'start'));
} catch {
  // esbuild has printed what failed to compile.
  process.exit(1);
}
mapStackTraces(dirname(entry));
await import(pathToFileURL(entry).href);
