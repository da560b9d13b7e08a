import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
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
  pool ??= new Piscina({
    filename: new URL('./portable-outcome.ts', import.meta.url).href,
    name: 'processHl7Portable',
    // The threads load the TypeScript sources as this process does.
    execArgv: ['--import', 'tsx'],
    minThreads: 0,
    // One core stays with the event loop.
    maxThreads: Math.max(1, availableParallelism() - 1),
    idleTimeout: 60_000,
  });
  return pool;
}

/** processHl7 off the event loop for a large message, in place for a small one. */
export async function processHl7OffLoop(text: string, conformance?: ConformanceMode): Promise<PortableHl7Outcome> {
  if (Buffer.byteLength(text, 'utf8') < OFF_LOOP_FROM_BYTES) return processHl7Portable({ text, conformance });
  return threads().run({ text, conformance });
}
