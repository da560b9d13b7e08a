import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { PrivacyMode } from '../privacy/guard';
import { type PortableHl7Outcome, processHl7Portable } from './portable-outcome';
import type { ConformanceMode } from './validate';

/**
 * Parsing, checking and mapping a large HL7 v2 message takes the CPU for a long while (a 256 KiB
 * ORU^R01 becomes 4,000 resources: hundreds of ms), which on the API's event loop would stall every
 * other request meanwhile. A message over OFF_LOOP_FROM_BYTES is processed on a worker thread
 * (piscina's pool: queueing, crash recovery, idle threads let go); a smaller one takes a few ms and
 * is processed in place, so the usual traffic pays no thread hop and never queues behind a large one.
 */
export const OFF_LOOP_FROM_BYTES = 8 * 1024;

let pool: Piscina | undefined;

function threads(): Piscina {
  if (pool) return pool;
  pool = new Piscina({
    filename: new URL('./portable-outcome.ts', import.meta.url).href,
    name: 'processHl7Portable',
    // The threads load the TypeScript sources as this process does; tsx found from here, whatever the working directory.
    execArgv: ['--import', import.meta.resolve('tsx')],
    minThreads: 0,
    // One core stays with the event loop.
    maxThreads: Math.max(1, availableParallelism() - 1),
    idleTimeout: 60_000,
  });
  // A thread that fails is the pool's 'error' event (unheard, it would end the process); the message
  // it held is answered below all the same.
  pool.on('error', () => {});
  return pool;
}

let answeredByThreads = 0;

/** How many messages a thread has answered (tests see with it where a message went). */
export const processedOffLoop = () => answeredByThreads;

/** Far longer than a thread takes to start and process the largest message, even on a loaded machine (a few s). */
const THREAD_ANSWER_WITHIN_MS = 30_000;

/**
 * processHl7 off the event loop for a large message, in place for a small one. Should no thread
 * answer in time (one died, or none can start, which piscina would retry for ever), the message is
 * processed in place: a slow answer rather than a hung request or a lost message.
 */
export async function processHl7OffLoop(text: string, conformance?: ConformanceMode, privacy?: PrivacyMode): Promise<PortableHl7Outcome> {
  const task = { text, conformance, privacy };
  if (Buffer.byteLength(text, 'utf8') < OFF_LOOP_FROM_BYTES) return processHl7Portable(task);
  try {
    const outcome: PortableHl7Outcome = await threads().run(task, { signal: AbortSignal.timeout(THREAD_ANSWER_WITHIN_MS) });
    answeredByThreads += 1;
    return outcome;
  } catch {
    return processHl7Portable(task);
  }
}
