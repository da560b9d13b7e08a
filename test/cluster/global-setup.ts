import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createLogger } from '../../platform/logger';
import { ensureClusterBinaries } from '../../runtime/cluster/binaries';
import { type ClusterInfo, startCluster } from '../../runtime/cluster/cluster';
import { ADMIN_DATABASE_URL } from '../support/global-setup';

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ClusterInfo;
  }
}

/** The retry schedule the cluster's workers run: a quick first retry, then one long enough to cancel in. */
export const CLUSTER_RETRY_SCHEDULE = '500ms,1h';

/** One cluster for the run, as `npm run cluster` starts it: two history nodes, two API and two worker processes. */
export default async function setup(project: TestProject) {
  const logger = createLogger(process.env.LOG_LEVEL ?? 'info', { pretty: false });
  const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-cluster-'));
  const cluster = await startCluster({
    binaries: ensureClusterBinaries((message) => logger.warn(message)),
    dataDir,
    adminDatabaseUrl: ADMIN_DATABASE_URL,
    apis: 2,
    workers: 2,
    historyNodes: 2,
    historyShards: 4,
    appEnvironment: {
      WEBHOOK_RETRY_SCHEDULE: CLUSTER_RETRY_SCHEDULE,
      // The node-loss test sends hundreds of requests with one key in a minute.
      RATE_LIMIT_PER_MINUTE: '100000',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    },
    logger,
  });
  logger.warn(`Cluster started in ${cluster.info.startedIn.seconds} s (load average ${cluster.info.startedIn.loadAverage.join(', ')})`);
  project.provide('cluster', cluster.info);
  return async () => {
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
