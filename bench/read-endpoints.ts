import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
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
import { freePort } from '../test/support/ports';
import { createScratchDatabase } from '../test/support/scratch-database';
import { mainThreadBusyMs } from './costs';

/**
 * `npm run bench`: the synthetic-FHIR and catalog read endpoints under load (autocannon, loopback
 * only, bounded duration), each beside a bare Express handler that answers the same JSON body, in
 * the same run. "Ours" goes through everything a partner's request does: request id and logging
 * middleware, the API key (cached per process), the per-key rate limit (counted in Postgres), zod
 * validation of the query, the memory indexes; FHIR reads verify a SMART access token (JWT and its
 * row). Reads never touch Temporal, so the client here never connects.
 *
 * Rates move with whatever else the machine runs; the CPU the event loop (both servers share it, the
 * load runs in a worker thread) spends per request does much less, so the goals are judged on the
 * ratio of those: the rate ratio an idle machine would show.
 *
 * BENCH_DURATION seconds per turn (2) and BENCH_ROUNDS turns each of ours and bare, alternating (3),
 * BENCH_CONNECTIONS (32),
 * BENCH_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
const duration = Number(process.env.BENCH_DURATION ?? 2);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const adminUrl = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * `/healthz` first: no credential, so its row is the cost of the middleware alone, for comparison.
 * Every endpoint has issue 32's goal: ours at least GOAL_RATIO of bare by CPU, and p99 at most
 * GOAL_P99_FACTOR times bare's p99 in the same run.
 */
interface Endpoint {
  path: string;
  credential: 'none' | 'api key' | 'SMART token';
}
const GOAL_RATIO = 0.8;
const GOAL_P99_FACTOR = 1.2;
const ENDPOINTS: Endpoint[] = [
  { path: '/healthz', credential: 'none' },
  { path: '/v1/patients', credential: 'api key' },
  { path: '/v1/patients?name=ru&gender=female', credential: 'api key' },
  { path: '/v1/patients/syn-pat-0001', credential: 'api key' },
  { path: '/v1/sandbox/resources/Observation?patient=syn-pat-0001', credential: 'api key' },
  { path: '/v1/sandbox/resources/Observation?limit=200', credential: 'api key' },
  { path: '/v1/sandbox/resources/Claim/syn-clm-0001-001', credential: 'api key' },
  { path: '/v1/sandbox/domains/prior_auth', credential: 'api key' },
  { path: '/v1/sandbox/payer-rules/syn-payer-alderpeak', credential: 'api key' },
  { path: '/fhir/R4/Patient/syn-pat-0001', credential: 'SMART token' },
  { path: '/fhir/R4/Observation?patient=syn-pat-0001', credential: 'SMART token' },
];

function listenOnLoopback(app: express.Express, port = 0): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = app.listen(port, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    server.keepAliveTimeout = 30_000;
  });
}

interface Measured {
  rate: number;
  p99: number;
  failures: number;
  /** CPU of the event loop (the main thread, where both servers run) per request, in ms. */
  cpuMs: number;
}

/** One autocannon run; the load runs in a worker thread so it does not share the servers' event loop. */
async function measure(url: string, headers: Record<string, string> = {}): Promise<Measured> {
  const before = mainThreadBusyMs();
  const result = await autocannon({ url, connections, duration, headers, workers: 1 });
  return {
    rate: result.requests.total / duration,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
    cpuMs: (mainThreadBusyMs() - before) / result.requests.total,
  };
}

/**
 * Ours and bare in turns, `rounds` times each, so that load from other work on the machine, which
 * comes and goes over seconds, weighs on both alike: rates averaged over the turns, p99 the worst turn's.
 */
async function measurePair(oursUrl: string, bareUrl: string, headers: Record<string, string>): Promise<{ ours: Measured; bare: Measured }> {
  const turns = { ours: [] as Measured[], bare: [] as Measured[] };
  for (let round = 0; round < rounds; round += 1) {
    turns.ours.push(await measure(oursUrl, headers));
    turns.bare.push(await measure(bareUrl));
  }
  const combine = (all: Measured[]): Measured => ({
    rate: all.reduce((sum, turn) => sum + turn.rate, 0) / all.length,
    p99: Math.max(...all.map((turn) => turn.p99)),
    failures: all.reduce((sum, turn) => sum + turn.failures, 0),
    cpuMs: all.reduce((sum, turn) => sum + turn.cpuMs, 0) / all.length,
  });
  return { ours: combine(turns.ours), bare: combine(turns.bare) };
}

function formatLoad(): string {
  return loadavg()
    .map((load) => load.toFixed(2))
    .join(', ');
}

function verdict(cpuRatio: number, p99: number, bareP99: number): string {
  const ratioMet = cpuRatio >= GOAL_RATIO;
  const p99Met = p99 <= GOAL_P99_FACTOR * bareP99;
  return `${ratioMet ? 'met' : 'NOT met'} (≥ ${GOAL_RATIO}); p99 ${p99Met ? 'met' : 'NOT met'} (≤ ${GOAL_P99_FACTOR} × bare's)`;
}

/**
 * A SMART access token the way an app gets one: register a public client with the API key, start an
 * EHR launch for syn-pat-0001, authorize (PKCE), exchange the code.
 */
async function smartAccessToken(baseUrl: string, key: string): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return response.json() as Promise<Record<string, string>>;
  };
  const redirectUri = 'http://127.0.0.1:9/callback';
  const client = await post('/v1/smart/clients', {
    client_name: 'Bench app (synthetic)',
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: 'none',
  });
  const launch = await post('/v1/smart/launch', { client_id: client.client_id, patient: 'syn-pat-0001' });
  const verifier = randomBytes(48).toString('base64url');
  const authorize = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id!,
    redirect_uri: redirectUri,
    scope: 'launch patient/*.rs',
    state: 'bench',
    aud: `${baseUrl}/fhir/R4`,
    launch: launch.launch!,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const redirect = await fetch(`${baseUrl}/oauth/authorize?${authorize}`, { redirect: 'manual' });
  const code = new URL(redirect.headers.get('location') ?? '', baseUrl).searchParams.get('code');
  if (!code) throw new Error(`authorization answered ${redirect.status} to ${redirect.headers.get('location')}`);
  const token = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: client.client_id!,
      code_verifier: verifier,
    }),
  });
  if (!token.ok) throw new Error(`token exchange answered ${token.status}: ${await token.text()}`);
  return ((await token.json()) as { access_token: string }).access_token;
}

async function main() {
  const scratchDatabase = await createScratchDatabase(adminUrl, 'sandbox_bench_reads');
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-reads-'));
  const servers: Server[] = [];
  try {
    // The port comes first: the SMART token's audience is PUBLIC_BASE_URL/fhir/R4.
    const port = await freePort();
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: scratchDatabase.url,
      DATA_DIR: scratch,
      // The bench measures reads, not the limits: one address sends them all.
      RATE_LIMIT_PER_MINUTE: '100000000',
      FHIR_RATE_LIMIT_PER_MINUTE: '100000000',
      OAUTH_RATE_LIMIT_PER_MINUTE: '100000000',
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    });
    const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: scratch });
    const organization = await createOrganization(database.db, { name: 'Bench Health (synthetic)' });
    const { key } = await issueApiKey(database.db, organization.id);
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const started = performance.now();
    const fhirStore = loadFhirStore();
    const loadedIn = performance.now() - started;
    const app = createApp({
      config,
      db: database.db,
      listen: database.listen,
      temporal,
      logger: createLogger('warn', { pretty: false }),
      version: VERSION,
      fhirStore,
    });
    const ours = await listenOnLoopback(app, port);
    servers.push(ours.server);
    const accessToken = await smartAccessToken(ours.url, key);
    const headersFor = (endpoint: Endpoint): Record<string, string> =>
      endpoint.credential === 'api key'
        ? { authorization: `Bearer ${key}` }
        : endpoint.credential === 'SMART token'
          ? { authorization: `Bearer ${accessToken}` }
          : {};

    // The bare baseline: one Express handler, no middleware, answering the very JSON ours answers for that URL.
    const bodies = new Map<string, unknown>();
    for (const endpoint of ENDPOINTS) {
      const response = await fetch(`${ours.url}${endpoint.path}`, { headers: headersFor(endpoint) });
      if (!response.ok) throw new Error(`${endpoint.path} answered ${response.status}: ${await response.text()}`);
      bodies.set(endpoint.path, await response.json());
    }
    const bare = express();
    bare.get('/{*path}', (req, res) => {
      res.json(bodies.get(req.originalUrl));
    });
    const baseline = await listenOnLoopback(bare);
    servers.push(baseline.server);
    const kibibytes = (path: string) => Buffer.byteLength(JSON.stringify(bodies.get(path))) / 1024;

    // Warm both servers up (JIT, connection pools) before anything is measured.
    for (const endpoint of ENDPOINTS) {
      await autocannon({ url: `${ours.url}${endpoint.path}`, connections, duration: 1, headers: headersFor(endpoint) });
      await autocannon({ url: `${baseline.url}${endpoint.path}`, connections, duration: 1 });
    }

    console.log(
      `Read endpoints: ${connections} connections, ${rounds} turns of ${duration} s each for ours and bare, alternating, loopback; ${cpus().length} CPU(s) (${cpus()[0]?.model.trim()}), Node ${process.version}.`,
    );
    console.log(`Load average before: ${formatLoad()} (other work on the machine; the ratios are side by side, one endpoint at a time).`);
    console.log(
      `Fixtures: ${fhirStore.supportedTypes.reduce((sum, type) => sum + fhirStore.list(type).length, 0)} resources loaded and indexed in ${loadedIn.toFixed(0)} ms.\n`,
    );
    console.log(
      `${'endpoint'.padEnd(58)} | ${'credential'.padEnd(11)} | ${'body'.padStart(9)} | ${'ours req/s'.padStart(10)} | ${'p99'.padStart(6)} | ${'bare req/s'.padStart(10)} | ${'p99'.padStart(6)} | ${'ours ÷ bare'.padStart(11)} | ${'CPU/request ours, bare'.padStart(22)} | ${'by CPU'.padStart(6)} | goal: by CPU; p99`,
    );
    let ratioMet = 0;
    let p99Met = 0;
    for (const endpoint of ENDPOINTS) {
      const { ours: mine, bare: theirs } = await measurePair(`${ours.url}${endpoint.path}`, `${baseline.url}${endpoint.path}`, headersFor(endpoint));
      const { path } = endpoint;
      if (mine.failures > 0 || theirs.failures > 0) throw new Error(`${path}: ${mine.failures} failed requests (ours), ${theirs.failures} (bare)`);
      const ratio = mine.rate / theirs.rate;
      // What the rate ratio would be on an idle machine: both are bound by the one event loop's CPU.
      const cpuRatio = theirs.cpuMs / mine.cpuMs;
      if (cpuRatio >= GOAL_RATIO) ratioMet += 1;
      if (mine.p99 <= GOAL_P99_FACTOR * theirs.p99) p99Met += 1;
      console.log(
        `${path.padEnd(58)} | ${endpoint.credential.padEnd(11)} | ${`${kibibytes(path).toFixed(1)} KiB`.padStart(9)} | ${mine.rate.toFixed(0).padStart(10)} | ${`${mine.p99} ms`.padStart(6)} | ${theirs.rate.toFixed(0).padStart(10)} | ${`${theirs.p99} ms`.padStart(6)} | ${ratio.toFixed(2).padStart(11)} | ${`${(mine.cpuMs * 1000).toFixed(0)} µs, ${(theirs.cpuMs * 1000).toFixed(0)} µs`.padStart(22)} | ${cpuRatio.toFixed(2).padStart(6)} | ${verdict(cpuRatio, mine.p99, theirs.p99)}`,
      );
    }
    console.log(
      `\nMet: ${ratioMet} of ${ENDPOINTS.length} rows at ≥ ${GOAL_RATIO} of bare by CPU; ${p99Met} of ${ENDPOINTS.length} with p99 ≤ ${GOAL_P99_FACTOR} × bare's.`,
    );
    console.log(`Load average after: ${formatLoad()}.`);
    await database.close();
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await scratchDatabase.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
