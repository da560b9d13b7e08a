import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../platform/config';
import { openDatabase } from '../../platform/database';
import { createLogger } from '../../platform/logger';
import { connectTemporal, ensureSearchAttributes, startDevServer } from '../../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../../runtime/temporal-cli';
import { WORKFLOWS_PATH } from '../../runtime/workflow-bundle';
import { freePort } from './ports';
import { createScratchDatabase } from './scratch-database';
import { ensureTimeSkippingServer, startTimeSkippingServer } from './time-skipping-server';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    databaseUrl: string;
    adminDatabaseUrl: string;
    workflowBundlePath: string;
    timeSkippingAddress: string;
    timeSkippingNamespace: string;
  }
}

/** Where tests may create and drop databases; the machine's Postgres with trust auth by default. */
export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Starts the run's shared parts: a headless in-memory Temporal dev server, a time-skipping Temporal
 * server for workflows that wait for days, a fresh Postgres database with every migration applied,
 * and the workflow bundle every test worker loads.
 */
export default async function setup(project: TestProject) {
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn', { pretty: false });
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-test-'));

  const [cliPath, port] = await Promise.all([ensureTemporalCli(logger, temporalCliOptions(loadConfig())), freePort()]);
  const timeSkipping = await startTimeSkippingServer(ensureTimeSkippingServer((message) => logger.warn(message)));
  const server = await startDevServer(
    { cliPath, port, uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
    logger,
  );
  const temporal = await connectTemporal(server.address, 'default');
  await ensureSearchAttributes(temporal.connection, 'default', logger);
  await temporal.connection.close();

  const database = await createScratchDatabase(ADMIN_DATABASE_URL, 'sandbox_test');
  const migrated = await openDatabase({ databaseUrl: database.url, dataDir: scratch });
  await migrated.close();

  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  const workflowBundlePath = join(scratch, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, bundle.code);

  project.provide('temporalAddress', server.address);
  project.provide('databaseUrl', database.url);
  project.provide('adminDatabaseUrl', ADMIN_DATABASE_URL);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('timeSkippingAddress', timeSkipping.address);
  project.provide('timeSkippingNamespace', timeSkipping.namespace);

  return async () => {
    await Promise.all([server.stop(), timeSkipping.stop()]);
    await database.drop();
    rmSync(scratch, { recursive: true, force: true });
  };
}
