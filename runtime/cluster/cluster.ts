import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import proto from '@temporalio/proto';
import type { Logger } from 'pino';
import postgres from 'postgres';
import { loadConfig } from '../../platform/config';
import { openDatabase } from '../../platform/database';
import { freePort, freePortBetween } from '../../platform/free-port';
import { createOrganization, issueApiKey } from '../../platform/organizations';
import { searchAttributeKeys } from '../../workflows/search-attributes';
import { ensureSearchAttributes } from '../temporal';
import type { ClusterBinaries } from './binaries';
import { type ManagedProcess, startProcess } from './processes';
import { dynamicConfig, type ServicePorts, type SqlStore, serverConfig, type TemporalRole } from './server-config';

/**
 * A production-shaped topology on loopback: Temporal as separate frontend, history (several nodes),
 * matching and worker service processes on Postgres persistence and SQL visibility, our API and our
 * worker as several processes each. Every database is a scratch one, dropped at stop.
 */

export interface ClusterOptions {
  binaries: ClusterBinaries;
  /** Configs and logs (and the processes' DATA_DIR). */
  dataDir: string;
  /** A Postgres role that may create and drop databases. */
  adminDatabaseUrl: string;
  apis: number;
  workers: number;
  historyNodes: number;
  historyShards: number;
  /** Added to the API and worker processes' environment (a retry schedule, rate limits). */
  appEnvironment?: Record<string, string>;
  logger: Logger;
}

export interface ClusterProcessInfo {
  name: string;
  role: TemporalRole | 'api' | 'app-worker';
  pid: number;
  log: string;
  grpcPort?: number;
  metricsUrl?: string;
  url?: string;
  mllpPort?: number;
}

/** Everything a client of the cluster needs; `npm run cluster` writes it as JSON. */
export interface ClusterInfo {
  temporalVersion: string;
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  databaseUrl: string;
  temporalDatabases: { persistence: string; visibility: string };
  apiUrls: string[];
  /** A key of an organization created at start, for trying the API (scratch database; dropped at stop). */
  apiKey: string;
  organizationId: string;
  historyShards: number;
  processes: ClusterProcessInfo[];
  dataDir: string;
  startedIn: { seconds: number; loadAverage: number[] };
}

export interface RunningCluster {
  info: ClusterInfo;
  /** Stops our processes, then Temporal's, then drops the databases. */
  stop(): Promise<void>;
}

export const NAMESPACE = 'default';
const NAMESPACE_RETENTION = '3 days';
const START_TIMEOUT_MS = 180_000;
const APP_GRACE_SECONDS = 10;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export class ClusterStartError extends Error {
  override name = 'ClusterStartError';
}

export async function startCluster(options: ClusterOptions): Promise<RunningCluster> {
  const started = Date.now();
  const { logger } = options;
  const suffix = `${process.pid}_${Date.now().toString(36)}`;
  const names = { app: `sandbox_cluster_${suffix}`, persistence: `temporal_cluster_${suffix}`, visibility: `temporal_visibility_cluster_${suffix}` };
  const admin = new URL(options.adminDatabaseUrl);
  const store = (database: string): SqlStore => ({
    host: admin.hostname,
    port: Number(admin.port || 5432),
    user: decodeURIComponent(admin.username || 'postgres'),
    password: decodeURIComponent(admin.password),
    database,
  });
  const processes: ManagedProcess[] = [];
  const created: string[] = [];

  const stop = async () => {
    const ours = processes.filter((child) => child.name.startsWith('api') || child.name.startsWith('worker'));
    // Our processes first, so a worker drains against a live Temporal; then the services.
    await Promise.all(ours.map((child) => child.stop((APP_GRACE_SECONDS + 5) * 1000)));
    await Promise.all(processes.filter((child) => !ours.includes(child)).map((child) => child.stop(10_000)));
    await dropDatabases(options.adminDatabaseUrl, created);
  };

  try {
    mkdirSync(options.dataDir, { recursive: true });
    const ports = async (role: TemporalRole): Promise<ServicePorts> => ({
      grpc: await freePort(),
      // Temporal keeps membership ports in a smallint column.
      membership: await freePortBetween(20_000, 32_767),
      metrics: await freePort(),
      ...(role === 'frontend' ? { http: await freePort() } : {}),
    });
    const frontendPorts = await ports('frontend');
    const frontendAddress = `127.0.0.1:${frontendPorts.grpc}`;

    logger.info(`Creating the Temporal databases with temporal-sql-tool ${options.binaries.version} (schema postgresql/v12)…`);
    for (const [database, schema] of [
      [names.persistence, 'postgresql/v12/temporal'],
      [names.visibility, 'postgresql/v12/visibility'],
    ] as const) {
      await createTemporalDatabase(options.binaries.sqlTool, store(database), schema, options.dataDir);
      created.push(database);
    }
    const adminClient = postgres(options.adminDatabaseUrl, { max: 1, onnotice: () => {} });
    try {
      await adminClient.unsafe(`create database ${names.app}`);
      created.push(names.app);
    } finally {
      await adminClient.end();
    }
    const appUrl = new URL(options.adminDatabaseUrl);
    appUrl.pathname = `/${names.app}`;
    const databaseUrl = appUrl.toString();

    const dynamicConfigFile = join(options.dataDir, 'dynamic-config.yaml');
    writeFileSync(dynamicConfigFile, dynamicConfig());
    const services: { name: string; role: TemporalRole; ports: ServicePorts }[] = [
      { name: 'temporal-frontend', role: 'frontend', ports: frontendPorts },
      ...(await Promise.all(
        Array.from({ length: options.historyNodes }, async (_, index) => ({
          name: `temporal-history-${index + 1}`,
          role: 'history' as const,
          ports: await ports('history'),
        })),
      )),
      { name: 'temporal-matching', role: 'matching', ports: await ports('matching') },
      { name: 'temporal-worker', role: 'worker', ports: await ports('worker') },
    ];
    const firstOfEachRole = Object.fromEntries([...services].reverse().map((service) => [service.role, service.ports])) as Record<
      TemporalRole,
      ServicePorts
    >;
    logger.info(`Starting Temporal ${options.binaries.version}: ${services.map((service) => service.name).join(', ')}…`);
    const startService = (service: (typeof services)[number]) => {
      const configFile = join(options.dataDir, `${service.name}.yaml`);
      writeFileSync(
        configFile,
        serverConfig({
          role: service.role,
          ports: service.ports,
          services: firstOfEachRole,
          frontendAddress,
          persistence: store(names.persistence),
          visibility: store(names.visibility),
          historyShards: options.historyShards,
          dynamicConfigFile,
        }),
      );
      processes.push(
        startProcess(service.name, options.binaries.server, ['--config-file', configFile, '--allow-no-auth', 'start', '--service', service.role], {
          env: process.env,
          log: join(options.dataDir, 'logs', `${service.name}.log`),
        }),
      );
    };
    // The frontend alone first: the first process to start on an empty database writes the cluster's
    // metadata record, and a second one racing it fails on the duplicate key and exits.
    const [frontend, ...others] = services;
    startService(frontend!);
    const deadline = started + START_TIMEOUT_MS;
    const connection = await until(deadline, processes, 'the Temporal frontend answering', () =>
      Connection.connect({ address: frontendAddress, connectTimeout: 2_000 }).then(async (connected) => {
        await connected.workflowService.getSystemInfo({});
        return connected;
      }),
    );
    for (const service of others) startService(service);
    try {
      await until(deadline, processes, `namespace "${NAMESPACE}" registered`, async () => {
        try {
          await connection.workflowService.registerNamespace({
            namespace: NAMESPACE,
            workflowExecutionRetentionPeriod: msToTs(NAMESPACE_RETENTION),
          });
        } catch (error) {
          if (!/already exists/i.test((error as Error).message)) throw error;
        }
        await connection.workflowService.describeNamespace({ namespace: NAMESPACE });
        return true;
      });
      await ensureSearchAttributes(connection, NAMESPACE, logger);
      const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: NAMESPACE });
      const missing = searchAttributeKeys.filter((key) => !(key.name in (customAttributes ?? {})));
      if (missing.length > 0) throw new ClusterStartError(`Search attributes not registered: ${missing.map((key) => key.name).join(', ')}`);
    } finally {
      await connection.close();
    }
    const historyMetrics = services.filter((service) => service.role === 'history').map((service) => metricsUrl(service.ports));
    const owned = await until(deadline, processes, `all ${options.historyShards} history shards owned`, async () => {
      const counts = await Promise.all(historyMetrics.map((url) => ownedShards(url)));
      return counts.every((count) => count !== null) && counts.reduce((sum, count) => sum! + count!, 0) === options.historyShards
        ? counts
        : undefined;
    });
    logger.info(`Temporal is up on ${frontendAddress}; shards per history node: ${owned.join(', ')}`);

    const appEnvironment = (name: string): NodeJS.ProcessEnv => ({
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
      DATA_DIR: join(options.dataDir, name),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: frontendAddress,
      TEMPORAL_NAMESPACE: NAMESPACE,
      // The demo and test receivers run on this machine.
      ALLOW_PRIVATE_TARGETS: 'true',
      SHUTDOWN_GRACE_SECONDS: String(APP_GRACE_SECONDS),
      ...options.appEnvironment,
    });
    const apis = await Promise.all(
      Array.from({ length: options.apis }, async (_, index) => ({ name: `api-${index + 1}`, port: await freePort(), mllpPort: await freePort() })),
    );
    logger.info(`Starting ${options.apis} API and ${options.workers} worker process(es)…`);
    for (const api of apis) {
      processes.push(
        startProcess(api.name, process.execPath, ['--import', 'tsx', 'bin/start-api.ts'], {
          cwd: ROOT,
          env: {
            ...appEnvironment(api.name),
            HOST: '127.0.0.1',
            PORT: String(api.port),
            PUBLIC_BASE_URL: `http://127.0.0.1:${api.port}`,
            HL7_MLLP_PORT: String(api.mllpPort),
          },
          log: join(options.dataDir, 'logs', `${api.name}.log`),
        }),
      );
    }
    const workers = Array.from({ length: options.workers }, (_, index) => `worker-${index + 1}`);
    for (const name of workers) {
      processes.push(
        startProcess(name, process.execPath, ['--import', 'tsx', 'bin/start-worker.ts'], {
          cwd: ROOT,
          env: appEnvironment(name),
          log: join(options.dataDir, 'logs', `${name}.log`),
        }),
      );
    }
    const apiUrls = apis.map((api) => `http://127.0.0.1:${api.port}`);
    const taskQueue = loadConfig(appEnvironment(workers[0] ?? 'worker')).TEMPORAL_TASK_QUEUE;
    await until(deadline, processes, 'every API answering /readyz', async () =>
      (
        await Promise.all(
          apiUrls.map((url) =>
            fetch(`${url}/readyz`).then(
              (response) => response.ok,
              () => false,
            ),
          ),
        )
      ).every(Boolean)
        ? true
        : undefined,
    );
    // Each worker process polls under the SDK's default identity, `<pid>@<host>`.
    const workerPids = processes.filter((child) => workers.includes(child.name)).map((child) => child.pid);
    const pollers = await Connection.connect({ address: frontendAddress });
    try {
      await until(deadline, processes, 'every worker polling', async () => {
        const { pollers: polling } = await pollers.workflowService.describeTaskQueue({
          namespace: NAMESPACE,
          taskQueue: { name: taskQueue },
          taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        });
        const identities = (polling ?? []).map((poller) => poller.identity ?? '');
        return workerPids.every((pid) => identities.some((identity) => identity.startsWith(`${pid}@`))) ? true : undefined;
      });
    } finally {
      await pollers.close();
    }

    // A tenant to try the cluster with: the API processes have migrated the database by now.
    const app = await openDatabase({ databaseUrl, dataDir: options.dataDir });
    let tenant: { organizationId: string; apiKey: string };
    try {
      const organization = await createOrganization(app.db, { name: 'Cluster Health (synthetic)' });
      tenant = { organizationId: organization.id, apiKey: (await issueApiKey(app.db, organization.id)).key };
    } finally {
      await app.close();
    }

    const servicePorts = new Map(services.map((service) => [service.name, service]));
    const info: ClusterInfo = {
      temporalVersion: options.binaries.version,
      temporalAddress: frontendAddress,
      namespace: NAMESPACE,
      taskQueue,
      databaseUrl,
      temporalDatabases: { persistence: names.persistence, visibility: names.visibility },
      apiUrls,
      ...tenant,
      historyShards: options.historyShards,
      processes: processes.map((child) => {
        const service = servicePorts.get(child.name);
        const api = apis.find((candidate) => candidate.name === child.name);
        return {
          name: child.name,
          role: service?.role ?? (api ? 'api' : 'app-worker'),
          pid: child.pid,
          log: child.log,
          ...(service ? { grpcPort: service.ports.grpc, metricsUrl: metricsUrl(service.ports) } : {}),
          ...(api ? { url: `http://127.0.0.1:${api.port}`, mllpPort: api.mllpPort } : {}),
        };
      }),
      dataDir: options.dataDir,
      startedIn: { seconds: Math.round((Date.now() - started) / 100) / 10, loadAverage: loadAverage() },
    };
    return { info, stop };
  } catch (error) {
    await stop().catch((stopError) => logger.error({ err: stopError }, 'stopping the half-started cluster failed'));
    throw error;
  }
}

/** `create-database`, `setup-schema -v 0.0`, `update-schema` to the latest version the tool embeds: what docker-compose.yml runs. */
async function createTemporalDatabase(sqlTool: string, target: SqlStore, schema: string, dataDir: string): Promise<void> {
  const connect = ['--plugin', 'postgres12', '--ep', target.host, '--port', String(target.port), '--user', target.user, '--db', target.database];
  if (target.password) connect.push('--password', target.password);
  for (const command of [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '--schema-name', schema]]) {
    const output = await run(sqlTool, [...connect, ...command]);
    writeFileSync(join(dataDir, `sql-tool-${target.database}.log`), output, { flag: 'a' });
  }
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new ClusterStartError(`${command} ${args.join(' ')} exited with ${code}:\n${output.slice(-4000)}`)),
    );
  });
}

async function dropDatabases(adminDatabaseUrl: string, databases: string[]): Promise<void> {
  if (databases.length === 0) return;
  const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    for (const database of databases) await admin.unsafe(`drop database if exists ${database} with (force)`);
  } finally {
    await admin.end();
  }
}

const metricsUrl = (ports: ServicePorts) => `http://127.0.0.1:${ports.metrics}/metrics`;

/** How many history shards the node behind `metricsUrl` owns (its numshards_gauge); null before it has reported. */
export async function ownedShards(url: string): Promise<number | null> {
  let text: string;
  try {
    text = await (await fetch(url)).text();
  } catch {
    return null;
  }
  const line = text.split('\n').find((candidate) => candidate.startsWith('numshards_gauge'));
  return line === undefined ? null : Number(line.split(' ').at(-1));
}

/** Polls `probe` until it returns a value; fails if the deadline passes or a cluster process exits meanwhile. */
async function until<T>(deadline: number, processes: ManagedProcess[], what: string, probe: () => Promise<T | undefined>): Promise<T> {
  let lastError: unknown;
  for (;;) {
    const dead = processes.find((child) => child.hasExited());
    if (dead) throw new ClusterStartError(`${dead.name} exited while waiting for ${what}. Its last output (${dead.log}):\n${dead.tail()}`);
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new ClusterStartError(`Timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    }
    await sleep(250);
  }
}

const loadAverage = () => loadavg().map((value) => Math.round(value * 100) / 100);
