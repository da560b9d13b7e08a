import { parentPort } from 'node:worker_threads';
import { processHl7 } from './process';
import { summarize } from './process-pool';

/** A worker thread of hl7/process-pool.ts: each message in, its outcome out, in order. */
parentPort!.on('message', (text: string) => {
  parentPort!.postMessage(summarize(processHl7(text)));
});
