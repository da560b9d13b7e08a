import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The workflow bundle a worker runs, built by webpack once and kept under DATA_DIR, named by a hash
 * of the sources it may hold, so a later start on the same sources skips webpack (seconds of CPU,
 * and a child of about 250 MiB beside the service). Node built-ins only: `npm start` builds it
 * before it loads the rest of the service (bin/start.ts).
 */

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const BUNDLER_PATH = fileURLToPath(new URL('./bundle-workflows.ts', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Folders no workflow imports from (and the dependencies, whose versions package-lock.json pins). */
const NOT_BUNDLED = new Set(['node_modules', 'test', 'bench', 'docs']);

/**
 * The hash of what the bundle is made of: every TypeScript source of the project (the workflows
 * and whatever they import) and package-lock.json (the SDK's and webpack's versions).
 */
export function workflowSourcesHash(): string {
  const hash = createHash('sha256');
  const visit = (directory: string) => {
    for (const entry of readdirSync(directory, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith('.') || NOT_BUNDLED.has(entry.name)) continue;
      const path = join(directory, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith('.ts'))
        hash
          .update(`${relative(PROJECT_ROOT, path)}\0`)
          .update(readFileSync(path))
          .update('\0');
    }
  };
  visit(PROJECT_ROOT);
  hash.update(readFileSync(join(PROJECT_ROOT, 'package-lock.json')));
  return hash.digest('hex').slice(0, 32);
}

/** The bundle for the current sources: the one kept in `dataDir`, else built now (and bundles of older sources removed). */
export async function workflowBundle(dataDir: string): Promise<{ codePath: string }> {
  const directory = join(dataDir, 'workflow-bundle');
  const codePath = join(directory, `${workflowSourcesHash()}.js`);
  if (existsSync(codePath)) return { codePath };
  const code = await bundleWorkflowsApart();
  mkdirSync(directory, { recursive: true });
  for (const old of readdirSync(directory).filter((name) => name.endsWith('.js'))) rmSync(join(directory, old), { force: true });
  // Written aside and renamed, so another worker starting on the same directory never reads half a bundle.
  const partial = `${codePath}.${process.pid}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, codePath);
  return { codePath };
}

/** The workflow bundle, built by webpack in a child process (runtime/bundle-workflows.ts) so its memory is not ours to keep. */
function bundleWorkflowsApart(): Promise<string> {
  // The child loads its TypeScript through tsx, whether this process runs the sources (tsx) or
  // `npm start`'s compiled build (bin/start.mjs); tsx found from here, whatever the working directory.
  const child = fork(BUNDLER_PATH, [WORKFLOWS_PATH], {
    execArgv: ['--max-semi-space-size=1', '--import', import.meta.resolve('tsx')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (code) => resolve(code as string));
    child.once('error', reject);
    child.once('exit', (exitCode) => reject(new Error(`Bundling the workflows failed (exit code ${exitCode}); its output is above.`)));
  });
}
