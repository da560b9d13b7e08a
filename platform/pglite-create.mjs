// Run by platform/pglite-directory.ts as a child process to create a new PGlite database in argv[2],
// with the server settings in argv[3] (JSON, platform/pglite-settings.ts). Plain JavaScript, run by
// node without tsx: tsx's loader thread and its esbuild process would add about 70 MiB to the largest
// moment of a first start (docs/benchmarks.md, Memory of npm start).
//
// PGlite runs initdb in a second Postgres instance of its own, restoring that instance's memory from a
// copy before each step, beside the instance that keeps the database: about 470 MiB at once. Created
// straight into a directory, PGlite then also packs the new files into a tar in memory and unpacks them
// into the directory while the initdb instance is not yet collected (about 680 MiB). So the database is
// made in memory first, the initdb instance collected, and only then is it written to the directory,
// through PGlite's own dump and load of a data directory.
import { setImmediate } from 'node:timers/promises';
import { MemoryFS, PGlite } from '@electric-sql/pglite';

const [directory, settings] = process.argv.slice(2);
const options = { startParams: [...PGlite.defaultStartParams, ...JSON.parse(settings)] };

/** A full collection once the turn that let go of PGlite's initdb instance has ended (run with --expose-gc). */
async function collect() {
  await setImmediate();
  globalThis.gc();
}

const inMemory = new PGlite({ ...options, fs: new MemoryFS() });
await inMemory.waitReady;
await collect();
const dataDir = await inMemory.dumpDataDir('none');
await inMemory.close();
await collect();
const onDisk = new PGlite(directory, { ...options, loadDataDir: dataDir });
await onDisk.waitReady;
await onDisk.close();
