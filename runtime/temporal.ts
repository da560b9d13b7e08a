import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Logger } from 'pino';
import { searchAttributeKeys } from '../workflows/search-attributes';

/** How often the dev server may read its queue of new tasks; far above what any load here asks for. */
export const TRANSFER_QUEUE_READS_PER_SECOND = 1000;

export interface DevServerOptions {
  cliPath: string;
  port: number;
  /** The Web UI port, or `null` to run headless (tests). */
  uiPort: number | null;
  /** SQLite file that keeps workflows across restarts; `null` keeps them in memory (tests). */
  databaseFile: string | null;
  /** Where the server's own output goes, so a failed start can show it. */
  logFile: string;
  namespace: string;
  /**
   * The server's Go runtime's soft memory limit (GOMEMLIMIT, Go's syntax: `128MiB`); unset leaves Go's
   * own, none: its heap then grows to twice what it holds live before it collects.
   */
  memoryLimit?: string;
  /**
   * How many workflow executions the server keeps in its history cache; unset leaves the server's own:
   * 128,000, each kept an hour after its last use, so every run that waits (a delivery in backoff) is
   * held in memory while it waits.
   */
  cachedWorkflows?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  /** The server's process (the benchmarks read its CPU time). */
  pid: number;
  stop(): Promise<void>;
}

export class TemporalStartError extends Error {
  override name = 'TemporalStartError';
}

/** Runs `temporal server start-dev` as a child process and waits until its namespace answers. */
export async function startDevServer(options: DevServerOptions, logger: Logger): Promise<DevServer> {
  const address = `127.0.0.1:${options.port}`;
  if (await isPortOpen('127.0.0.1', options.port)) {
    throw new TemporalStartError(
      `Port ${options.port} is already in use, so a local Temporal dev server cannot start there. ` +
        `If a Temporal server is already running on it, set TEMPORAL_ADDRESS=localhost:${options.port} to use it; ` +
        'otherwise choose another port with TEMPORAL_PORT (and TEMPORAL_UI_PORT).',
    );
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    // Off by default in the server: with it, the activity a workflow task schedules comes back in that
    // task's completion to the same worker, instead of through matching to a poller (a no-op workflow
    // at 1 in flight: 143 ms → 88 ms here; docs/benchmarks.md).
    '--dynamic-config-value',
    'system.enableActivityEagerExecution=true',
    // The server reads each history shard's queue of new tasks (a workflow task after an activity, a
    // start) at most 20 times a second by default, so at light load every such task waits up to 50 ms
    // before it reaches a worker; the dev server has one shard, and reading it on every notification
    // costs little (docs/benchmarks.md: a no-op workflow 100 → 39 ms).
    '--dynamic-config-value',
    `history.transferProcessorMaxPollRPS=${TRANSFER_QUEUE_READS_PER_SECOND}`,
    // Task queue fairness (off by default): matching dispatches a backlog round robin across the
    // fairness keys its tasks carry, each run's organization (platform/workflow-gateway.ts), so one
    // organization's burst waits behind its own work, not in front of another's. Eager activities
    // (above) skip matching and so its fairness; an attempt's share of the worker is kept by the
    // worker itself, eager or not (platform/organization-lines.ts, docs/api/fair-sharing.md).
    '--dynamic-config-value',
    'matching.enableFairness=true',
    // One partition per task queue (4 by default): matching keeps each partition's backlog and its
    // fairness apart, so with 4 a worker's poll that reached a partition holding only a burst's tasks
    // took one of them while another organization's task waited in another partition. One process
    // serves every partition here, so more of them spread no load (docs/benchmarks.md, 28 November:
    // the light load beside a burst 2.85 → 2.16 × its latency alone). The cluster keeps its own.
    '--dynamic-config-value',
    'matching.numTaskqueueReadPartitions=1',
    '--dynamic-config-value',
    'matching.numTaskqueueWritePartitions=1',
  ];
  if (options.cachedWorkflows !== undefined) args.push('--dynamic-config-value', `history.hostLevelCacheMaxSize=${options.cachedWorkflows}`);
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.databaseFile) {
    mkdirSync(resolve(options.databaseFile, '..'), { recursive: true });
    // WAL lets the UI and the server read while a write is in progress.
    args.push('--db-filename', options.databaseFile, '--sqlite-pragma', 'journal_mode=wal');
  }
  mkdirSync(resolve(options.logFile, '..'), { recursive: true });
  const log = createWriteStream(options.logFile, { flags: 'a' });
  // Its own process group, so Ctrl+C reaches only us and the server outlives the worker's drain.
  const env = options.memoryLimit ? { ...process.env, GOMEMLIMIT: options.memoryLimit } : process.env;
  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited !== undefined) {
      throw new TemporalStartError(`temporal server start-dev exited with code ${exited}. Its last output:\n${tail(options.logFile)}`);
    }
    if (await namespaceAnswers(address, options.namespace)) break;
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new TemporalStartError(`temporal server start-dev did not answer on ${address} within 60 s. Its last output:\n${tail(options.logFile)}`);
    }
    await sleep(200);
  }
  logger.debug({ address, args }, 'Temporal dev server is up');
  return {
    address,
    uiUrl: options.uiPort === null ? null : `http://localhost:${options.uiPort}`,
    pid: child.pid!,
    stop: async () => {
      await stopChild(child);
      process.removeListener('exit', killOnExit);
      log.end();
    },
  };
}

/** Connects to Temporal, retrying briefly so a server that is still starting is not an error. */
export async function connectTemporal(address: string, namespace: string): Promise<{ connection: Connection; client: Client }> {
  const connection = await untilReachable(address, () => Connection.connect({ address, connectTimeout: 5_000 }));
  return { connection, client: new Client({ connection, namespace }) };
}

/** Retries `connect` for up to 30 s, so a Temporal server that is still starting is not an error. */
export async function untilReachable<T>(address: string, connect: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await connect();
    } catch (error) {
      if (Date.now() > deadline) {
        throw new TemporalStartError(`Cannot reach Temporal at ${address}: ${(error as Error).message}`);
      }
      await sleep(500);
    }
  }
}

/**
 * Registers the search attributes of CONVENTIONS.md where they are missing. A cluster that refuses
 * (Temporal Cloud manages them in its console) is reported, not fatal: runs still work, only the
 * Web UI filters do not.
 */
export async function ensureSearchAttributes(connection: Pick<Connection, 'operatorService'>, namespace: string, logger: Logger): Promise<void> {
  const keywordType = proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const known = new Set(Object.keys(existing.customAttributes ?? {}));
    const missing = searchAttributeKeys.filter((key) => !known.has(key.name));
    if (missing.length === 0) return;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, keywordType])),
    });
    logger.info({ added: missing.map((key) => key.name) }, 'Registered Temporal search attributes');
  } catch (error) {
    logger.warn(
      { err: error },
      `Could not register Temporal search attributes; register ${searchAttributeKeys.map((key) => key.name).join(', ')} (Keyword) by hand`,
    );
  }
}

async function namespaceAnswers(address: string, namespace: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1_000 });
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => {});
  }
}

function isPortOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolvePort(true);
    });
    socket.once('error', () => resolvePort(false));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill('SIGTERM');
  const forced = sleep(10_000).then(() => child.kill('SIGKILL'));
  await Promise.race([exited, forced]);
  await exited;
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no output captured)';
  }
}
