import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PresentedRun } from '../api/scenarios/presenter';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { createOrganization, issueApiKey } from '../platform/organizations';
import { startProcess } from '../runtime/process';
import { connectTemporal, startDevServer } from '../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { freePort } from '../test/support/ports';
import { createScratchDatabase } from '../test/support/scratch-database';

/**
 * `npm run bench:scenarios`: scenario runs through the API, beside the delivery engine on the same
 * machine: how many runs start per second, how long after a step comes due its event reaches the
 * receiver at accelerated pace, and what 1,000 runs parked in multi-day timers cost the worker.
 * Everything runs here: a fresh Temporal dev server, a fresh Postgres database, loopback only.
 *
 * BENCH_RUNS (300), BENCH_CONCURRENCY (20), BENCH_ACCELERATED_RUNS (40), BENCH_PARKED (1000),
 * BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const runsToStart = Number(process.env.BENCH_RUNS ?? 300);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
const acceleratedRuns = Number(process.env.BENCH_ACCELERATED_RUNS ?? 40);
const parkedRuns = Number(process.env.BENCH_PARKED ?? 1000);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const logger = createLogger('warn', { pretty: false });
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-scenarios-'));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(0)} ms, p95 ${percentile(sorted, 95).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms`;
}

async function pool(total: number, width: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, total) }, async () => {
      while (next < total) await task(next++);
    }),
  );
}

/** A receiver that answers at once and notes (wall clock) when each delivery id first arrived. */
async function startBenchReceiver() {
  const receivedAt = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['x-service-delivery-id']);
      if (!receivedAt.has(id)) receivedAt.set(id, Date.now());
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    receivedAt,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main() {
  const cliPath = await ensureTemporalCli(logger, temporalCliOptions(loadConfig()));
  const temporalServer = await startDevServer(
    { cliPath, port: await freePort(), uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
    logger,
  );
  const scratchDatabase = await createScratchDatabase(adminUrl, 'sandbox_bench');
  const receiver = await startBenchReceiver();
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: scratchDatabase.url,
    TEMPORAL_ADDRESS: temporalServer.address,
    TEMPORAL_TASK_QUEUE: 'bench-scenarios',
    RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: '0',
    SHUTDOWN_GRACE_SECONDS: '5',
    HL7_MLLP_PORT: 'off',
  });
  const database = await openDatabase({ databaseUrl: scratchDatabase.url, dataDir: scratch });
  const temporal = await connectTemporal(temporalServer.address, 'default');
  const running = await startProcess({
    config,
    logger,
    database,
    temporal,
    temporalAddress: temporalServer.address,
    roles: { api: true, worker: true },
  });
  const server = running.server!;
  const baseUrl = `http://127.0.0.1:${server.port}`;
  const organization = await createOrganization(database.db, { name: 'Bench Health (synthetic)', webhookUrl: receiver.url });
  const { key } = await issueApiKey(database.db, organization.id);
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  // Runs and deliveries alike: the bench reads only their ids and steps.
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await response.json()) as PresentedRun;
    if (response.status !== 202) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(json)}`);
    return json;
  };
  const get = async (path: string) => (await (await fetch(`${baseUrl}${path}`, { headers })).json()) as PresentedRun;

  try {
    console.log(`Scenario benchmark on ${availableParallelism()} cores: Temporal dev server, Postgres, API, worker and receiver together.\n`);

    // 1. The delivery engine alone, for comparison: mock events triggered at the same concurrency.
    let started = performance.now();
    const triggerIds: { id: string; sent: number }[] = [];
    await pool(runsToStart, concurrency, async () => {
      const sent = Date.now();
      const delivery = await post('/v1/webhooks/trigger-mock-event', {});
      triggerIds.push({ id: delivery.id, sent });
    });
    const deliveriesPerSecond = runsToStart / ((performance.now() - started) / 1000);
    while (triggerIds.some(({ id }) => !receiver.receivedAt.has(id))) await new Promise((resolve) => setTimeout(resolve, 100));
    const triggerToReceipt = triggerIds.map(({ id, sent }) => receiver.receivedAt.get(id)! - sent);
    console.log(
      `Delivery engine, same loop: ${deliveriesPerSecond.toFixed(0)} mock-event deliveries started/s; trigger → receipt ${summary(triggerToReceipt)}`,
    );

    // 2. Runs started per second: manual pace, so each run emits its first step and parks.
    started = performance.now();
    const startLatencies: number[] = [];
    await pool(runsToStart, concurrency, async () => {
      const sent = performance.now();
      await post('/v1/sandbox/scenarios/lab_order_to_result/run', { pace: { mode: 'manual' } });
      startLatencies.push(performance.now() - sent);
    });
    const runsPerSecond = runsToStart / ((performance.now() - started) / 1000);
    console.log(
      `Runs started: ${runsToStart} at concurrency ${concurrency}: ${runsPerSecond.toFixed(0)} runs/s (${(runsPerSecond / deliveriesPerSecond).toFixed(2)} × the deliveries/s above); POST …/run answered in ${summary(startLatencies)}`,
    );
    // Their first steps' events arrive before the next measurement starts.
    while (receiver.receivedAt.size < 2 * runsToStart) await new Promise((resolve) => setTimeout(resolve, 100));

    // 3. Step-to-receipt at accelerated pace: each event's arrival after its step came due.
    const accelerated: string[] = [];
    await pool(acceleratedRuns, concurrency, async () => {
      const run = await post('/v1/sandbox/scenarios/prior_auth_approved_after_pend/run', { pace: { mode: 'accelerated', time_scale: 100_000 } });
      accelerated.push(run.id);
    });
    const finished: PresentedRun[] = [];
    for (const id of accelerated) {
      for (;;) {
        const run = await get(`/v1/sandbox/scenarios/runs/${id}`);
        if (run.status !== 'running') {
          finished.push(run);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    const stepToReceipt: number[] = [];
    for (const run of finished) {
      for (const step of run.steps) {
        const dueAt = Date.parse(step.due_at ?? run.created_at);
        for (const { delivery_id } of step.emitted) {
          const receivedAt = receiver.receivedAt.get(delivery_id);
          if (receivedAt !== undefined) stepToReceipt.push(receivedAt - dueAt);
        }
      }
    }
    console.log(
      `Step → receipt at accelerated pace (×100,000, ${acceleratedRuns} prior-auth runs at once, ${stepToReceipt.length} events): ${summary(stepToReceipt)}`,
    );

    // 4. Runs parked in multi-day timers: realtime pace, each waiting ten minutes for its second step (then days).
    const before = process.memoryUsage();
    started = performance.now();
    await pool(parkedRuns, concurrency, async () => {
      await post('/v1/sandbox/scenarios/prior_auth_approved_after_pend/run', { pace: { mode: 'realtime' } });
    });
    const fillSeconds = (performance.now() - started) / 1000;
    const listLatencies: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      const sent = performance.now();
      await get('/v1/sandbox/scenarios/runs?status=running&limit=50');
      listLatencies.push(performance.now() - sent);
    }
    const memory = process.memoryUsage();
    console.log(
      `${parkedRuns} runs parked in timers (started in ${fillSeconds.toFixed(1)} s): process (API + worker) RSS ${(memory.rss / 2 ** 20).toFixed(0)} MiB ` +
        `(${(before.rss / 2 ** 20).toFixed(0)} MiB before), heap used ${(memory.heapUsed / 2 ** 20).toFixed(0)} MiB (${(before.heapUsed / 2 ** 20).toFixed(0)} MiB before); ` +
        `GET …/runs?status=running ${summary(listLatencies)}`,
    );
  } finally {
    for (const { run } of running.stops) await run();
    await temporal.connection.close();
    await database.close();
    await receiver.close();
    await temporalServer.stop();
    await scratchDatabase.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
