import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { PasCheck, PasOperation } from './request';

/**
 * Checking a PAS request against the profiles takes the CPU for tens to hundreds of milliseconds
 * (every resource against base R4 and its profiles), and loading the definitions takes seconds: on
 * the API's event loop that would stall every other request. Every check runs on a worker thread
 * (piscina's pool: queueing, crash recovery, idle threads let go), which loads the validator once
 * and keeps it while it lives; the event loop only hands the body over and reads the answer.
 */
let pool: Piscina | undefined;

function threads(): Piscina {
  if (pool) return pool;
  pool = new Piscina({
    filename: new URL('./check-thread.ts', import.meta.url).href,
    // The threads load the TypeScript sources as this process does; tsx found from here, whatever the working directory.
    execArgv: ['--import', import.meta.resolve('tsx')],
    minThreads: 0,
    // One core stays with the event loop.
    maxThreads: Math.max(1, availableParallelism() - 1),
    // The validator's definitions take seconds to load: a thread is kept a while once it has them.
    idleTimeout: 10 * 60_000,
  });
  // A thread that fails is the pool's 'error' event (unheard, it would end the process); the request it held is answered below.
  pool.on('error', () => {});
  return pool;
}

/** Far longer than a thread takes to load the definitions and check the largest request, even on a loaded machine. */
const THREAD_ANSWER_WITHIN_MS = 60_000;

/** Checks a PAS request off the event loop; a thread that fails or never answers is an error the API answers as 503. */
export function checkPasRequestOffLoop(body: unknown, operation: PasOperation): Promise<PasCheck> {
  return threads().run({ body, operation }, { signal: AbortSignal.timeout(THREAD_ANSWER_WITHIN_MS) });
}
