import { createApp } from '../api/app';
import { loadFhirStore } from '../fixtures/store';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { VERSION } from '../platform/version';
import { createWorkflowClient } from '../platform/workflow-client';
import { startMllpListener } from '../runtime/mllp';
import { listen, stopOnSignal } from '../runtime/services';
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
  const app = createApp({
    config,
    db: database.db,
    listen: database.listen,
    temporal: temporal.client,
    logger,
    version: VERSION,
    fhirStore: loadFhirStore(),
  });
  const server = await listen(app, config.HOST, config.PORT, config.SHUTDOWN_GRACE_SECONDS);
  const workflows = createWorkflowClient(temporal.client, config.TEMPORAL_TASK_QUEUE, { callTimeoutMs: config.TEMPORAL_CALL_TIMEOUT_MS });
  const mllp = await startMllpListener({ config, db: database.db, workflows, logger });
  stopOnSignal(logger, [
    ...(mllp ? [{ name: 'HL7 MLLP listener', run: mllp.close }] : []),
    { name: 'API', run: server.close },
    { name: 'Temporal client', run: () => temporal.connection.close() },
    { name: 'database', run: database.close },
  ]);
  logger.info(
    `API ${VERSION} listening on ${config.HOST}:${server.port}, Temporal ${temporalAddress}, ${database.location}; HL7 MLLP ${mllp ? `on port ${mllp.port}` : 'off'}`,
  );
});
