import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeliveryActivities } from '../../activities/deliveries';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

// Two retries a moment apart: a delivery fails for good within a second.
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '100ms,200ms' });
});
afterAll(() => service.stop());

const deliveryIdOf = (request: { headers: Record<string, unknown> }) => String(request.headers['x-service-delivery-id']);

async function reportsOf(key: string): Promise<any[]> {
  return (await service.call('/v1/webhooks/deliveries?event=webhook.delivery.exhausted', { key })).body.data;
}

describe('webhook.delivery.exhausted', () => {
  it('reports a delivery that failed for good once, to the organization default, with its id, event, last status and attempt count', async () => {
    const organizationReceiver = await startReceiver();
    const failingReceiver = await startReceiver(() => ({ status: 503, body: 'down' }));
    try {
      const tenant = await tenantReceivingAt(service, organizationReceiver.url);
      // The connection's own URL is the one failing: the report must not go there.
      const connection = await service.call('/v1/connections', {
        key: tenant.key,
        method: 'POST',
        body: { name: 'Failing receiver', environment: 'staging', webhook_url: failingReceiver.url },
      });
      const failed = await trigger(service, tenant.key, { event: 'claims.claim.submitted', connection_id: connection.body.id });
      expect(await waitForDelivery(service, tenant.key, failed.id, isFinished)).toMatchObject({ status: 'failed' });

      const [request] = await organizationReceiver.waitForRequests(1);
      const envelope = JSON.parse(request!.body);
      expect(envelope).toMatchObject({ event: 'webhook.delivery.exhausted', connection_id: null, environment: 'staging' });
      expect(envelope.resource).toMatchObject({
        resourceType: 'AuditEvent',
        outcome: '8',
        entity: [
          {
            what: { identifier: { value: failed.id } },
            name: 'claims.claim.submitted',
            detail: [
              { type: 'delivery_id', valueString: failed.id },
              { type: 'event', valueString: 'claims.claim.submitted' },
              { type: 'last_status', valueString: '503' },
              { type: 'attempt_count', valueString: '3' },
              { type: 'connection_id', valueString: connection.body.id },
            ],
          },
        ],
      });

      const reports = await reportsOf(tenant.key);
      expect(reports).toHaveLength(1);
      expect(reports[0].id).toBe(deliveryIdOf(request!));
      expect(await waitForDelivery(service, tenant.key, reports[0].id, isFinished)).toMatchObject({ status: 'succeeded', connection_id: null });
      expect(failingReceiver.requests.map(deliveryIdOf)).toEqual([failed.id, failed.id, failed.id]);

      // The activity run again (a retry after a crash) answers from the report it recorded.
      const activities = createDeliveryActivities({ db: service.database.db, allowPrivateTargets: true, timeoutMs: 1000 });
      for (let run = 0; run < 2; run += 1) {
        expect(await activities.recordExhaustedDelivery({ deliveryId: failed.id })).toMatchObject({ id: reports[0].id, sourceDeliveryId: failed.id });
      }
      expect(await reportsOf(tenant.key)).toHaveLength(1);
      expect(organizationReceiver.requests).toHaveLength(1);
    } finally {
      await Promise.all([organizationReceiver.close(), failingReceiver.close()]);
    }
  });

  it('never reports on a report: an exhausted webhook.delivery.exhausted ends there', async () => {
    const goneReceiver = await startReceiver(() => ({ status: 410, body: 'gone' }));
    try {
      const tenant = await tenantReceivingAt(service, goneReceiver.url);
      const failed = await trigger(service, tenant.key);
      expect(await waitForDelivery(service, tenant.key, failed.id, isFinished)).toMatchObject({ status: 'failed' });
      const [report] = await waitUntil(async () => ((await reportsOf(tenant.key)).length > 0 ? reportsOf(tenant.key) : undefined), {
        what: 'the report of the failed delivery',
      });
      expect(await waitForDelivery(service, tenant.key, report.id, isFinished)).toMatchObject({ status: 'failed' });
      // Once the report's run has closed, nothing more can come of it.
      await service.temporal.workflow.getHandle(deliveryWorkflowId(report.id)).result();

      const all = (await service.call('/v1/webhooks/deliveries', { key: tenant.key })).body.data;
      expect(all.map((delivery: { id: string }) => delivery.id).sort()).toEqual([failed.id, report.id].sort());
      expect(goneReceiver.requests.map(deliveryIdOf)).toEqual([failed.id, report.id]);
    } finally {
      await goneReceiver.close();
    }
  });
});
