import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGLITE_SETTINGS } from './pglite-settings';

/**
 * The embedded database's directory, its lock and its creation. Node built-ins only (and the settings,
 * which import nothing): `npm start` creates a new database before it loads the rest of the service
 * (bin/start.ts), so that creating it, the largest moment of a first start, has nothing else beside it.
 */

/** Where the embedded database of `dataDir` lives. */
export function pgliteDirectory(dataDir: string): string {
  return join(dataDir, 'pglite');
}

export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError';
}

/**
 * PGlite is single-process: two processes writing one directory corrupt it. A pid file makes the
 * second one stop with an explanation instead; a file left by a dead process is taken over.
 * Returns the release.
 */
export function lockDirectory(directory: string): () => void {
  const lockFile = `${directory}.lock`;
  for (;;) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return () => rmSync(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(lockFile, 'utf8'));
      if (holder && holder !== process.pid && isAlive(holder)) {
        throw new DatabaseInUseError(
          `The embedded database in ${directory} is in use by process ${holder} (probably npm start). ` +
            'PGlite allows one process at a time: stop that process first, or set DATABASE_URL so every process shares Postgres.',
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export const hasPgliteDatabase = (directory: string) => existsSync(join(directory, 'PG_VERSION'));

/** Creates the embedded database of `dataDir` unless it exists; holds the directory's lock meanwhile. */
export async function ensurePgliteDatabase(dataDir: string): Promise<void> {
  const directory = pgliteDirectory(dataDir);
  mkdirSync(directory, { recursive: true });
  const release = lockDirectory(directory);
  try {
    if (!hasPgliteDatabase(directory)) await createPgliteDatabase(directory);
  } finally {
    release();
  }
}

/**
 * A new PGlite database, created in a child process (platform/pglite-create.mjs) so that what creating
 * it holds (about 470 MiB) is not ours to keep. The child is plain node: it compiles Postgres's
 * WebAssembly with V8's baseline compiler only and has a small young generation, since creating is
 * one pass of initdb, for which the optimizing compiler's own memory (about 150 MiB) and time buy
 * nothing; and it may collect garbage when it chooses (docs/benchmarks.md).
 */
export async function createPgliteDatabase(directory: string): Promise<void> {
  const child = fork(fileURLToPath(new URL('./pglite-create.mjs', import.meta.url)), [directory, JSON.stringify(PGLITE_SETTINGS)], {
    execArgv: ['--liftoff-only', '--max-semi-space-size=1', '--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`Creating the embedded database in ${directory} failed (exit code ${code}); its output is above.`);
}
