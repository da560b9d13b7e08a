import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseHl7 } from '../hl7/parse';
import { processHl7Portable } from '../hl7/portable-outcome';
import { processHl7 } from '../hl7/process';
import { listTemplates } from '../hl7/templates';
import { mapToFhir } from '../hl7/to-fhir';
import { findHl7Trigger } from '../hl7/triggers';
import { validateHl7 } from '../hl7/validate';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { createOrganization, issueApiKey } from '../platform/organizations';
import { startProcess } from '../runtime/process';
import { connectTemporal, startDevServer } from '../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { generateCorpus } from '../test/hl7/corpus/generate';
import { largeOruR01 } from '../test/support/large-hl7';
import { freePort } from '../test/support/ports';
import { createScratchDatabase } from '../test/support/scratch-database';

/**
 * `npm run bench:hl7`: HL7 v2 messages per second, (1) parsed, validated and mapped to FHIR in
 * process, per template, on the template path against the generic one (corpus messages of triggers
 * without a template, mapped segment by segment), and for a 256 KiB ORU^R01; (2) through POST /v1/sandbox/hl7/inject (API key,
 * Postgres, a delivery workflow started per message) until 202, and until the webhook reaches a
 * local receiver. Loopback only, a fresh Temporal dev server (or TEMPORAL_ADDRESS) and a fresh
 * Postgres database.
 *
 * BENCH_SECONDS per in-process measurement (2), BENCH_INJECTS (400), BENCH_CONCURRENCY (20),
 * BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const injects = Number(process.env.BENCH_INJECTS ?? 400);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const logger = createLogger('warn', { pretty: false });

/** Runs `work` repeatedly for `duration` seconds (BENCH_SECONDS by default) and returns runs per second. */
function rate(work: () => void, duration = seconds): number {
  // Warm up for a fifth of the measurement (at least one run), so the JIT has settled.
  const warm = performance.now() + duration * 200;
  do work();
  while (performance.now() < warm);
  const deadline = performance.now() + duration * 1000;
  let runs = 0;
  const started = performance.now();
  while (performance.now() < deadline) {
    work();
    runs++;
  }
  return runs / ((performance.now() - started) / 1000);
}

function bigResult(): string {
  const head =
    'MSH|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000+0000||ORU^R01^ORU_R01|BIG1|P|2.5.1\rPID|1||M1^^^HOSP^MR||Doe^Jane||19800101|F\rOBR|1||F1|58410-2^CBC^LN|||20250101\r';
  const lines = [head];
  let size = head.length;
  for (let index = 1; ; index++) {
    const line = `OBX|${index}|NM|718-7^Hemoglobin^LN||13.${index % 10}|g/dL^g/dL^UCUM|12-16|N|||F\r`;
    if (size + line.length > 256 * 1024) break;
    lines.push(line);
    size += line.length;
  }
  return lines.join('');
}

function inProcess(): void {
  const templates = listTemplates();
  console.log(`In process (parse → validate → map to a FHIR Bundle → ACK), ${seconds} s each:\n`);
  console.log('template   | bytes  | parse+map msg/s | full pipeline with ACK msg/s');
  let totalBytes = 0;
  let totalTime = 0;
  for (const template of templates) {
    const parseAndMap = rate(() => {
      const message = parseHl7(template.er7);
      mapToFhir(message, validateHl7(message).type!);
    });
    const pipeline = rate(() => processHl7(template.er7));
    totalBytes += template.er7.length;
    totalTime += 1 / pipeline;
    console.log(
      `${template.id.padEnd(10)} | ${String(template.er7.length).padStart(6)} | ${parseAndMap.toFixed(0).padStart(15)} | ${pipeline.toFixed(0).padStart(28)}`,
    );
  }
  console.log(
    `all ${templates.length} templates in turn: ${(templates.length / totalTime).toFixed(0)} msg/s (${(totalBytes / totalTime / 1024 / 1024).toFixed(1)} MiB/s)`,
  );
  // The template path against the generic one: every corpus message of a trigger without a template (test/hl7/corpus).
  const generic = generateCorpus().filter((message) => !findHl7Trigger(message.type));
  let genericBytes = 0;
  let genericTime = 0;
  for (const message of generic.slice(0, 400)) {
    const messageRate = rate(() => processHl7(message.text), 0.02);
    genericBytes += message.text.length;
    genericTime += 1 / messageRate;
  }
  const sampled = Math.min(generic.length, 400);
  console.log(
    `template path (${templates.length} templated triggers in turn): ${(templates.length / totalTime).toFixed(0)} msg/s; ` +
      `generic path (${sampled} corpus messages of ${new Set(generic.slice(0, 400).map((message) => message.type)).size} triggers without a template, in turn): ${(sampled / genericTime).toFixed(0)} msg/s (${(genericBytes / genericTime / 1024 / 1024).toFixed(1)} MiB/s)`,
  );
  const big = bigResult();
  const bigRate = rate(() => processHl7(big));
  const observations = (processHl7(big) as { bundle?: { entry?: unknown[] } }).bundle?.entry?.length ?? 0;
  console.log(
    `256 KiB ORU^R01 (${big.length} bytes, ${observations} FHIR resources): ${bigRate.toFixed(1)} msg/s, ${(1000 / bigRate).toFixed(1)} ms each\n`,
  );
}

async function throughInject(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-hl7-'));
  const cleanups: (() => Promise<void>)[] = [];
  try {
    let temporalAddress = process.env.TEMPORAL_ADDRESS;
    if (!temporalAddress) {
      const cliPath = await ensureTemporalCli(logger, temporalCliOptions(loadConfig()));
      const server = await startDevServer(
        { cliPath, port: await freePort(), uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
        logger,
      );
      cleanups.push(server.stop);
      temporalAddress = server.address;
    }
    const database = await createScratchDatabase(adminUrl, 'sandbox_bench_hl7');
    cleanups.push(database.drop);
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: `bench-hl7-${Date.now()}`,
      RATE_LIMIT_PER_MINUTE: '10000000',
      HL7_RATE_LIMIT_PER_MINUTE: '10000000',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: '0',
      SHUTDOWN_GRACE_SECONDS: '5',
      HL7_MLLP_PORT: 'off',
    });
    const handle = await openDatabase({ databaseUrl: database.url, dataDir: scratch });
    cleanups.unshift(handle.close);
    const temporal = await connectTemporal(temporalAddress, 'default');
    cleanups.unshift(() => temporal.connection.close());
    const running = await startProcess({ config, logger, database: handle, temporal, temporalAddress, roles: { api: true, worker: true } });
    cleanups.unshift(...running.stops.map(({ run }) => run));
    const api = running.server!;

    let received = 0;
    let allReceived: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      allReceived = resolve;
    });
    const receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200).end();
        if (++received === injects) allReceived();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cleanups.unshift(() => new Promise((resolve) => receiver.close(() => resolve())));
    const organization = await createOrganization(handle.db, {
      name: 'Bench Health (synthetic)',
      webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`,
    });
    const { key } = await issueApiKey(handle.db, organization.id);

    const templates = listTemplates();
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < injects) {
          const template = templates[next++ % templates.length]!;
          const response = await fetch(`http://127.0.0.1:${api.port}/v1/sandbox/hl7/inject`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'x-application/hl7-v2+er7' },
            body: template.er7,
          });
          await response.text();
          if (response.status !== 202) throw new Error(`inject answered ${response.status}`);
        }
      }),
    );
    const accepted = (performance.now() - started) / 1000;
    await done;
    const delivered = (performance.now() - started) / 1000;
    console.log(`Through POST /v1/sandbox/hl7/inject (${injects} messages, ${concurrency} in flight, every template in turn, raw ER7):`);
    console.log(`  accepted (AA, 202, delivery workflow started): ${(injects / accepted).toFixed(0)} msg/s`);
    console.log(`  delivered (webhook received by a local receiver): ${(injects / delivered).toFixed(0)} msg/s`);
    // The API alone: the worker's work on the envelopes would otherwise count against the same event loop.
    await running.worker!.stop();
    await largeInjectEventLoop(api.port, key);
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
}

const LARGE_INJECTS = Number(process.env.BENCH_LARGE_INJECTS ?? 5);

/**
 * The event loop's longest block (perf_hooks.monitorEventLoopDelay, 10 ms resolution) while one
 * 256 KiB ORU^R01 (a 4.6 MB envelope) is injected over HTTP as ER7, from the request to its 202, in
 * the API process without the worker. Messages one at a time, BENCH_LARGE_INJECTS of them.
 */
async function largeInjectEventLoop(port: number, key: string): Promise<void> {
  const blocks: number[] = [];
  const took: number[] = [];
  for (let index = 0; index < LARGE_INJECTS; index++) {
    const text = largeOruR01({ controlId: `SYN-BENCH-BIG-${index}` });
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${port}/v1/sandbox/hl7/inject`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'x-application/hl7-v2+er7' },
      body: text,
    });
    await response.text();
    took.push(performance.now() - started);
    delay.disable();
    if (response.status !== 202) throw new Error(`the 256 KiB inject answered ${response.status}`);
    blocks.push(delay.max / 1e6);
  }
  // Before hl7/off-loop.ts the request processed the message on the event loop: the same work, in place.
  const inPlace: number[] = [];
  for (let index = 0; index < LARGE_INJECTS; index++) {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await new Promise((resolve) => setTimeout(resolve, 20));
    processHl7Portable({ text: largeOruR01({ controlId: `SYN-BENCH-BIG-${index}` }) });
    await new Promise((resolve) => setTimeout(resolve, 20));
    delay.disable();
    inPlace.push(delay.max / 1e6);
  }
  const ms = (values: number[]) => `${values.map((value) => value.toFixed(0)).join(', ')} ms (max ${Math.max(...values).toFixed(0)} ms)`;
  console.log(`\nA 256 KiB ORU^R01 injected over HTTP (ER7), ${LARGE_INJECTS} one at a time, API without the worker:`);
  console.log(`  event loop's longest block per message, processed off the loop (now): ${ms(blocks)}`);
  console.log(`  the same message processed on the event loop, as before: ${ms(inPlace)}`);
  console.log(`  request to 202 (now): ${ms(took)}`);
}

async function main() {
  console.log(`HL7 v2 benchmark (Node ${process.version}).\n`);
  inProcess();
  await throughInject();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
