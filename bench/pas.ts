import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Bundle, Claim } from 'fhir/r4';
import { checkPasRequest } from '../claims/pas/request';
import { loadProfileValidator } from '../fhir/validation/profile-validator';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { createOrganization, issueApiKey } from '../platform/organizations';
import { startProcess } from '../runtime/process';
import { connectTemporal, startDevServer } from '../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { systemToken } from '../test/support/backend-services';
import { pasExamples } from '../test/support/fhir-validator';
import { freePort } from '../test/support/ports';
import { createScratchDatabase } from '../test/support/scratch-database';
import { call, type TestService } from '../test/support/service';

/**
 * `npm run bench:pas`: Da Vinci PAS `Claim/$submit` through the API with a system token: how many
 * submissions with an immediate decision it answers per second, their latency, and how long checking
 * a 50 KiB request Bundle holds the API's event loop (the check runs on a worker thread; the same
 * check in place is timed too, for what the thread saves). Goals: p99 under 150 ms, no event-loop
 * block over 100 ms. Everything runs here: a fresh Temporal dev server and Postgres database.
 *
 * BENCH_SUBMISSIONS (200), BENCH_CONCURRENCY (4), BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const submissions = Number(process.env.BENCH_SUBMISSIONS ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 4);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const logger = createLogger('warn', { pretty: false });
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-pas-'));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function pool(total: number, width: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, total) }, async () => {
      while (next < total) await task(next++);
    }),
  );
}

/** The package's referral request, its non-Claim resources repeated under new ids until the Bundle is at least `bytes` long. */
function paddedRequest(template: Bundle, bytes: number): Bundle {
  const bundle = structuredClone(template);
  const extras = template.entry!.slice(1);
  for (let copy = 1; JSON.stringify(bundle).length < bytes; copy += 1) {
    for (const entry of extras) {
      const resource = { ...structuredClone(entry.resource!), id: `${entry.resource!.id}-${copy}` };
      bundle.entry!.push({ fullUrl: `${entry.fullUrl}-${copy}`, resource });
    }
  }
  return bundle;
}

async function main() {
  const loadBefore = loadavg();
  const cliPath = await ensureTemporalCli(logger, temporalCliOptions(loadConfig()));
  const temporalServer = await startDevServer(
    { cliPath, port: await freePort(), uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
    logger,
  );
  const scratchDatabase = await createScratchDatabase(adminUrl, 'sandbox_bench');
  // A port known beforehand: token requests are checked against the public base URL.
  const port = await freePort();
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: scratchDatabase.url,
    TEMPORAL_ADDRESS: temporalServer.address,
    TEMPORAL_TASK_QUEUE: 'bench-pas',
    RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
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
  const baseUrl = `http://127.0.0.1:${running.server!.port}`;
  const service = { baseUrl, call: (path: string, options?: Parameters<typeof call>[2]) => call(baseUrl, path, options) } as unknown as TestService;
  const organization = await createOrganization(database.db, { name: 'Bench PAS Clinic (synthetic)', webhookUrl: null });
  const { key } = await issueApiKey(database.db, organization.id);
  const { accessToken } = await systemToken(service, 'system/Claim.c', key);
  const template = (await pasExamples()).find((resource) => resource.id === 'ReferralAuthorizationBundleExample') as unknown as Bundle;
  let counter = 0;
  const submit = async (bundle: Bundle) => {
    counter += 1;
    (bundle.entry![0]!.resource as Claim).identifier![0]!.value = `BENCH-${counter}`;
    const sent = performance.now();
    const response = await fetch(`${baseUrl}/fhir/R4/Claim/$submit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/fhir+json', 'x-sandbox-prior-auth-outcome': 'approved' },
      body: JSON.stringify(bundle),
    });
    await response.text();
    if (response.status !== 200) throw new Error(`$submit answered ${response.status}`);
    return performance.now() - sent;
  };

  try {
    console.log(`PAS benchmark on ${availableParallelism()} cores: Temporal dev server, Postgres, API and worker together.`);
    const warm = await submit(structuredClone(template));
    console.log(`First $submit (a thread loads the validator): ${warm.toFixed(0)} ms`);

    const latencies: number[] = [];
    const cpuBefore = process.cpuUsage();
    for (let index = 0; index < submissions; index += 1) latencies.push(await submit(structuredClone(template)));
    const cpu = process.cpuUsage(cpuBefore);
    const sorted = [...latencies].sort((a, b) => a - b);
    const p99 = percentile(sorted, 99);
    console.log(
      `Immediate decision, one at a time (${JSON.stringify(template).length} B request): p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${p99.toFixed(0)} ms   (goal: p99 < 150 ms: ${p99 < 150 ? 'met' : 'NOT met'})`,
    );
    // Less moved by other work on the machine than the latency: the API, worker and check thread's CPU (this process), per request.
    console.log(
      `CPU of this process (API, worker, check thread, the client) per $submit: ${((cpu.user + cpu.system) / 1000 / submissions).toFixed(1)} ms`,
    );
    const started = performance.now();
    await pool(submissions, concurrency, async () => {
      await submit(structuredClone(template));
    });
    console.log(`Throughput at ${concurrency} in flight: ${(submissions / ((performance.now() - started) / 1000)).toFixed(1)} $submit/s`);

    const large = paddedRequest(template, 50 * 1024);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const largeMs = await submit(large);
    delay.disable();
    const blockMs = delay.max / 1e6;
    console.log(
      `A ${JSON.stringify(large).length} B request: answered in ${largeMs.toFixed(0)} ms; the API's event loop held at most ${blockMs.toFixed(0)} ms   (goal: no block > 100 ms: ${blockMs <= 100 ? 'met' : 'NOT met'})`,
    );
    const validator = await loadProfileValidator();
    const inPlace = performance.now();
    checkPasRequest(large, 'submit', validator);
    console.log(`The same check in place (what the thread keeps off the event loop): ${(performance.now() - inPlace).toFixed(0)} ms`);
    console.log(
      `Load average before ${loadBefore.map((value) => value.toFixed(2)).join(' ')}, after ${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    for (const { run } of running.stops) await run();
    await temporal.connection.close();
    await database.close();
    await temporalServer.stop();
    await scratchDatabase.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
