import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { ensureClusterBinaries } from '../runtime/cluster/binaries';
import { type ClusterInfo, ClusterStartError, dropDatabases, startCluster } from '../runtime/cluster/cluster';
import { runMain, UsageError } from './run-main';

const USAGE = `A production-shaped cluster on this machine, without Docker (docs/operations/cluster.md).

  npm run cluster -- start     build the Temporal server once, start everything, print the addresses;
                               runs in the foreground until Ctrl+C (or \`npm run cluster -- stop\`)
  npm run cluster -- stop      stop the cluster started from this folder, and drop its databases
  npm run cluster -- build     only build (or find) temporal-server and temporal-sql-tool

Options (start): --apis N (2), --workers N (2), --history-nodes N (2), --shards N (4).
Postgres: CLUSTER_DATABASE_ADMIN_URL (postgres://postgres@127.0.0.1:5432/postgres), a role that may create databases.
When everything answers, <DATA_DIR>/cluster/cluster.json holds the addresses (TEMPORAL_ADDRESS, DATABASE_URL, API URLs, …).`;

const positiveInt = (name: string, value: string | undefined, fallback: number) => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new UsageError(`--${name} expects a whole number of at least 1 (got ${value}).`);
  return parsed;
};

interface StateFile extends ClusterInfo {
  supervisorPid: number;
}

runMain(async () => {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      apis: { type: 'string' },
      workers: { type: 'string' },
      'history-nodes': { type: 'string' },
      shards: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const dataDir = resolve(config.DATA_DIR, 'cluster');
  const stateFile = join(dataDir, 'cluster.json');
  const log = (message: string) => logger.info(message);

  if (command === 'build') {
    const binaries = ensureClusterBinaries(log);
    process.stdout.write(`temporal-server ${binaries.version}: ${binaries.server}\ntemporal-sql-tool: ${binaries.sqlTool}\n`);
    return;
  }
  if (command === 'stop') {
    if (!existsSync(stateFile)) throw new UsageError(`No cluster is running from this folder (${stateFile} does not exist).`);
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as StateFile;
    if (!isAlive(state.supervisorPid)) {
      // The supervisor was killed without stopping its cluster: end what is left of it and drop its databases.
      const left = state.processes.filter((child) => isAlive(child.pid) && isClusterProcess(child.pid));
      for (const child of left) process.kill(child.pid, 'SIGKILL');
      await dropDatabases(adminDatabaseUrl(), [new URL(state.databaseUrl).pathname.slice(1), ...Object.values(state.temporalDatabases)]);
      rmSync(stateFile);
      process.stdout.write(
        `The cluster's supervisor (pid ${state.supervisorPid}) was gone; killed ${left.length} process(es) it left and dropped its databases.\n`,
      );
      return;
    }
    process.kill(state.supervisorPid, 'SIGTERM');
    while (isAlive(state.supervisorPid)) await sleep(200);
    process.stdout.write('Cluster stopped.\n');
    return;
  }
  if (command !== 'start') throw new UsageError(USAGE);

  if (existsSync(stateFile)) {
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as StateFile;
    if (isAlive(state.supervisorPid))
      throw new UsageError(`A cluster is already running from this folder (pid ${state.supervisorPid}); \`npm run cluster -- stop\` stops it.`);
    rmSync(stateFile);
  }
  const binaries = ensureClusterBinaries(log);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await startCluster({
      binaries,
      dataDir,
      adminDatabaseUrl: adminDatabaseUrl(),
      apis: positiveInt('apis', values.apis, 2),
      workers: positiveInt('workers', values.workers, 2),
      historyNodes: positiveInt('history-nodes', values['history-nodes'], 2),
      historyShards: positiveInt('shards', values.shards, 4),
      logger,
    });
  } catch (error) {
    if (error instanceof ClusterStartError) throw new UsageError(error.message);
    throw error;
  }
  const { info } = cluster;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    logger.info('Stopping the cluster…');
    rmSync(stateFile, { force: true });
    await cluster.stop();
    logger.info('Cluster stopped; its databases are dropped.');
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // Written last and renamed into place: its presence means everything answers. It holds an API key, so only we read it.
  writeFileSync(`${stateFile}.partial`, `${JSON.stringify({ ...info, supervisorPid: process.pid } satisfies StateFile, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${stateFile}.partial`, stateFile);
  process.stdout.write(summary(info, stateFile));
});

function summary(info: ClusterInfo, stateFile: string): string {
  const rows = info.processes.map(
    (child) =>
      `  ${child.name.padEnd(20)} pid ${String(child.pid).padEnd(8)} ${child.grpcPort ? `gRPC 127.0.0.1:${child.grpcPort}  metrics ${child.metricsUrl}` : (child.url ?? '')}`,
  );
  return `
Cluster up in ${info.startedIn.seconds} s (load average ${info.startedIn.loadAverage.join(', ')}): Temporal ${info.temporalVersion}, ${info.historyShards} history shards

${rows.join('\n')}

  TEMPORAL_ADDRESS=${info.temporalAddress}
  DATABASE_URL=${info.databaseUrl}
  API_URLS=${info.apiUrls.join(',')}
  API key         ${info.apiKey}   (organization ${info.organizationId})
  Logs            ${join(info.dataDir, 'logs')}
  All of it       ${stateFile}

Try it:  curl -H "Authorization: Bearer ${info.apiKey}" "${info.apiUrls[0]}/v1/patients?limit=2"
Ctrl+C (or npm run cluster -- stop) stops the cluster and drops its databases.
`;
}

function adminDatabaseUrl(): string {
  return process.env.CLUSTER_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** Guards against a recycled pid: only a Temporal service or one of our entry points is ours to kill. */
function isClusterProcess(pid: number): boolean {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return command.includes('temporal-server') || command.includes('bin/start-api.ts') || command.includes('bin/start-worker.ts');
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
