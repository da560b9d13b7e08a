import type { Client } from '@temporalio/client';
import type { Config } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createLogger } from '../platform/logger';
import { ensureDemoOrganization, webhookSecretsOf } from '../platform/organizations';
import { VERSION } from '../platform/version';
import { createRelayReceiver } from '../relay-receiver/app';
import { startProcess } from '../runtime/process';
import { listen, provideTemporal, resolveDemoApiKey, stopOnSignal } from '../runtime/services';
import { connectTemporal } from '../runtime/temporal';
import type { selfCheckWorkflow } from '../workflows/self-check/workflow';

/**
 * `npm start`'s service (bin/start.ts), in one process for a newcomer: Temporal (a local dev server
 * unless TEMPORAL_ADDRESS is set), the database (PGlite unless DATABASE_URL is set), a worker and the API.
 */
export async function startService(config: Config): Promise<void> {
  const logger = createLogger(config.LOG_LEVEL);

  const temporalEndpoint = await provideTemporal(config, logger);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
  const demoKey = resolveDemoApiKey(config);
  // The relay verifies with the demo organization's secrets, read at each delivery so rotations apply.
  let demoOrganizationId = '';
  const relay = createRelayReceiver({
    secrets: () => webhookSecretsOf(database.db, demoOrganizationId),
    forwardUrl: config.RELAY_FORWARD_URL,
    logger,
  });
  const relayServer = await listen(relay, config.HOST, config.RELAY_PORT, config.SHUTDOWN_GRACE_SECONDS);
  const relayUrl = `http://localhost:${relayServer.port}`;
  demoOrganizationId = (await ensureDemoOrganization(database.db, demoKey, { webhookUrl: `${relayUrl}/webhooks` })).organizationId;

  const temporal = await connectTemporal(temporalEndpoint.address, config.TEMPORAL_NAMESPACE);
  const running = await startProcess({
    config,
    logger,
    database,
    temporal,
    temporalAddress: temporalEndpoint.address,
    roles: { api: true, worker: true },
  });
  const server = running.server!;
  const mllp = running.mllp;

  stopOnSignal(logger, [
    ...running.stops,
    { name: 'relay receiver', run: relayServer.close },
    { name: 'Temporal client', run: () => temporal.connection.close() },
    { name: 'database', run: database.close },
    ...(config.TEMPORAL_ADDRESS ? [] : [{ name: 'Temporal dev server', run: temporalEndpoint.stop }]),
  ]);

  const selfCheck = await runSelfCheck(temporal.client, config.TEMPORAL_TASK_QUEUE);
  const base = config.PUBLIC_BASE_URL.replace(`:${config.PORT}`, `:${server.port}`);
  const lines = [
    '',
    `Synthetic Healthcare Sandbox ${VERSION} is running (synthetic data only, never real patients).`,
    '',
    `  API              ${base}`,
    `  API reference    ${base}/docs   (OpenAPI: ${base}/openapi.json)`,
    `  SMART on FHIR    ${base}/.well-known/smart-configuration   (FHIR R4: ${base}/fhir/R4)`,
    `  Temporal Web UI  ${temporalEndpoint.uiUrl ?? `(external Temporal at ${temporalEndpoint.address})`}`,
    `  Database         ${database.kind === 'pglite' ? `embedded PGlite in ${database.location}` : `Postgres ${database.location}`}`,
    `  Worker           task queue "${config.TEMPORAL_TASK_QUEUE}"; self-check ${selfCheck}`,
    `  HL7 v2 MLLP      ${mllp ? `localhost:${mllp.port}   (templates: ${base}/v1/sandbox/hl7/templates)` : 'off (HL7_MLLP_PORT=off)'}`,
    `  Relay receiver   ${relayUrl}   (the demo organization's webhook URL${config.RELAY_FORWARD_URL ? `; forwards to ${config.RELAY_FORWARD_URL}` : ''})`,
    '',
    `  Demo API key     ${demoKey}`,
    '',
    'Try it:',
    `  curl -H "Authorization: Bearer ${demoKey}" "${base}/v1/patients?limit=2"`,
    `  curl -H "Authorization: Bearer ${demoKey}" ${base}/v1/connections`,
    `  curl -X POST -H "Authorization: Bearer ${demoKey}" ${base}/v1/webhooks/trigger-mock-event   (then watch the relay receiver)`,
    `  curl -X POST -H "Authorization: Bearer ${demoKey}" ${base}/v1/sandbox/scenarios/prior_auth_approved_after_pend/run   (3 simulated days in 3.5 min)`,
    '',
    'Stop with Ctrl+C.',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function runSelfCheck(client: Client, taskQueue: string): Promise<string> {
  const started = Date.now();
  const result = await client.workflow.execute<typeof selfCheckWorkflow>('selfCheckWorkflow', {
    taskQueue,
    workflowId: `self-check-${started}`,
    workflowExecutionTimeout: '30 seconds',
  });
  return `passed in ${Date.now() - started} ms (workflow → activity → database: ${result.organizations} organization(s))`;
}
