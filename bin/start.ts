import { loadConfig } from '../platform/config';
import { ensurePgliteDatabase } from '../platform/pglite-directory';
import { workflowBundle } from '../runtime/workflow-bundle';
import { runMain } from './run-main';

/**
 * `npm start`: the whole service in one process for a newcomer (bin/start-service.ts). What a
 * first start makes in child processes comes first, one at a time, while this process has loaded
 * little: the embedded database (unless DATABASE_URL is set) and the workflow bundle; the service
 * is loaded after them. Each of those children is the size of the service, so beside it they
 * would double a first start's memory (docs/benchmarks.md, Memory of npm start).
 */
runMain(async () => {
  const config = loadConfig();
  if (!config.DATABASE_URL) await ensurePgliteDatabase(config.DATA_DIR);
  await workflowBundle(config.DATA_DIR);
  const { startService } = await import('./start-service');
  await startService(config);
  // What starting left behind (about 45 MiB of garbage: the modules' top-level work, the worker's
  // creation) is collected once now, not when V8's memory reducer gets to it, ten seconds or more
  // later on a busy machine (npm start runs with --expose-gc; docs/benchmarks.md).
  globalThis.gc?.();
});
