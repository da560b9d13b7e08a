import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { startProcess } from '../runtime/process';
import { stopOnSignal } from '../runtime/services';
import { connectTemporal } from '../runtime/temporal';
import { runMain } from './run-main';
import { requireSharedInfrastructure } from './split-process';

/** `npm run start:worker`: one Temporal worker (run as many as you like) against Postgres and Temporal. */
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const { databaseUrl, temporalAddress } = requireSharedInfrastructure(config, 'worker');
  const database = await openDatabase({ databaseUrl, dataDir: config.DATA_DIR });
  const temporal = await connectTemporal(temporalAddress, config.TEMPORAL_NAMESPACE);
  const running = await startProcess({ config, logger, database, temporal, temporalAddress, roles: { api: false, worker: true } });
  // The client was only needed to set up the Schedule; the worker polls on its own connection.
  await temporal.connection.close();
  const worker = running.worker!;
  stopOnSignal(logger, [...running.stops, { name: 'database', run: database.close }]);
  logger.info(`Worker polling task queue "${config.TEMPORAL_TASK_QUEUE}" on ${temporalAddress}`);
  await worker.done;
});
