import { type ChildProcess, spawn } from 'node:child_process';
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
import { sql } from 'drizzle-orm';
import { deliveries, deliveryAttempts } from '../drizzle/schema';
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
import { scenarioWorkflowId } from '../workflows/scenario/contract';
import {
  countWorkflows,
  cpuMeter,
  formatCounts,
  formatCpu,
  formatPersistence,
  measuredMs,
  persistenceRequests,
  postgresPids,
  type StatementCounts,
  statementCounter,
  statementsSince,
} from './costs';
import { startMinimumDelivery } from './minimum-delivery';

const { EventType } = proto.temporal.api.enums.v1;

/**
 * `npm run bench:deliveries`: deliveries through the API to a local receiver at several concurrencies
 * (closed loop: that many deliveries in flight at once), each beside the ceilings of the engine (a
 * one-activity no-op workflow on the same server, run in blocks alternating with ours) and of a raw
 * signed POST loop, and beside the floor under any delivery (bench/minimum-delivery.ts, in the same blocks); what one delivery and one scenario step cost (Temporal actions, history events and bytes, database statements and
 * row bytes, CPU by process); one organization's burst beside another organization's light load
 * (activity failures per delivery, the light load's latency alone and beside it); the same loop
 * with the API and the worker as separate processes, one and two of each (scale-out); then a backlog of deliveries waiting in backoff held by `npm start` as
 * a child process, whose resident memory is read from the kernel. Everything runs on this machine,
 * loopback only: a fresh Postgres database, and a fresh Temporal dev server unless BENCH_CLUSTER_FILE
 * names the cluster.json of a running `npm run cluster -- start` (its frontend is used, and its
 * server processes' CPU read by role) or TEMPORAL_ADDRESS another running server (its processes'
 * ids in BENCH_TEMPORAL_PIDS, comma-separated, to read their CPU).
 *
 * BENCH_DELIVERIES (2000; at concurrency c a run is at most 200 × c), BENCH_CONCURRENCY (1,50),
 * BENCH_ORGANIZATIONS (10), BENCH_SCENARIO_RUNS (5), BENCH_BURST (2000 deliveries of one
 * organization; 0 skips it), BENCH_SCALE_OUT (1x1,1x2,2x1,2x2: API processes × worker processes; empty
 * skips it), BENCH_SCALE_CONCURRENCY (50), BENCH_BACKLOG (10000; 0 skips it), BENCH_TOPOLOGY (a label
 * for the rows), BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const deliveriesPerRun = Number(process.env.BENCH_DELIVERIES ?? 2000);
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '1,50').split(',').filter(Boolean).map(Number);
const scenarioRuns = Number(process.env.BENCH_SCENARIO_RUNS ?? 5);
const burstSize = Number(process.env.BENCH_BURST ?? 2000);
/**
 * The load is spread over this many organizations: a worker runs at most DELIVERY_SLOTS_PER_ORGANIZATION
 * (20) attempts of one organization at once and lets the others wait their turn (platform/organization-lines.ts),
 * so 50 in flight for a single organization would measure that limit, not the engine. The burst row
 * measures it: one organization's deliveries all at once.
 */
const organizations = Number(process.env.BENCH_ORGANIZATIONS ?? 10);
const scaleOut = (process.env.BENCH_SCALE_OUT ?? '1x1,1x2,2x1,2x2')
  .split(',')
  .filter(Boolean)
  .map((shape) => {
    const [apis, workers] = shape.split('x').map(Number);
    return { apis: apis!, workers: workers! };
  });
const scaleConcurrency = Number(process.env.BENCH_SCALE_CONCURRENCY ?? 50);
const backlogSize = Number(process.env.BENCH_BACKLOG ?? 10_000);
/** A running cluster's description (`npm run cluster -- start` writes it): its frontend, and its server processes by role. */
const clusterFile = process.env.BENCH_CLUSTER_FILE;
const cluster = clusterFile
  ? (JSON.parse(readFileSync(clusterFile, 'utf8')) as { temporalAddress: string; processes: { role: string; pid: number; metricsUrl?: string }[] })
  : undefined;
/** The cluster's Prometheus endpoints, to count Temporal's database requests per delivery. */
const metricsUrls = (cluster?.processes ?? []).flatMap((server) => (server.metricsUrl ? [server.metricsUrl] : []));
const externalTemporal = cluster?.temporalAddress ?? process.env.TEMPORAL_ADDRESS;
/** The Temporal server's processes, by role, whose CPU is read: the dev server is one process, a cluster one per service and node. */
const temporalPids: Record<string, number[]> = {};
for (const { role, pid } of cluster?.processes ?? []) {
  if (role === 'api' || role === 'app-worker') continue;
  temporalPids[`temporal ${role}`] = [...(temporalPids[`temporal ${role}`] ?? []), pid];
}
const givenPids = (process.env.BENCH_TEMPORAL_PIDS ?? '').split(',').filter(Boolean).map(Number);
if (givenPids.length > 0) temporalPids.temporal = givenPids;
const topology =
  process.env.BENCH_TOPOLOGY ??
  (cluster
    ? `the cluster of npm run cluster (${Object.entries(temporalPids)
        .map(([role, pids]) => `${pids.length} ${role.replace('temporal ', '')}`)
        .join(', ')}; Postgres persistence and SQL visibility)`
    : externalTemporal
      ? `Temporal at ${externalTemporal}`
      : 'the Temporal dev server (one process, SQLite in memory)');
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Issue 12's goals, and issue 26's: ours ÷ engine at 50 in flight. */
const GOALS = { p50AtOneMs: 30, oursOverEngine: 0.9, backlogRssMiB: 600 };
/**
 * Issue 32's: one organization's burst costs no activity failure (an attempt past the organization's
 * slots waits its turn, never fails; the bench receiver answers every request, so no failure is the
 * receiver's own), and another organization's light load keeps its latency beside it, read as its
 * p50 at most twice its p50 alone.
 */
const BURST_GOALS = { activityFailuresPerDelivery: 0, lightBesideOverAlone: 2 };
/** Issue 32's for the closed loop: the no-op's CPU ÷ a delivery's at 50 in flight, and a delivery's p50 at 1 in flight at most this much above the no-op's. */
const COST_GOALS = { noopOverDeliveryCpu: 0.9, cpuAtConcurrency: 50, p50AboveEngineAtOneMs: 5 };
/** How many of a run's last workflows have their histories read for the counts. */
const HISTORY_SAMPLE = 25;

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

type BenchReceiver = Awaited<ReturnType<typeof startBenchReceiver>>;

async function main() {
  let temporalAddress = externalTemporal;
  let stopTemporal = async () => {};
  if (!temporalAddress) {
    const cliPath = await ensureTemporalCli(logger, temporalCliOptions(loadConfig()));
    const devServer = await startDevServer(
      { cliPath, port: await freePort(), uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
      logger,
    );
    temporalAddress = devServer.address;
    temporalPids.temporal = [devServer.pid];
    stopTemporal = () => devServer.stop();
  }
  const database = await createScratchDatabase(adminUrl, 'sandbox_bench');
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const temporal = await connectTemporal(temporalAddress, 'default');
    await ensureSearchAttributes(temporal.connection, 'default', logger);
    cleanups.push(() => temporal.connection.close());

    console.log(
      `Delivery benchmark on ${topology}: up to ${deliveriesPerRun} deliveries per run (200 × concurrency at most), concurrency ${concurrencies.join(', ')}, for ${organizations} organizations; backlog ${backlogSize}. ${cpus().length} CPU(s), Node ${process.version}.`,
    );
    console.log(
      `Load average before: ${formatLoad()} (other work on the machine; ours, the engine's no-op and the minimum delivery run in alternating blocks, ours, no-op, minimum, minimum, no-op, ours, twice, on the same server).`,
    );
    const receiver = await startBenchReceiver(200);
    cleanups.push(receiver.close);
    const service = await startService(database.url, temporalAddress, 'bench-deliveries', '30s,2m,10m,30m');
    cleanups.push(service.stop);
    const tenants = await Promise.all(Array.from({ length: organizations }, () => service.tenant(receiver.url)));
    const keys = tenants.map((tenant) => tenant.key);

    const engine = await startNoopWorker(temporalAddress);
    cleanups.push(engine.stop);

    console.log(
      '\nconcurrency | ours: deliveries/s, trigger→receipt latency       | engine (no-op wf/s, latency)  | raw signed POST/s | ours ÷ engine | goal',
    );
    // Warm all three up (JIT, connection pools, workflow caches) so the first rows do not pay for it.
    await runDeliveries([service.baseUrl], keys, receiver, 5, 50);
    await runEngineCeiling(temporal.client, 5, 50);
    const minimum = await startMinimumDelivery({
      client: temporal.client,
      temporalAddress,
      databaseUrl: database.url,
      receiverUrl: receiver.url,
      organizations,
    });
    cleanups.push(minimum.stop);
    const runMinimum = (concurrency: number, total?: number) =>
      runDeliveries([minimum.baseUrl], minimum.keys, receiver, concurrency, total, minimum.workflowIdOf);
    await runMinimum(5, 50);
    // This process holds the API, the worker, the receiver and the load.
    const cpu = cpuMeter(() => ({ ...temporalPids, postgres: postgresPids(), 'this process': [process.pid] }));
    const cpuNotes: string[] = [];
    const countNotes: string[] = [];
    let oneInFlight: string[] = [];
    for (const concurrency of concurrencies) {
      const statementsBefore = { api: service.statements.api.snapshot(), worker: service.statements.worker.snapshot() };
      const {
        ours,
        engine: engineRun,
        minimum: minimumRun,
      } = await alternate(runSize(concurrency), cpu, {
        ours: (total) => runDeliveries([service.baseUrl], keys, receiver, concurrency, total),
        engine: (total) => runEngineCeiling(temporal.client, concurrency, total),
        minimum: (total) => runMinimum(concurrency, total),
      });
      // The engine's no-op uses none of our database: every statement between is ours.
      const statements = {
        api: statementsSince(service.statements.api, statementsBefore.api),
        worker: statementsSince(service.statements.worker, statementsBefore.worker),
      };
      if (concurrency === 1) {
        oneInFlight = [
          '  a delivery:',
          ...(await breakdown(temporal.client, ours.traces, DELIVERY_MARKS)),
          '  the no-op workflow:',
          ...(await breakdown(temporal.client, engineRun.traces, NOOP_MARKS)),
        ];
      }
      const size = runSize(concurrency);
      const noopOverDelivery = measuredMs(engineRun.cpu) / measuredMs(ours.cpu);
      const cpuGoal =
        concurrency === COST_GOALS.cpuAtConcurrency
          ? ` | goal ≥ ${COST_GOALS.noopOverDeliveryCpu}: ${met(noopOverDelivery >= COST_GOALS.noopOverDeliveryCpu)}`
          : '';
      cpuNotes.push(
        `  ${concurrency} in flight: a delivery ${formatCpu(ours.cpu, size)}; a no-op workflow ${formatCpu(engineRun.cpu, size)}; ` +
          `no-op ÷ delivery ${noopOverDelivery.toFixed(2)} (the rate ratio a machine with nothing else to do would show)${cpuGoal}`,
        `  ${' '.repeat(String(concurrency).length)}              the minimum delivery ${formatCpu(minimumRun.cpu, size)}; no-op ÷ minimum ` +
          `${(measuredMs(engineRun.cpu) / measuredMs(minimumRun.cpu)).toFixed(2)} (a delivery with nothing but a request, a row, a workflow and a signed POST against the same no-op), ` +
          `minimum ÷ delivery ${(measuredMs(minimumRun.cpu) / measuredMs(ours.cpu)).toFixed(2)} (what ours adds to the floor); minimum p50 ${minimumRun.latency.p50.toFixed(0)} ms`,
      );
      const sample = (traces: Trace[]) => traces.slice(-HISTORY_SAMPLE).map((trace) => trace.workflowId);
      const perStatement = (counts: StatementCounts) => `${(counts.statements / size).toFixed(2)} (${(counts.writes / size).toFixed(2)} writes)`;
      const oursSample = sample(ours.traces);
      const engineSample = sample(engineRun.traces);
      const minimumSample = sample(minimumRun.traces);
      countNotes.push(
        `  ${concurrency} in flight, a delivery: ${formatCounts(await countWorkflows(temporal.client, oursSample), oursSample.length)}`,
        `  ${' '.repeat(String(concurrency).length)}              database statements: API ${perStatement(statements.api)}, worker ${perStatement(statements.worker)}`,
        `  ${' '.repeat(String(concurrency).length)}              the no-op workflow: ${formatCounts(await countWorkflows(temporal.client, engineSample), engineSample.length)}`,
        `  ${' '.repeat(String(concurrency).length)}              the minimum delivery: ${formatCounts(await countWorkflows(temporal.client, minimumSample), minimumSample.length)}`,
      );
      if (metricsUrls.length > 0) {
        countNotes.push(
          `  ${' '.repeat(String(concurrency).length)}              Temporal's database requests: a delivery ${formatPersistence(new Map(), ours.persistence, size)}; a no-op workflow ${formatPersistence(new Map(), engineRun.persistence, size)}`,
        );
      }
      const rawRate = await runRawPosts(receiver.url, concurrency);
      const ratio = ours.rate / engineRun.rate;
      const goals = [`ours ÷ engine ≥ ${GOALS.oursOverEngine}: ${met(ratio >= GOALS.oursOverEngine)}`];
      if (concurrency === 1) {
        const above = ours.latency.p50 - engineRun.latency.p50;
        goals.unshift(
          `p50 ≤ ${GOALS.p50AtOneMs} ms: ${met(ours.latency.p50 <= GOALS.p50AtOneMs)}`,
          `p50 ≤ the engine's + ${COST_GOALS.p50AboveEngineAtOneMs} ms: ${met(above <= COST_GOALS.p50AboveEngineAtOneMs)}`,
        );
      }
      console.log(
        `${String(concurrency).padStart(11)} | ${ours.rate.toFixed(0).padStart(5)}/s, ${ours.latency.text.padEnd(40)} | ${`${engineRun.rate.toFixed(0)}/s, p50 ${engineRun.latency.p50.toFixed(0)} ms`.padStart(29)} | ${rawRate.toFixed(0).padStart(17)} | ${ratio.toFixed(2).padStart(13)} | ${goals.join('; ')}`,
      );
    }

    console.log(
      `\nCPU time per item (${cpus().length} cores: at most ${cpus().length * 1000} ms of CPU a second): ours, by process (this process is the API, the worker, the receiver and the load; postgres every backend on the machine), then the whole machine:`,
    );
    for (const note of cpuNotes) console.log(note);
    console.log(
      `\nPer delivery and per no-op workflow, from the histories of the last ${HISTORY_SAMPLE} of each run (actions as Temporal Cloud bills them, heartbeats aside: an attempt heartbeats once a second, so one under a second sends none):`,
    );
    for (const note of countNotes) console.log(note);
    console.log(`  rows a delivery leaves in Postgres: ${await service.rowCosts()}`);

    if (scenarioRuns > 0) console.log(`\n${await runScenarioSteps(service, temporal.client, keys[0]!, receiver)}`);

    if (oneInFlight.length > 0) {
      console.log('\nWhere the time went at 1 in flight (medians of the last 25 of each; server event times from each workflow history):');
      for (const line of oneInFlight) console.log(line);
    }

    if (burstSize > 0) await runBurst(service, temporal.client, receiver, cpu);
    if (scaleOut.length > 0) await runScaleOut(database.url, temporalAddress, temporal.client, receiver);
    if (backlogSize > 0) await runBacklog(database.url, temporalAddress);
    console.log(`\nLoad average after: ${formatLoad()}.`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await stopTemporal();
    await database.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The API and a worker in this process, as `npm start` runs them, each on a database handle of its
 * own so that the statements each sends are counted apart.
 */
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
  const statements = { api: statementCounter(), worker: statementCounter() };
  const apiDatabase = await openDatabase({ databaseUrl, dataDir: scratch, onStatement: statements.api.onStatement });
  const workerDatabase = await openDatabase({ databaseUrl, dataDir: scratch, onStatement: statements.worker.onStatement });
  const temporal = await connectTemporal(temporalAddress, 'default');
  // The API and the worker each get their own connection pool, so the bench counts each one's statements.
  const worker = await startProcess({ config, logger, database: workerDatabase, temporal, temporalAddress, roles: { api: false, worker: true } });
  const api = await startProcess({ config, logger, database: apiDatabase, temporal, temporalAddress, roles: { api: true, worker: false } });
  const server = api.server!;
  return {
    baseUrl: `http://127.0.0.1:${server.port}`,
    statements,
    async tenant(webhookUrl: string) {
      const organization = await createOrganization(apiDatabase.db, { name: 'Bench Health (synthetic)', webhookUrl });
      return issueApiKey(apiDatabase.db, organization.id);
    },
    /** What the deliveries so far left in Postgres, per delivery: rows, their bytes, and the tables' size on disk with indexes. */
    async rowCosts(): Promise<string> {
      const [row] = (await apiDatabase.db.execute(sql`
        select
          (select count(*) from ${deliveries})::float8 as deliveries,
          (select count(*) from ${deliveryAttempts})::float8 as attempts,
          (select coalesce(avg(pg_column_size(d.*)), 0) from ${deliveries} d)::float8 as delivery_row_bytes,
          (select coalesce(avg(octet_length(${deliveries.envelopeBody})), 0) from ${deliveries})::float8 as envelope_bytes,
          (select coalesce(avg(pg_column_size(a.*)), 0) from ${deliveryAttempts} a)::float8 as attempt_row_bytes,
          (pg_total_relation_size('deliveries') + pg_total_relation_size('delivery_attempts'))::float8 as on_disk
      `)) as unknown as Record<string, number>[];
      const r = row!;
      return (
        `${(r.attempts! / r.deliveries!).toFixed(2)} attempt row(s) per delivery row; a delivery row ${r.delivery_row_bytes!.toFixed(0)} B ` +
        `(envelope ${r.envelope_bytes!.toFixed(0)} B), an attempt row ${r.attempt_row_bytes!.toFixed(0)} B; both tables with their indexes ` +
        `${(r.on_disk! / r.deliveries! / 1024).toFixed(2)} KiB on disk per delivery (${r.deliveries} deliveries, before any vacuum)`
      );
    },
    async stop() {
      for (const { run } of [...api.stops, ...worker.stops]) await run();
      await temporal.connection.close();
      await apiDatabase.close();
      await workerDatabase.close();
    },
  };
}

type Service = Awaited<ReturnType<typeof startService>>;

/**
 * Closed loop: each of `concurrency` clients triggers a delivery (round robin over the APIs and the
 * organizations' keys) and waits for its receipt before the next.
 */
async function runDeliveries(
  baseUrls: string[],
  keys: string[],
  receiver: BenchReceiver,
  concurrency: number,
  total = runSize(concurrency),
  workflowIdOf = deliveryWorkflowId,
) {
  const latencies: number[] = [];
  const traces: Trace[] = [];
  const started = performance.now();
  await pool(total, concurrency, async (index) => {
    const sent = performance.now();
    const response = await fetch(`${baseUrls[index % baseUrls.length]}/v1/webhooks/trigger-mock-event`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys[index % keys.length]}` },
    });
    if (response.status !== 202) throw new Error(`trigger answered ${response.status}: ${await response.text()}`);
    const { id } = (await response.json()) as { id: string };
    await receiver.arrival(id);
    const received = receiver.receivedAt.get(id)!;
    latencies.push(received - sent);
    traces.push({ workflowId: workflowIdOf(id), sentMs: performance.timeOrigin + sent, endMs: performance.timeOrigin + received });
  });
  const seconds = (performance.now() - started) / 1000;
  return { rate: total / seconds, latency: summary(latencies), traces, latencies, seconds };
}

/**
 * One organization's burst (issue 32): `burstSize` deliveries triggered for one organization as fast
 * as the API takes them (50 triggers in flight, none waiting for its receipt), while a second
 * organization sends its light load beside it, one delivery at a time until the burst has arrived;
 * its latency alone first, for comparison. The activity failures are read from every history of
 * both: an attempt past its organization's slots waits for one, it never fails to be retried.
 */
async function runBurst(service: Service, client: Client, receiver: BenchReceiver, cpu: ReturnType<typeof cpuMeter>) {
  const burstKey = (await service.tenant(receiver.url)).key;
  const lightKey = (await service.tenant(receiver.url)).key;
  let retriedTriggers = 0;
  /** As a partner's client sends it: with an Idempotency-Key, sent again with it when the API answers 503 (Temporal slower than its deadline). */
  const trigger = async (key: string) => {
    const headers = { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() };
    for (;;) {
      const response = await fetch(`${service.baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers });
      if (response.status === 202) return ((await response.json()) as { id: string }).id;
      if (response.status !== 503) throw new Error(`trigger answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
      retriedTriggers += 1;
    }
  };
  /**
   * One light delivery after another until `until` settles: their ids, trigger→receipt latencies, and
   * those split at the API's answer (the API's queue, which no Temporal fairness reaches, then the engine and the worker),
   * and at `accepted`: those sent while the burst's triggers were still being accepted, and after.
   */
  const lightLoad = async (until: Promise<unknown>, accepted?: Promise<unknown>) => {
    let burstAccepted = false;
    void accepted?.finally(() => {
      burstAccepted = true;
    });
    const duringTraces: Trace[] = [];
    let done = false;
    void until.finally(() => {
      done = true;
    });
    const latencies: number[] = [];
    const accepting: number[] = [];
    const afterAccepted: number[] = [];
    const ids: string[] = [];
    const traces: Trace[] = [];
    while (!done) {
      const sent = performance.now();
      const id = await trigger(lightKey);
      const accepted = performance.now();
      await receiver.arrival(id);
      const received = receiver.receivedAt.get(id)!;
      latencies.push(received - sent);
      accepting.push(accepted - sent);
      afterAccepted.push(received - accepted);
      ids.push(id);
      const trace = { workflowId: deliveryWorkflowId(id), sentMs: performance.timeOrigin + sent, endMs: performance.timeOrigin + received };
      traces.push(trace);
      if (!burstAccepted) duringTraces.push(trace);
    }
    const p50 = (values: number[]) => summary(values).p50.toFixed(0);
    const afterTraces = traces.slice(duringTraces.length);
    const took = (each: Trace[]) => each.map((trace) => trace.endMs - trace.sentMs);
    return {
      latency: summary(latencies),
      ids,
      traces,
      duringTraces,
      split: `(the API's answer p50 ${p50(accepting)} ms, then to the receiver p50 ${p50(afterAccepted)} ms)`,
      phases: accepted
        ? `while the burst's triggers were accepted (${duringTraces.length}): p50 ${p50(took(duringTraces))} ms; after (${afterTraces.length}), while its deliveries ran: p50 ${p50(took(afterTraces))} ms`
        : '',
    };
  };

  const alone = await lightLoad(new Promise((resolve) => setTimeout(resolve, 5_000)));
  const spent = cpu.start();
  const started = performance.now();
  const burstIds: string[] = [];
  const burstAccepted = pool(burstSize, 50, async () => {
    burstIds.push(await trigger(burstKey));
  });
  const burst = burstAccepted.then(() => Promise.all(burstIds.map((id) => receiver.arrival(id))));
  const beside = await lightLoad(burst, burstAccepted);
  await burst;
  const seconds = (performance.now() - started) / 1000;
  const burstCpu = spent();
  const burstCounts = await countWorkflows(client, burstIds.map(deliveryWorkflowId));
  const lightCounts = await countWorkflows(client, beside.ids.map(deliveryWorkflowId));
  const failuresPerDelivery = (burstCounts.activityFailures + lightCounts.activityFailures) / (burstIds.length + beside.ids.length);
  const failureCauses = failuresPerDelivery > 0 ? await activityFailureCauses(client, [...burstIds, ...beside.ids].map(deliveryWorkflowId)) : [];
  const ratio = beside.latency.p50 / alone.latency.p50;
  console.log(
    `\nOne organization's burst: ${burstSize} deliveries triggered at once (50 triggers in flight), a second organization's light load beside it (one delivery at a time); load average ${formatLoad()}.`,
  );
  console.log(
    `  the burst: all received in ${seconds.toFixed(1)} s (${(burstSize / seconds).toFixed(0)}/s); CPU per delivery ${formatCpu(burstCpu, burstSize + beside.ids.length)}; triggers sent again after a 503: ${retriedTriggers}`,
  );
  console.log(
    `  activity failures per delivery (every history of both organizations: ${burstCounts.activityFailures} in the burst, ${lightCounts.activityFailures} in the light load): ${failuresPerDelivery.toFixed(3)} | goal ${BURST_GOALS.activityFailuresPerDelivery}: ${met(failuresPerDelivery <= BURST_GOALS.activityFailuresPerDelivery)}`,
  );
  for (const [cause, count] of failureCauses) console.log(`    ${count} × ${cause}`);
  console.log(`  the light load alone (${alone.ids.length} deliveries): ${alone.latency.text} ${alone.split}`);
  console.log(
    `  the light load beside the burst (${beside.ids.length}): ${beside.latency.text} ${beside.split} | p50 beside ÷ alone ${ratio.toFixed(2)}, goal ≤ ${BURST_GOALS.lightBesideOverAlone}: ${met(ratio <= BURST_GOALS.lightBesideOverAlone)}`,
  );
  console.log(`    ${beside.phases}`);
  console.log("  where the light load's time went, alone (medians of all; server event times from each workflow history):");
  for (const line of await breakdown(client, alone.traces, DELIVERY_MARKS, alone.traces.length)) console.log(line);
  console.log('  and beside the burst:');
  for (const line of await breakdown(client, beside.traces, DELIVERY_MARKS, beside.traces.length)) console.log(line);
  if (beside.duringTraces.length > 0) {
    console.log("  of which those sent while the burst's triggers were accepted:");
    for (const line of await breakdown(client, beside.duringTraces, DELIVERY_MARKS, beside.duringTraces.length)) console.log(line);
  }
}

/** Why activity attempts failed, most frequent first: each last failure a retry carried and each final failure or timeout. */
async function activityFailureCauses(client: Client, workflowIds: string[]): Promise<[string, number][]> {
  const causes = new Map<string, number>();
  const note = (cause: string) => causes.set(cause, (causes.get(cause) ?? 0) + 1);
  for (const workflowId of workflowIds) {
    for (const event of (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? []) {
      const started = event.activityTaskStartedEventAttributes;
      if (started?.lastFailure) note(`retried after: ${started.lastFailure.message}`);
      const failure = event.activityTaskFailedEventAttributes?.failure ?? event.activityTaskTimedOutEventAttributes?.failure;
      if (failure) note(`failed: ${failure.message}`);
    }
  }
  return [...causes].sort((a, b) => b[1] - a[1]);
}

/**
 * What a scenario step costs: prior-authorization runs at accelerated pace through the API, then
 * each run's own history (timers, the step activity, progress records, child starts) and the
 * statements both database handles sent meanwhile, per step; the deliveries the steps emit are
 * counted as deliveries above.
 */
async function runScenarioSteps(service: Service, client: Client, key: string, receiver: BenchReceiver): Promise<string> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const before = { api: service.statements.api.snapshot(), worker: service.statements.worker.snapshot() };
  const runIds: string[] = [];
  for (let index = 0; index < scenarioRuns; index += 1) {
    const response = await fetch(`${service.baseUrl}/v1/sandbox/scenarios/prior_auth_approved_after_pend/run`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ pace: { mode: 'accelerated', time_scale: 100_000 } }),
    });
    if (response.status !== 202) throw new Error(`scenario run answered ${response.status}: ${await response.text()}`);
    runIds.push(((await response.json()) as { id: string }).id);
  }
  let steps = 0;
  let emitted = 0;
  for (const id of runIds) {
    await client.workflow.getHandle(scenarioWorkflowId(id)).result();
    const run = (await (await fetch(`${service.baseUrl}/v1/sandbox/scenarios/runs/${id}`, { headers })).json()) as {
      steps: { status: string; emitted: { delivery_id: string }[] }[];
    };
    const deliveryIds = run.steps.flatMap((step) => step.emitted.map((event) => event.delivery_id));
    await Promise.all(deliveryIds.map((deliveryId) => receiver.arrival(deliveryId)));
    steps += run.steps.filter((step) => step.status === 'done').length;
    emitted += deliveryIds.length;
  }
  const statements = {
    api: statementsSince(service.statements.api, before.api),
    worker: statementsSince(service.statements.worker, before.worker),
  };
  const counts = await countWorkflows(
    client,
    runIds.map((id) => scenarioWorkflowId(id)),
  );
  const per = (value: number) => (value / steps).toFixed(1);
  return (
    `Per scenario step (${scenarioRuns} prior-auth runs at ×100,000, ${steps} steps emitting ${emitted} deliveries): the run's own workflow ${formatCounts(counts, steps)};\n` +
    `  database statements with the step's deliveries (and one status read per run): API ${per(statements.api.statements)}, worker ${per(statements.worker.statements)} (${per(statements.api.writes + statements.worker.writes)} writes)`
  );
}

/**
 * The same closed loop with the API and the worker as the separate processes production runs
 * (`npm run start:api`, `npm run start:worker`), `apis` × `workers` of them, the load spread over the
 * APIs round robin; each process's CPU read from the kernel. The engine's no-op workflow runs at the
 * same concurrency after each row.
 */
async function runScaleOut(databaseUrl: string, temporalAddress: string, client: Client, receiver: BenchReceiver) {
  const database = await openDatabase({ databaseUrl, dataDir: scratch });
  try {
    const keys: string[] = [];
    for (let index = 0; index < organizations; index += 1) {
      const organization = await createOrganization(database.db, { name: 'Bench Scale-out (synthetic)', webhookUrl: receiver.url });
      keys.push((await issueApiKey(database.db, organization.id)).key);
    }
    const size = runSize(scaleConcurrency);
    console.log(
      `\nScale-out on ${topology}: API and worker as separate processes, ${scaleConcurrency} deliveries in flight, ${size} per row; load average ${formatLoad()}.`,
    );
    console.log(
      'APIs × workers | ours: deliveries/s, trigger→receipt latency       | engine (no-op wf/s) | ours ÷ engine | CPU per delivery, by process',
    );
    for (const shape of scaleOut) {
      const taskQueue = `bench-scale-${shape.apis}x${shape.workers}`;
      const children: ChildProcess[] = [];
      try {
        const workers = await Promise.all(
          Array.from({ length: shape.workers }, () => spawnProcess('start-worker.ts', databaseUrl, temporalAddress, taskQueue, {})),
        );
        children.push(...workers);
        await waitForPollers(client, taskQueue, shape.workers);
        const apis = await Promise.all(
          Array.from({ length: shape.apis }, async () => {
            const port = await freePort();
            const child = spawnProcess('start-api.ts', databaseUrl, temporalAddress, taskQueue, { PORT: String(port) });
            children.push(child);
            await waitForHealth(`http://127.0.0.1:${port}`, child);
            return { child, url: `http://127.0.0.1:${port}` };
          }),
        );
        const urls = apis.map((api) => api.url);
        await runDeliveries(urls, keys, receiver, 5, 50);
        const cpu = cpuMeter(() => ({
          API: apis.map((api) => api.child.pid!),
          worker: workers.map((worker) => worker.pid!),
          ...temporalPids,
          postgres: postgresPids(),
          'bench (load, receiver)': [process.pid],
        }));
        const { ours, engine } = await alternate(size, cpu, {
          ours: (total) => runDeliveries(urls, keys, receiver, scaleConcurrency, total),
          engine: (total) => runEngineCeiling(client, scaleConcurrency, total),
        });
        console.log(
          `${`${shape.apis} × ${shape.workers}`.padStart(14)} | ${ours.rate.toFixed(0).padStart(5)}/s, ${ours.latency.text.padEnd(40)} | ${`${engine.rate.toFixed(0)}/s`.padStart(19)} | ${(ours.rate / engine.rate).toFixed(2).padStart(13)} | ${formatCpu(ours.cpu, size)}`,
        );
      } finally {
        await Promise.all(children.map(stopProcess));
      }
    }
  } finally {
    await database.close();
  }
}

/** `bin/<entry>` as a child process on the shared database and Temporal. */
function spawnProcess(entry: string, databaseUrl: string, temporalAddress: string, taskQueue: string, extra: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(`../bin/${entry}`, import.meta.url))], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WEBHOOK_RETRY_SCHEDULE: '30s,2m,10m,30m',
      RATE_LIMIT_PER_MINUTE: '10000000',
      DATA_DIR: join(scratch, 'processes'),
      HOST: '127.0.0.1',
      HL7_MLLP_PORT: 'off',
      LOG_LEVEL: 'warn',
      ...extra,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function waitForHealth(baseUrl: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the API process exited with ${child.exitCode}`);
    const healthy = await fetch(`${baseUrl}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Until `count` worker processes poll the task queue for workflow tasks. */
async function waitForPollers(client: Client, taskQueue: string, count: number): Promise<void> {
  for (;;) {
    const described = await client.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    if (new Set((described.pollers ?? []).map((poller) => poller.identity)).size >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
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
  const seconds = (performance.now() - started) / 1000;
  return { rate: total / seconds, latency: summary(latencies), traces, latencies, seconds };
}

type LoopRun = Awaited<ReturnType<typeof runEngineCeiling>>;

/**
 * Ours, the no-op, the minimum delivery, then back, twice (see alternate): each side's blocks sit at the
 * same mean position, so a steady drift falls on all alike. A row without the minimum keeps the order
 * of the other two: ours, no-op, no-op, ours, twice.
 */
const ALTERNATION = ['ours', 'engine', 'minimum', 'minimum', 'engine', 'ours', 'ours', 'engine', 'minimum', 'minimum', 'engine', 'ours'] as const;
type Side = (typeof ALTERNATION)[number];

/**
 * The sides given, in alternating blocks in ALTERNATION's order, a quarter of the row's size each; each
 * side's CPU, Temporal's database requests (a cluster's), rate and latency over its four blocks. One after
 * the other, whichever side ran later paid for the runs the earlier left behind: the dev server's CPU per
 * workflow grows as runs accumulate in it (docs/benchmarks.md, 28 November, third session).
 */
async function alternate<S extends Side>(size: number, cpu: ReturnType<typeof cpuMeter>, sides: Record<S, (total: number) => Promise<LoopRun>>) {
  const given = Object.keys(sides) as S[];
  const order = ALTERNATION.filter((side): side is S => (given as Side[]).includes(side));
  const tally = () => ({ cpu: {} as Record<string, number>, persistence: new Map<string, number>(), runs: [] as LoopRun[] });
  const spent = Object.fromEntries(given.map((side) => [side, tally()])) as Record<S, ReturnType<typeof tally>>;
  const blocks = order.length / given.length;
  for (const side of order) {
    // The side's last block takes what the others left, so a size not divisible by four still runs in full.
    const done = spent[side].runs.reduce((sum, run) => sum + run.traces.length, 0);
    const total = spent[side].runs.length === blocks - 1 ? size - done : Math.floor(size / blocks);
    const persistenceBefore = await persistenceRequests(metricsUrls);
    const stop = cpu.start();
    spent[side].runs.push(await sides[side](total));
    for (const [name, ms] of Object.entries(stop())) spent[side].cpu[name] = (spent[side].cpu[name] ?? 0) + ms;
    for (const [operation, count] of await persistenceRequests(metricsUrls)) {
      const delta = count - (persistenceBefore.get(operation) ?? 0);
      spent[side].persistence.set(operation, (spent[side].persistence.get(operation) ?? 0) + delta);
    }
  }
  const joined = ({ cpu: sideCpu, persistence, runs }: ReturnType<typeof tally>) => {
    const seconds = runs.reduce((sum, run) => sum + run.seconds, 0);
    const latencies = runs.flatMap((run) => run.latencies);
    return { cpu: sideCpu, persistence, rate: size / seconds, latency: summary(latencies), traces: runs.flatMap((run) => run.traces) };
  };
  return Object.fromEntries(given.map((side) => [side, joined(spent[side])])) as Record<S, ReturnType<typeof joined>>;
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
