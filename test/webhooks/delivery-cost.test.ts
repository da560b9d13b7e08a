import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countHistory } from '../../bench/costs';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { tenantReceivingAt, trigger } from '../support/deliveries';
import { startReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/**
 * What a delivery that succeeds at once costs the engine (docs/operations/capacity-plan.md prices
 * Temporal Cloud from it): its start, one attempt activity and the status search attribute, with no
 * local activity, because the attempt that got the 2xx recorded the delivery `succeeded` itself; and
 * no patch marker, each of which wrote two events more (a marker and a TemporalChangeVersion upsert):
 * a new run takes its behaviours from its input's revision (workflows/delivery/contract.ts).
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

describe('a delivery that succeeds at once', () => {
  it('costs three Temporal actions in two workflow tasks, and its row reads succeeded once the workflow has closed', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const handle = service.temporal.workflow.getHandle(deliveryWorkflowId(accepted.id));
      await handle.result();

      const counts = countHistory((await handle.fetchHistory()).events ?? []);
      expect(counts).toMatchObject({
        // Started; a workflow task; the attempt scheduled, started, completed; a workflow task; the status upsert; completed.
        events: 12,
        workflowTasks: 2,
        activityTasks: 1,
        localActivityTasks: 0,
        timers: 0,
        searchAttributeUpserts: 1,
        actions: 3,
      });
      const delivery = await service.call(`/v1/webhooks/deliveries/${accepted.id}`, { key: tenant.key });
      expect(delivery.body).toMatchObject({ status: 'succeeded', next_attempt_at: null, attempts: [{ number: 1, outcome: 'succeeded' }] });
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
