import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createApp } from '../api/app';
import { loadFhirStore } from '../fixtures/store';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { createOrganization, issueApiKey } from '../platform/organizations';
import { VERSION } from '../platform/version';
import { listen } from '../runtime/services';
import { connectTemporal, ensureSearchAttributes, startDevServer } from '../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { startWorker } from '../runtime/worker';
import { freePort } from '../test/support/ports';
import { createScratchDatabase } from '../test/support/scratch-database';
import { signEnvelope } from '../webhooks/signing';

/**
 * `npm run bench:deliveries`: N deliveries through the API to a local receiver at several
 * concurrencies (closed loop: that many deliveries in flight at once), beside the ceilings of the engine (a one-activity no-op workflow) and of a raw
 * signed POST loop; then a backlog of deliveries waiting in backoff. Everything runs on this
 * machine: a fresh Temporal dev server, a fresh Postgres database, loopback only.
 *
 * BENCH_DELIVERIES (2000), BENCH_CONCURRENCY (10,50,200), BENCH_BACKLOG (10000),
 * BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const deliveriesPerRun = Number(process.env.BENCH_DELIVERIES ?? 2000);
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '10,50,200').split(',').map(Number);
const backlogSize = Number(process.env.BENCH_BACKLOG ?? 10_000);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const logger = createLogger('warn', { pretty: false });
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-'));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function summary(latencies: number[]) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(0)} ms, p95 ${percentile(sorted, 95).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms`;
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
      `Delivery benchmark: ${deliveriesPerRun} deliveries per run, concurrency ${concurrencies.join(', ')}; backlog ${backlogSize}. 2 cores.`,
    );
    const receiver = await startBenchReceiver(200);
    cleanups.push(receiver.close);
    const service = await startService(database.url, temporalServer.address, 'bench-deliveries', '30s,2m,10m,30m');
    cleanups.push(service.stop);
    const tenant = await service.tenant(receiver.url);

    const engine = await startNoopWorker(temporalServer.address);
    cleanups.push(engine.stop);

    console.log(
      '\nconcurrency | ours: deliveries/s, trigger→receipt latency       | engine ceiling (no-op wf/s) | raw signed POST/s | ours ÷ engine | ours ÷ raw',
    );
    for (const concurrency of concurrencies) {
      const ours = await runDeliveries(service.baseUrl, tenant.key, receiver, concurrency);
      const engineRate = await runEngineCeiling(temporal.client, concurrency);
      const rawRate = await runRawPosts(receiver.url, concurrency);
      console.log(
        `${String(concurrency).padStart(11)} | ${ours.rate.toFixed(0).padStart(5)}/s, ${ours.latency.padEnd(40)} | ${engineRate.toFixed(0).padStart(27)} | ${rawRate.toFixed(0).padStart(17)} | ${(ours.rate / engineRate).toFixed(2).padStart(13)} | ${(ours.rate / rawRate).toFixed(3).padStart(10)}`,
      );
    }

    await runBacklog(database.url, temporalServer.address);
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
  });
  const database = await openDatabase({ databaseUrl, dataDir: scratch });
  const temporal = await connectTemporal(temporalAddress, 'default');
  const worker = await startWorker({ address: temporalAddress, config, db: database.db });
  const server = await listen(
    createApp({ config, db: database.db, temporal: temporal.client, logger, version: VERSION, fhirStore: loadFhirStore() }),
    '127.0.0.1',
    0,
    5,
  );
  return {
    baseUrl: `http://127.0.0.1:${server.port}`,
    async tenant(webhookUrl: string) {
      const organization = await createOrganization(database.db, { name: 'Bench Health (synthetic)', webhookUrl });
      return issueApiKey(database.db, organization.id);
    },
    async stop() {
      await server.close();
      await worker.stop();
      await temporal.connection.close();
      await database.close();
    },
  };
}

/** Closed loop: each of `concurrency` clients triggers a delivery and waits for its receipt before the next. */
async function runDeliveries(baseUrl: string, key: string, receiver: Awaited<ReturnType<typeof startBenchReceiver>>, concurrency: number) {
  const latencies: number[] = [];
  const started = performance.now();
  await pool(deliveriesPerRun, concurrency, async () => {
    const sent = performance.now();
    const response = await fetch(`${baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    if (response.status !== 202) throw new Error(`trigger answered ${response.status}: ${await response.text()}`);
    const { id } = (await response.json()) as { id: string };
    await receiver.arrival(id);
    latencies.push(receiver.receivedAt.get(id)! - sent);
  });
  const elapsedSeconds = (performance.now() - started) / 1000;
  return { rate: deliveriesPerRun / elapsedSeconds, latency: summary(latencies) };
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
async function runEngineCeiling(client: Client, concurrency: number): Promise<number> {
  const started = performance.now();
  await pool(deliveriesPerRun, concurrency, async () => {
    await client.workflow.execute('noopWorkflow', { taskQueue: 'bench-noop', workflowId: `noop-${randomUUID()}` });
  });
  return deliveriesPerRun / ((performance.now() - started) / 1000);
}

async function runRawPosts(url: string, concurrency: number): Promise<number> {
  const body = JSON.stringify({
    id: 'evt_bench',
    event: 'adt.patient.admitted',
    resource: { resourceType: 'Encounter', status: 'in-progress', class: { code: 'IMP' } },
  });
  const started = performance.now();
  await pool(deliveriesPerRun, concurrency, async () => {
    const headers = signEnvelope({
      deliveryId: `dlv_raw_${randomUUID()}`,
      body,
      secret: 'sbx_whsec_bench',
      timestampSeconds: Math.floor(Date.now() / 1000),
    });
    const response = await fetch(url, { method: 'POST', headers, body });
    await response.arrayBuffer();
  });
  return deliveriesPerRun / ((performance.now() - started) / 1000);
}

/** Deliveries to a receiver that always fails, each left waiting 30 min for its first retry. */
async function runBacklog(databaseUrl: string, temporalAddress: string) {
  const failing = await startBenchReceiver(503);
  const service = await startService(databaseUrl, temporalAddress, 'bench-backlog', '30m');
  try {
    const tenant = await service.tenant(failing.url);
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    await pool(backlogSize, 50, async () => {
      const response = await fetch(`${service.baseUrl}/v1/webhooks/trigger-mock-event`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      if (response.status !== 202) throw new Error(`trigger answered ${response.status}`);
      await response.arrayBuffer();
    });
    while (failing.receivedAt.size < backlogSize) await new Promise((resolve) => setTimeout(resolve, 200));
    const fillSeconds = (performance.now() - started) / 1000;

    const listLatencies: number[] = [];
    const triggerLatencies: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      let sent = performance.now();
      await (
        await fetch(`${service.baseUrl}/v1/webhooks/deliveries?status=retrying&limit=50`, { headers: { authorization: `Bearer ${tenant.key}` } })
      ).arrayBuffer();
      listLatencies.push(performance.now() - sent);
      sent = performance.now();
      await (
        await fetch(`${service.baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` } })
      ).arrayBuffer();
      triggerLatencies.push(performance.now() - sent);
    }
    const memory = process.memoryUsage();
    console.log(`\nBacklog: ${backlogSize} deliveries waiting in backoff (filled in ${fillSeconds.toFixed(1)} s).`);
    console.log(
      `  process (API + worker) RSS ${(memory.rss / 2 ** 20).toFixed(0)} MiB (+${((memory.rss - rssBefore) / 2 ** 20).toFixed(0)} MiB while filling), heap used ${(memory.heapUsed / 2 ** 20).toFixed(0)} MiB`,
    );
    console.log(`  GET /v1/webhooks/deliveries?status=retrying&limit=50: ${summary(listLatencies)}`);
    console.log(`  POST /v1/webhooks/trigger-mock-event:               ${summary(triggerLatencies)}`);
  } finally {
    await service.stop();
    await failing.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
