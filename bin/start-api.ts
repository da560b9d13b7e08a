import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { VERSION } from '../platform/version';
import { startProcess } from '../runtime/process';
import { stopOnSignal } from '../runtime/services';
import { connectTemporal } from '../runtime/temporal';
import { runMain } from './run-main';
import { requireSharedInfrastructure } from './split-process';

/** `npm run start:api`: the HTTP API alone (production), against Postgres and an existing Temporal. */
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const { databaseUrl, temporalAddress } = requireSharedInfrastructure(config, 'API');
  const database = await openDatabase({ databaseUrl, dataDir: config.DATA_DIR });
  const temporal = await connectTemporal(temporalAddress, config.TEMPORAL_NAMESPACE);
  const running = await startProcess({ config, logger, database, temporal, temporalAddress, roles: { api: true, worker: false } });
  const server = running.server!;
  const mllp = running.mllp;
  stopOnSignal(logger, [
    ...running.stops,
    { name: 'Temporal client', run: () => temporal.connection.close() },
    { name: 'database', run: database.close },
  ]);
  logger.info(
    `API ${VERSION} listening on ${config.HOST}:${server.port}, Temporal ${temporalAddress}, ${database.location}; HL7 MLLP ${mllp ? `on port ${mllp.port}` : 'off'}`,
  );
});
