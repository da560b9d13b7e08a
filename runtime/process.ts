import type { Client, Connection } from '@temporalio/client';
import type { WorkerOptions as TemporalWorkerOptions } from '@temporalio/worker';
import type { Express } from 'express';
import type { Logger } from 'pino';
import { createApp } from '../api/app';
import { type FhirStore, loadFhirStore } from '../fixtures/store';
import type { Config } from '../platform/config';
import { createCostBudget } from '../platform/cost-budget';
import type { DatabaseHandle } from '../platform/database';
import { VERSION } from '../platform/version';
import { createConfiguredGateway } from '../platform/workflow-gateway';
import type { ResolveHost } from '../webhooks/targets';
import { type RunningMllpListener, startMllpListener } from './mllp';
import { ensureRetentionSchedule } from './retention-schedule';
import { type ListeningServer, listen } from './services';
import { ensureSearchAttributes } from './temporal';
import { type RunningWorker, startWorker } from './worker';

/** What a process runs: the API (with the MLLP listener), a worker (with the retention Schedule), or both. */
export interface ProcessRoles {
  api: boolean;
  worker: boolean;
}

export interface ProcessOptions {
  config: Config;
  logger: Logger;
  database: DatabaseHandle;
  temporal: { client: Client; connection: Connection };
  /** The Temporal frontend the worker polls. */
  temporalAddress: string;
  roles: ProcessRoles;
  fhirStore?: FhirStore;
  /** The DNS lookup webhook targets are checked with (tests and benchmarks resolve names on this machine only). */
  resolveHost?: ResolveHost;
  /** A workflow bundle built once (tests share one); else the worker bundles the workflows itself. */
  workflowBundle?: TemporalWorkerOptions['workflowBundle'];
}

export interface RunningProcess {
  app: Express | null;
  server: ListeningServer | null;
  mllp: RunningMllpListener | null;
  worker: RunningWorker | null;
  /** Another worker with this process's options (after the first one stopped: tests of worker restarts). */
  startWorker(): Promise<RunningWorker>;
  /** What this composition started, in the order to stop it: listeners first, then the worker. */
  stops: { name: string; run: () => Promise<void> }[];
}

/**
 * The one composition of a process (CONVENTIONS.md, Runtime shape), used by every entry point
 * (`npm start`, `start:api`, `start:worker`), the tests' service and the benchmarks, so each runs
 * the same pieces: a worker always with the search attributes and the retention Schedule ensured,
 * and the API always with the MLLP listener beside it (HL7_MLLP_PORT; `off` turns it off).
 */
export async function startProcess(options: ProcessOptions): Promise<RunningProcess> {
  const { config, logger, database, temporal } = options;
  const startProcessWorker = () =>
    startWorker({
      address: options.temporalAddress,
      config,
      db: database.db,
      logger,
      resolveHost: options.resolveHost,
      workflowBundle: options.workflowBundle,
    });

  let worker: RunningWorker | null = null;
  if (options.roles.worker) {
    await ensureSearchAttributes(temporal.connection, config.TEMPORAL_NAMESPACE, logger);
    await ensureRetentionSchedule(temporal.client, config, logger);
    worker = await startProcessWorker();
  }

  let app: Express | null = null;
  let server: ListeningServer | null = null;
  let mllp: RunningMllpListener | null = null;
  if (options.roles.api) {
    // One failed-authentication budget per address for HTTP and MLLP alike.
    const failedAuthentications = createCostBudget(config.FAILED_AUTH_PER_MINUTE);
    const workflows = createConfiguredGateway(temporal.client, config);
    app = createApp({
      workflows,
      failedAuthentications,
      config,
      db: database.db,
      listen: database.listen,
      temporal: temporal.client,
      logger,
      version: VERSION,
      fhirStore: options.fhirStore ?? loadFhirStore(),
      resolveHost: options.resolveHost,
    });
    server = await listen(app, config.HOST, config.PORT, config.SHUTDOWN_GRACE_SECONDS);
    mllp = await startMllpListener({ config, db: database.db, workflows, logger, failedAuthentications });
  }

  const stops: RunningProcess['stops'] = [
    ...(mllp ? [{ name: 'HL7 MLLP listener', run: mllp.close }] : []),
    ...(server ? [{ name: 'API', run: server.close }] : []),
    ...(worker ? [{ name: 'worker', run: worker.stop }] : []),
  ];
  return { app, server, mllp, worker, startWorker: startProcessWorker, stops };
}
