import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { asFhirJson } from '../fhir/resource-json';
import type { Hl7Ack } from './ack';
import { type Hl7Outcome, processHl7 } from './process';

/**
 * Parsing and mapping a message costs about 3.5 ms per KiB (a 256 KiB ORU^R01: 0.8 to 1.1 s on
 * this 2-core machine, bench/hl7.ts), all of it on one thread; the API's event loop would answer
 * nothing meanwhile. Messages above OFF_THREAD_BYTES are processed in worker threads instead, and
 * come back as plain data: the ACK, and the Bundle already serialized (JSON text crosses threads in
 * a copy, where a structured clone of a 4 MiB Bundle object took 70 to 250 ms on the receiving side).
 */

/** What the listener needs of an outcome, in a form that crosses threads. */
export interface ProcessedHl7 {
  kind: Hl7Outcome['kind'];
  ack: Hl7Ack;
  /** Set when the message is accepted (AA with a Bundle): its event, control id and Bundle as JSON. */
  accepted?: { event: string; controlId: string; bundleJson: string };
}

export function summarize(outcome: Hl7Outcome): ProcessedHl7 {
  const summary: ProcessedHl7 = { kind: outcome.kind, ack: outcome.ack };
  if (outcome.kind === 'acknowledged' && outcome.ack.code === 'AA' && outcome.bundle && outcome.trigger)
    summary.accepted = { event: outcome.trigger.event, controlId: outcome.controlId, bundleJson: JSON.stringify(asFhirJson(outcome.bundle)) };
  return summary;
}

/** Below this, a message is processed on the calling thread: a few milliseconds, less than a round trip's worth of copying. */
export const OFF_THREAD_BYTES = 8 * 1024;

export interface Hl7Processor {
  process(text: string): Promise<ProcessedHl7>;
  close(): Promise<void>;
}

interface Job {
  text: string;
  resolve(result: ProcessedHl7): void;
  reject(error: Error): void;
}

/** A worker's heap is capped, so no one message can take the process's memory with it. */
const WORKER_HEAP_MB = 512;

const WORKER_ENTRY = new URL('./process-worker.ts', import.meta.url).href;
/** tsx's `tsx/esm/api` export, its ESM build (`require.resolve` finds the CommonJS one beside it, whose register() cannot run in an eval worker). */
const TSX_API = pathToFileURL(
  createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/\.cjs$/, '.mjs'),
).href;

/**
 * Runs processHl7 in up to `threads` worker threads (default: the cores but one, at least one, at
 * most four), started when first needed. The workers load the TypeScript sources through tsx, as
 * the process itself does.
 */
export function createHl7Processor(options: { threads?: number; offThreadBytes?: number } = {}): Hl7Processor {
  const threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1));
  const offThreadBytes = options.offThreadBytes ?? OFF_THREAD_BYTES;
  const idle: Worker[] = [];
  const busy = new Map<Worker, Job>();
  const queue: Job[] = [];
  let closed = false;

  const spawn = (): Worker => {
    // The worker registers tsx's loader, then imports its TypeScript entry (an entry given to the
    // Worker directly is loaded before `--import` hooks apply on Node 20).
    const worker = new Worker(
      `import(${JSON.stringify(TSX_API)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_ENTRY)}); })`,
      { eval: true, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } },
    );
    worker.unref();
    worker.on('message', (result: ProcessedHl7) => {
      const job = busy.get(worker);
      busy.delete(worker);
      job?.resolve(result);
      next(worker);
    });
    const lost = (error: Error) => {
      const job = busy.get(worker);
      busy.delete(worker);
      const at = idle.indexOf(worker);
      if (at !== -1) idle.splice(at, 1);
      job?.reject(error);
      // The worker is replaced on demand; jobs waiting for one get it.
      if (!closed && queue.length > 0) next(spawn());
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the HL7 worker thread exited (${code})`)));
    return worker;
  };

  const next = (worker: Worker) => {
    const job = queue.shift();
    if (!job) {
      idle.push(worker);
      return;
    }
    busy.set(worker, job);
    worker.postMessage(job.text);
  };

  return {
    process(text) {
      if (text.length <= offThreadBytes || threads === 0) return Promise.resolve(summarize(processHl7(text)));
      return new Promise((resolve, reject) => {
        if (closed) return reject(new Error('the HL7 processor is closed'));
        queue.push({ text, resolve, reject });
        const worker = idle.pop() ?? (busy.size < threads ? spawn() : undefined);
        if (worker) next(worker);
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('the HL7 processor is closed'));
      await Promise.all([...idle, ...busy.keys()].map((worker) => worker.terminate()));
    },
  };
}
