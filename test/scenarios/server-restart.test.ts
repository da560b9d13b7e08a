import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { connectTemporal, type DevServer, type DevServerOptions, ensureSearchAttributes, startDevServer } from '../../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../../runtime/temporal-cli';
import { tenantReceivingAt } from '../support/deliveries';
import { freePort } from '../support/ports';
import { startReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { hasEnded, startRun, waitForRun } from './support';

const logger = createLogger('warn', { pretty: false });
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-scenario-restart-'));
let options: DevServerOptions;
let server: DevServer;
let service: TestService;

// A dev server of its own, file-backed as `npm start` runs it, so this test can restart it.
beforeAll(async () => {
  options = {
    cliPath: await ensureTemporalCli(logger, temporalCliOptions(loadConfig())),
    port: await freePort(),
    uiPort: null,
    databaseFile: join(scratch, 'temporal.sqlite'),
    logFile: join(scratch, 'temporal.log'),
    namespace: 'default',
  };
  server = await startDevServer(options, logger);
  const temporal = await connectTemporal(server.address, 'default');
  await ensureSearchAttributes(temporal.connection, 'default', logger);
  await temporal.connection.close();
  service = await startTestService({ TEMPORAL_ADDRESS: server.address });
});
afterAll(async () => {
  await service.stop();
  await server.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('a scenario run across a restart of the file-backed dev server', () => {
  it('resumes its timer at the right time and emits each step once', { timeout: 120_000 }, async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      // ×21,600: the cancellation comes two simulated days, 8 real seconds, after the booking.
      const accepted = await startRun(service, tenant.key, 'appointment_rescheduled', { pace: { mode: 'accelerated', time_scale: 21_600 } });
      const waiting = await waitForRun(service, tenant.key, accepted.id, (run) => run.steps[1].status === 'waiting');
      const dueAt = Date.parse(waiting.steps[1].due_at);

      await server.stop();
      server = await startDevServer(options, logger);

      const run = await waitForRun(service, tenant.key, accepted.id, hasEnded, 90_000);
      expect(run.status).toBe('completed');
      const requests = await receiver.waitForRequests(3);
      expect(requests.map((request) => JSON.parse(request.body).event)).toEqual([
        'scheduling.appointment.booked',
        'scheduling.appointment.cancelled',
        'scheduling.appointment.booked',
      ]);
      expect(new Set(requests.map((request) => request.headers['x-service-delivery-id'])).size).toBe(3);
      // The timer survived the restart: the cancellation came when it was due, not before.
      expect(requests[1]!.receivedAt).toBeGreaterThanOrEqual(dueAt);
    } finally {
      await receiver.close();
    }
  });
});
