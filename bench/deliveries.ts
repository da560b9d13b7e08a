import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import proto from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { createOrganization, issueApiKey } from '../platform/organizations';
import { generateApiKey } from '../platform/secrets';
import { startProcess } from '../runtime/process';
import { connectTemporal, ensureSearchAttributes, startDevServer } from '../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { freePort } from '../test/support/ports';
import { createScratchDatabase } from '../test/support/scratch-database';
import { signEnvelope } from '../webhooks/signing';
import { deliveryWorkflowId } from '../workflows/delivery/contract';

const { EventType } = proto.temporal.api.enums.v1;

/**
 * `npm run bench:deliveries`: deliveries through the API to a local receiver at several concurrencies
 * (closed loop: that many deliveries in flight at once), each beside the ceilings of the engine (a
 * one-activity no-op workflow on the same server) and of a raw signed POST loop; then a backlog of
 * deliveries waiting in backoff held by `npm start` as a child process, whose resident memory is read
 * from the kernel. Everything runs on this machine: a fresh Temporal dev server, a fresh Postgres
 * database, loopback only.
 *
 * BENCH_DELIVERIES (2000; at concurrency c a run is at most 200 × c), BENCH_CONCURRENCY (1,50),
 * BENCH_BACKLOG (10000), BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const deliveriesPerRun = Number(process.env.BENCH_DELIVERIES ?? 2000);
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '1,50').split(',').map(Number);
const backlogSize = Number(process.env.BENCH_BACKLOG ?? 10_000);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Issue 12's goals. */
const GOALS = { p50AtOneMs: 30, oursOverEngine: 0.9, backlogRssMiB: 600 };

const logger = createLogger('warn', { pretty: false });
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-'));

function formatLoad(): string {
  return loadavg()
    .map((load) => load.toFixed(2))
    .join(', ');
}

function met(ok: boolean): string {
  return ok ? 'met' : 'NOT met';
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function summary(latencies: number[]) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    text: `p50 ${percentile(sorted, 50).toFixed(0)} ms, p95 ${percentile(sorted, 95).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms`,
  };
}

/** Busy CPU time since `start()`, in ms: the whole machine's (/proc/stat), the Temporal server's and this process's. */
function cpuMeter(temporalPid: number) {
  const ticksPerMs = 100 / 1000; // USER_HZ, 100 on Linux
  const machineBusy = () => {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
    // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
    return fields.slice(0, 8).reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value!), 0) / ticksPerMs;
  };
  const processBusy = (pid: number) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticksPerMs;
  };
  const sample = () => ({ machine: machineBusy(), temporal: processBusy(temporalPid), self: process.cpuUsage() });
  return {
    start() {
      const before = sample();
      return () => {
        const after = sample();
        const self = process.cpuUsage(before.self);
        return { machine: after.machine - before.machine, temporal: after.temporal - before.temporal, self: (self.user + self.system) / 1000 };
      };
    },
  };
}

type CpuSpent = ReturnType<ReturnType<ReturnType<typeof cpuMeter>['start']>>;

/** CPU per delivery (or per no-op workflow), in ms: the machine's, then where it went. */
function perItem(cpu: CpuSpent, items: number): string {
  const each = (ms: number) => (ms / items).toFixed(1);
  return `${each(cpu.machine)} ms (Temporal ${each(cpu.temporal)}, Node ${each(cpu.self)}, rest ${each(cpu.machine - cpu.temporal - cpu.self)})`;
}

function runSize(concurrency: number): number {
  return Math.min(deliveriesPerRun, 200 * concurrency);
}

/** Runs `total` tasks with at most `concurrency` in flight. */
async function pool(total: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) await task(next++);
    }),
  );
}

/** A receiver that answers at once and notes when each delivery id first arrived. */
async function startBenchReceiver(status: number) {
  const receivedAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['x-service-delivery-id'] ?? randomUUID());
      if (!receivedAt.has(id)) receivedAt.set(id, performance.now());
      waiters.get(id)?.();
      res.writeHead(status).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    receivedAt,
    arrival: (id: string) => (receivedAt.has(id) ? Promise.resolve() : new Promise<void>((resolve) => waiters.set(id, resolve))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main() {
  const cliPath = await ensureTemporalCli(logger, temporalCliOptions(loadConfig()));
  const temporalServer = await startDevServer(
    { cliPath, port: await freePort(), uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
    logger,
  );
  const database = await createScratchDatabase(adminUrl, 'sandbox_bench');
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const temporal = await connectTemporal(temporalServer.address, 'default');
    await ensureSearchAttributes(temporal.connection, 'default', logger);
    cleanups.push(() => temporal.connection.close());

    console.log(
      `Delivery benchmark: up to ${deliveriesPerRun} deliveries per run (200 × concurrency at most), concurrency ${concurrencies.join(', ')}; backlog ${backlogSize}. ${cpus().length} CPU(s), Node ${process.version}.`,
    );
    console.log(`Load average before: ${formatLoad()} (other work on the machine; ours and the engine run one after the other, same server).`);
    const receiver = await startBenchReceiver(200);
    cleanups.push(receiver.close);
    const service = await startService(database.url, temporalServer.address, 'bench-deliveries', '30s,2m,10m,30m');
    cleanups.push(service.stop);
    const tenant = await service.tenant(receiver.url);

    const engine = await startNoopWorker(temporalServer.address);
    cleanups.push(engine.stop);

    console.log(
      '\nconcurrency | ours: deliveries/s, trigger→receipt latency       | engine (no-op wf/s, latency)  | raw signed POST/s | ours ÷ engine | goal',
    );
    // Warm both up (JIT, connection pools, workflow caches) so the first rows do not pay for it.
    await runDeliveries(service.baseUrl, tenant.key, receiver, 5, 50);
    await runEngineCeiling(temporal.client, 5, 50);
    const cpu = cpuMeter(temporalServer.pid);
    const cpuNotes: string[] = [];
    let oneInFlight: string[] = [];
    for (const concurrency of concurrencies) {
      let spent = cpu.start();
      const ours = await runDeliveries(service.baseUrl, tenant.key, receiver, concurrency);
      const oursCpu = spent();
      spent = cpu.start();
      const engineRun = await runEngineCeiling(temporal.client, concurrency);
      const engineCpu = spent();
      if (concurrency === 1) {
        oneInFlight = [
          '  a delivery:',
          ...(await breakdown(temporal.client, ours.traces, DELIVERY_MARKS)),
          '  the no-op workflow:',
          ...(await breakdown(temporal.client, engineRun.traces, NOOP_MARKS)),
        ];
      }
      cpuNotes.push(
        `  ${concurrency} in flight: a delivery ${perItem(oursCpu, runSize(concurrency))}; a no-op workflow ${perItem(engineCpu, runSize(concurrency))}`,
      );
      const rawRate = await runRawPosts(receiver.url, concurrency);
      const ratio = ours.rate / engineRun.rate;
      const goals = [`ours ÷ engine ≥ ${GOALS.oursOverEngine}: ${met(ratio >= GOALS.oursOverEngine)}`];
      if (concurrency === 1) goals.unshift(`p50 ≤ ${GOALS.p50AtOneMs} ms: ${met(ours.latency.p50 <= GOALS.p50AtOneMs)}`);
      console.log(
        `${String(concurrency).padStart(11)} | ${ours.rate.toFixed(0).padStart(5)}/s, ${ours.latency.text.padEnd(40)} | ${`${engineRun.rate.toFixed(0)}/s, p50 ${engineRun.latency.p50.toFixed(0)} ms`.padStart(29)} | ${rawRate.toFixed(0).padStart(17)} | ${ratio.toFixed(2).padStart(13)} | ${goals.join('; ')}`,
      );
    }

    console.log(
      `\nCPU time per item, whole machine (${cpus().length} cores: at most ${cpus().length * 1000} ms of CPU a second), and where it went; Node is this process: API, worker, receiver and the load itself:`,
    );
    for (const note of cpuNotes) console.log(note);
    if (oneInFlight.length > 0) {
      console.log('\nWhere the time went at 1 in flight (medians of the last 25 of each; server event times from each workflow history):');
      for (const line of oneInFlight) console.log(line);
    }

    await runBacklog(database.url, temporalServer.address);
    console.log(`\nLoad average after: ${formatLoad()}.`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await temporalServer.stop();
    await database.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The API and a worker in this process, as `npm start` runs them. */
async function startService(databaseUrl: string, temporalAddress: string, taskQueue: string, schedule: string) {
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: taskQueue,
    WEBHOOK_RETRY_SCHEDULE: schedule,
    RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: '0',
    SHUTDOWN_GRACE_SECONDS: '5',
    HL7_MLLP_PORT: 'off',
  });
  const database = await openDatabase({ databaseUrl, dataDir: scratch });
  const temporal = await connectTemporal(temporalAddress, 'default');
  const running = await startProcess({ config, logger, database, temporal, temporalAddress, roles: { api: true, worker: true } });
  const server = running.server!;
  return {
    baseUrl: `http://127.0.0.1:${server.port}`,
    async tenant(webhookUrl: string) {
      const organization = await createOrganization(database.db, { name: 'Bench Health (synthetic)', webhookUrl });
      return issueApiKey(database.db, organization.id);
    },
    async stop() {
      for (const { run } of running.stops) await run();
      await temporal.connection.close();
      await database.close();
    },
  };
}

/** Closed loop: each of `concurrency` clients triggers a delivery and waits for its receipt before the next. */
async function runDeliveries(
  baseUrl: string,
  key: string,
  receiver: Awaited<ReturnType<typeof startBenchReceiver>>,
  concurrency: number,
  total = runSize(concurrency),
) {
  const latencies: number[] = [];
  const traces: Trace[] = [];
  const started = performance.now();
  await pool(total, concurrency, async () => {
    const sent = performance.now();
    const response = await fetch(`${baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    if (response.status !== 202) throw new Error(`trigger answered ${response.status}: ${await response.text()}`);
    const { id } = (await response.json()) as { id: string };
    await receiver.arrival(id);
    const received = receiver.receivedAt.get(id)!;
    latencies.push(received - sent);
    traces.push({ workflowId: deliveryWorkflowId(id), sentMs: performance.timeOrigin + sent, endMs: performance.timeOrigin + received });
  });
  const elapsedSeconds = (performance.now() - started) / 1000;
  return { rate: total / elapsedSeconds, latency: summary(latencies), traces };
}

/** One workflow of a closed loop: when the client sent it and when it ended (epoch ms, this machine's clock). */
interface Trace {
  workflowId: string;
  sentMs: number;
  endMs: number;
}

type HistoryEvents = NonNullable<Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']>;

/** A point in a workflow's life: the trace's own ends, or the server's time of the `nth` event of a type. */
type Mark = { label: string; at: (events: HistoryEvents, trace: Trace) => number };

const sent: Mark = { label: 'sent', at: (_, trace) => trace.sentMs };
const ended = (label: string): Mark => ({ label, at: (_, trace) => trace.endMs });
const event = (label: string, type: keyof typeof EventType, nth = 0): Mark => ({
  label,
  at: (events) => tsToMs(events.filter((candidate) => candidate.eventType === EventType[type])[nth]!.eventTime),
});

/** A delivery: the trigger, its workflow's first task, the attempt, the receiver's arrival. */
const DELIVERY_MARKS = [
  sent,
  event('trigger → workflow started (API: key, rate limit, start)', 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED'),
  event('first workflow task dispatched to the worker', 'EVENT_TYPE_WORKFLOW_TASK_STARTED'),
  event('first workflow task (schedules the attempt)', 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED'),
  event('attempt activity dispatched', 'EVENT_TYPE_ACTIVITY_TASK_STARTED'),
  ended('attempt: record the delivery, load, sign, POST → receipt'),
];

/** The no-op workflow: start, a workflow task, the activity, a second workflow task, the client's result. */
const NOOP_MARKS = [
  sent,
  event('start → workflow started', 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED'),
  event('first workflow task dispatched to the worker', 'EVENT_TYPE_WORKFLOW_TASK_STARTED'),
  event('first workflow task (schedules the activity)', 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED'),
  event('activity dispatched', 'EVENT_TYPE_ACTIVITY_TASK_STARTED'),
  event('activity (does nothing) → its completion recorded', 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED'),
  event('second workflow task dispatched to the worker', 'EVENT_TYPE_WORKFLOW_TASK_STARTED', 1),
  event('second workflow task (completes the workflow)', 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED', 1),
  ended('completion → the client has the result'),
];

/**
 * Where the time went, as medians over the last `sample` traces of a run: the client's send and the
 * trace's end (this process's clock) around the server's event times from each workflow history
 * (same machine, same clock). The last line is the whole, first mark to last.
 */
async function breakdown(client: Client, traces: Trace[], marks: Mark[], sample = 25): Promise<string[]> {
  const spans: number[][] = marks.map(() => []);
  for (const trace of traces.slice(-sample)) {
    const events = (await client.workflow.getHandle(trace.workflowId).fetchHistory()).events!;
    const times = marks.map((mark) => mark.at(events, trace));
    for (let index = 1; index < times.length; index += 1) spans[index]!.push(times[index]! - times[index - 1]!);
    spans[0]!.push(times.at(-1)! - times[0]!);
  }
  const line = (label: string, values: number[]) => `    ${label.padEnd(60)} ${summary(values).p50.toFixed(1).padStart(6)} ms`;
  return [...marks.slice(1).map((mark, index) => line(mark.label, spans[index + 1]!)), line('whole', spans[0]!)];
}

async function startNoopWorker(address: string) {
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    taskQueue: 'bench-noop',
    workflowsPath: fileURLToPath(new URL('./noop-workflow.ts', import.meta.url)),
    activities: { noop: async () => {} },
  });
  const running = worker.run();
  return {
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** The same closed loop on the engine alone: start a no-op workflow and wait for it to finish. */
async function runEngineCeiling(client: Client, concurrency: number, total = runSize(concurrency)) {
  const latencies: number[] = [];
  const traces: Trace[] = [];
  const started = performance.now();
  await pool(total, concurrency, async () => {
    const sent = performance.now();
    const workflowId = `noop-${randomUUID()}`;
    await client.workflow.execute('noopWorkflow', { taskQueue: 'bench-noop', workflowId });
    const done = performance.now();
    latencies.push(done - sent);
    traces.push({ workflowId, sentMs: performance.timeOrigin + sent, endMs: performance.timeOrigin + done });
  });
  return { rate: total / ((performance.now() - started) / 1000), latency: summary(latencies), traces };
}

async function runRawPosts(url: string, concurrency: number): Promise<number> {
  const body = JSON.stringify({
    id: 'evt_bench',
    event: 'adt.patient.admitted',
    resource: { resourceType: 'Encounter', status: 'in-progress', class: { code: 'IMP' } },
  });
  const total = runSize(concurrency);
  const started = performance.now();
  await pool(total, concurrency, async () => {
    const headers = signEnvelope({
      deliveryId: `dlv_raw_${randomUUID()}`,
      body,
      secret: 'sbx_whsec_bench',
      timestampSeconds: Math.floor(Date.now() / 1000),
    });
    const response = await fetch(url, { method: 'POST', headers, body });
    await response.arrayBuffer();
  });
  return total / ((performance.now() - started) / 1000);
}

/**
 * Deliveries to a receiver that always fails, each left waiting 30 min for its first retry, held by
 * `npm start` (API and worker in one process, as a newcomer runs it) in a child process: its resident
 * memory is read from /proc before and after, so nothing of this benchmark's own is counted.
 */
async function runBacklog(databaseUrl: string, temporalAddress: string) {
  const failing = await startBenchReceiver(503);
  const key = generateApiKey();
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../bin/start.ts', import.meta.url))], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: 'bench-backlog',
      WEBHOOK_RETRY_SCHEDULE: '30m',
      RATE_LIMIT_PER_MINUTE: '10000000',
      DEMO_API_KEY: key,
      DATA_DIR: join(scratch, 'backlog'),
      HOST: '127.0.0.1',
      PORT: '0',
      RELAY_PORT: '0',
      HL7_MLLP_PORT: 'off',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let sampler: NodeJS.Timeout | undefined;
  try {
    let output = '';
    const port = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        const match = output.match(/API\s+http:\/\/localhost:(\d+)/);
        if (match) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const patched = await fetch(`${baseUrl}/v1/settings/webhook`, { method: 'PATCH', headers, body: JSON.stringify({ webhook_url: failing.url }) });
    if (!patched.ok) throw new Error(`PATCH /v1/settings/webhook answered ${patched.status}`);
    const rssIdle = residentMiB(child.pid!);
    // Resident memory moves with garbage collection by a hundred MiB and more, so it is sampled
    // throughout rather than read once: while the backlog fills, then with it waiting.
    let rssSamples: number[] = [];
    sampler = setInterval(() => rssSamples.push(residentMiB(child.pid!)), 500);

    const started = performance.now();
    await pool(backlogSize, 50, async () => {
      const response = await fetch(`${baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers });
      if (response.status !== 202) throw new Error(`trigger answered ${response.status}`);
      await response.arrayBuffer();
    });
    while (failing.receivedAt.size < backlogSize) await new Promise((resolve) => setTimeout(resolve, 200));
    const fillSeconds = (performance.now() - started) / 1000;
    const rssFilling = rssSamples;
    rssSamples = [];

    const listLatencies: number[] = [];
    const triggerLatencies: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      let sent = performance.now();
      await (await fetch(`${baseUrl}/v1/webhooks/deliveries?status=retrying&limit=50`, { headers })).arrayBuffer();
      listLatencies.push(performance.now() - sent);
      sent = performance.now();
      await (await fetch(`${baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers })).arrayBuffer();
      triggerLatencies.push(performance.now() - sent);
    }
    clearInterval(sampler);
    const rssWaiting = Math.max(...rssSamples);
    const mib = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)} MiB`;
    console.log(
      `\nBacklog: ${backlogSize} deliveries waiting in backoff (filled in ${fillSeconds.toFixed(1)} s), held by npm start (API + worker, one process).`,
    );
    console.log(
      `  RSS with the backlog waiting (every 0.5 s during the requests below): ${mib(rssSamples)} | goal ≤ ${GOALS.backlogRssMiB} MiB (highest sample): ${met(rssWaiting <= GOALS.backlogRssMiB)}`,
    );
    console.log(`  RSS idle before it ${rssIdle.toFixed(0)} MiB; while it filled ${mib(rssFilling)}`);
    console.log(`  GET /v1/webhooks/deliveries?status=retrying&limit=50: ${summary(listLatencies).text}`);
    console.log(`  POST /v1/webhooks/trigger-mock-event:               ${summary(triggerLatencies).text}`);
  } finally {
    clearInterval(sampler);
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await failing.close();
  }
}

/** A process's resident set, from the kernel (Linux). */
function residentMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return Number(line?.[1]) / 1024;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
