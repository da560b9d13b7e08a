import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import autocannon from 'autocannon';
import express from 'express';
import { createApp } from '../api/app';
import { loadFhirStore } from '../fixtures/store';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { createOrganization, issueApiKey } from '../platform/organizations';
import { VERSION } from '../platform/version';
import { createScratchDatabase } from '../test/support/scratch-database';

/**
 * `npm run bench`: the synthetic-FHIR and catalog read endpoints under load (autocannon, loopback
 * only, bounded duration), each beside a bare Express handler that answers the same JSON body, in
 * the same run. "Ours" goes through everything a partner's request does: request id and logging
 * middleware, API-key lookup in Postgres, the per-key rate limiter, zod validation of the query,
 * the memory indexes. Reads never touch Temporal, so the client here never connects.
 *
 * BENCH_DURATION seconds per measurement (5), BENCH_CONNECTIONS (32),
 * BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const duration = Number(process.env.BENCH_DURATION ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** `/healthz` first: no API key, so its row is the cost of the middleware alone, for comparison. */
const ENDPOINTS = [
  '/healthz',
  '/v1/patients',
  '/v1/patients?name=ru&gender=female',
  '/v1/patients/syn-pat-0001',
  '/v1/sandbox/resources/Observation?patient=syn-pat-0001',
  '/v1/sandbox/resources/Observation?limit=200',
  '/v1/sandbox/resources/Claim/syn-clm-0001-001',
  '/v1/sandbox/domains/prior_auth',
  '/v1/sandbox/payer-rules/syn-payer-alderpeak',
];

function listenOnLoopback(app: express.Express): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    server.keepAliveTimeout = 30_000;
  });
}

interface Measured {
  rate: number;
  p99: number;
  failures: number;
}

/** One autocannon run; the load runs in a worker thread so it does not share the servers' event loop. */
async function measure(url: string, headers: Record<string, string> = {}): Promise<Measured> {
  const result = await autocannon({ url, connections, duration, headers, workers: 1 });
  return { rate: result.requests.average, p99: result.latency.p99, failures: result.non2xx + result.errors + result.timeouts };
}

async function main() {
  const scratchDatabase = await createScratchDatabase(adminUrl, 'sandbox_bench_reads');
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-reads-'));
  const servers: Server[] = [];
  try {
    const config = loadConfig({ NODE_ENV: 'production', DATABASE_URL: scratchDatabase.url, DATA_DIR: scratch, RATE_LIMIT_PER_MINUTE: '100000000' });
    const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: scratch });
    const organization = await createOrganization(database.db, { name: 'Bench Health (synthetic)' });
    const { key } = await issueApiKey(database.db, organization.id);
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const started = performance.now();
    const fhirStore = loadFhirStore();
    const loadedIn = performance.now() - started;
    const ours = await listenOnLoopback(
      createApp({ config, db: database.db, temporal, logger: createLogger('warn', { pretty: false }), version: VERSION, fhirStore }),
    );
    servers.push(ours.server);

    // The bare baseline: one Express handler, no middleware, answering the very JSON ours answers for that URL.
    const bodies = new Map<string, unknown>();
    for (const path of ENDPOINTS) {
      const response = await fetch(`${ours.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
      bodies.set(path, await response.json());
    }
    const bare = express();
    bare.get('/{*path}', (req, res) => {
      res.json(bodies.get(req.originalUrl));
    });
    const baseline = await listenOnLoopback(bare);
    servers.push(baseline.server);
    const kibibytes = (path: string) => Buffer.byteLength(JSON.stringify(bodies.get(path))) / 1024;

    // Warm both servers up (JIT, connection pools) before anything is measured.
    for (const path of ENDPOINTS) {
      await autocannon({ url: `${ours.url}${path}`, connections, duration: 1, headers: { authorization: `Bearer ${key}` } });
      await autocannon({ url: `${baseline.url}${path}`, connections, duration: 1 });
    }

    console.log(
      `Read endpoints: ${connections} connections, ${duration} s each, loopback; ${cpus().length} CPU(s), Node ${process.version}; Postgres for API keys.`,
    );
    console.log(
      `Fixtures: ${fhirStore.supportedTypes.reduce((sum, type) => sum + fhirStore.list(type).length, 0)} resources loaded and indexed in ${loadedIn.toFixed(0)} ms.\n`,
    );
    console.log(
      `${'endpoint'.padEnd(58)} | ${'body'.padStart(9)} | ${'ours req/s'.padStart(10)} | ${'p99'.padStart(6)} | ${'bare req/s'.padStart(10)} | ${'p99'.padStart(6)} | ours ÷ bare`,
    );
    for (const path of ENDPOINTS) {
      const mine = await measure(`${ours.url}${path}`, { authorization: `Bearer ${key}` });
      const theirs = await measure(`${baseline.url}${path}`);
      if (mine.failures > 0 || theirs.failures > 0) throw new Error(`${path}: ${mine.failures} failed requests (ours), ${theirs.failures} (bare)`);
      console.log(
        `${path.padEnd(58)} | ${`${kibibytes(path).toFixed(1)} KiB`.padStart(9)} | ${mine.rate.toFixed(0).padStart(10)} | ${`${mine.p99} ms`.padStart(6)} | ${theirs.rate.toFixed(0).padStart(10)} | ${`${theirs.p99} ms`.padStart(6)} | ${(mine.rate / theirs.rate).toFixed(2).padStart(11)}`,
      );
    }
    await database.close();
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await scratchDatabase.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
