import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantReceivingAt } from '../support/deliveries';
import { runEntryPoint } from '../support/processes';
import { startReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { emittedOf, hasEnded, PENDED_THEN_APPROVED_EVENTS, startRun, waitForRun } from './support';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

describe('a scenario run whose worker is killed', () => {
  it('completes on a replacement worker, and no step emits twice', { timeout: 120_000 }, async () => {
    const receiver = await startReceiver();
    // The run's worker is a process of its own, so it can be killed outright (SIGKILL: no draining).
    await service.stopWorker();
    const doomed = runEntryPoint('bin/start-worker.ts', [], {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: service.config.DATABASE_URL,
      TEMPORAL_ADDRESS: service.config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: service.taskQueue,
      ALLOW_PRIVATE_TARGETS: 'true',
    });
    try {
      await doomed.waitFor(/Worker polling/, 90_000);
      const tenant = await tenantReceivingAt(service, receiver.url);
      // ×20,000: after the submission, the pend waits a simulated day, 4.3 s.
      const accepted = await startRun(service, tenant.key, 'prior_auth_approved_after_pend', { pace: { mode: 'accelerated', time_scale: 20_000 } });
      await waitForRun(service, tenant.key, accepted.id, (run) => run.steps[3].status === 'waiting');
      expect(receiver.requests).toHaveLength(3);
      expect(await doomed.stop('SIGKILL')).toBeNull();

      await service.startWorker();
      const run = await waitForRun(service, tenant.key, accepted.id, hasEnded, 90_000);
      expect(run.status).toBe('completed');
      const emitted = emittedOf(run);
      expect(emitted.map((entry) => entry.event)).toEqual(PENDED_THEN_APPROVED_EVENTS);
      await receiver.waitForRequests(emitted.length);
      const deliveryIds = receiver.requests.map((request) => request.headers['x-service-delivery-id']);
      expect(deliveryIds).toEqual(emitted.map((entry) => entry.delivery_id));
      expect(new Set(deliveryIds).size).toBe(emitted.length);
    } finally {
      await doomed.stop('SIGKILL');
      await receiver.close();
    }
  });
});
