import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { ensureRetentionSchedule } from '../runtime/retention-schedule';
import { stopOnSignal } from '../runtime/services';
import { connectTemporal, ensureSearchAttributes } from '../runtime/temporal';
import { startWorker } from '../runtime/worker';
import { runMain } from './run-main';
import { requireSharedInfrastructure } from './split-process';

/** `npm run start:worker`: one Temporal worker (run as many as you like) against Postgres and Temporal. */
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const { databaseUrl, temporalAddress } = requireSharedInfrastructure(config, 'worker');
  const database = await openDatabase({ databaseUrl, dataDir: config.DATA_DIR });
  const temporal = await connectTemporal(temporalAddress, config.TEMPORAL_NAMESPACE);
  await ensureSearchAttributes(temporal.connection, config.TEMPORAL_NAMESPACE, logger);
  await ensureRetentionSchedule(temporal.client, config, logger);
  await temporal.connection.close();
  const worker = await startWorker({ address: temporalAddress, config, db: database.db, logger });
  stopOnSignal(logger, [
    { name: 'worker', run: worker.stop },
    { name: 'database', run: database.close },
  ]);
  logger.info(`Worker polling task queue "${config.TEMPORAL_TASK_QUEUE}" on ${temporalAddress}`);
  await worker.done;
});
