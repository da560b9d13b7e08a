import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { emittedOf, FAST, hasEnded, PENDED_THEN_APPROVED_EVENTS, startRun, verifiedEnvelopes, waitForRun } from '../scenarios/support';
import { isFinished, requestsFor, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver } from '../support/receiver';
import { waitUntil } from '../support/wait';
import { type ClusterService, connectCluster } from './support';

/**
 * The delivery guarantees on the production-shaped cluster: Temporal's services as separate
 * processes on Postgres, requests spread over two API processes, attempts run by two worker processes.
 * The workers' retry schedule is CLUSTER_RETRY_SCHEDULE (500 ms, then an hour).
 */

let cluster: ClusterService;
beforeAll(async () => {
  cluster = await connectCluster();
});
afterAll(() => cluster.close());

/** The receiver got exactly the delivery's recorded attempts: one record per send, none unrecorded. */
function expectOneRecordPerSend(delivery: { attempts: unknown[] }, received: unknown[]) {
  expect(delivery.attempts).toHaveLength(received.length);
}

describe('deliveries on the cluster', () => {
  it('arrive signed, with the delivery id header and the stored envelope as body, recorded once', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(cluster, receiver.url);
      const accepted = await trigger(cluster, tenant.key, { event: 'claims.claim.submitted' });
      const [request] = await receiver.waitForRequests(1);
      expect(request!.headers['x-service-delivery-id']).toBe(accepted.id);
      const verified = new Webhook(tenant.secret, { format: 'raw' }).verify(request!.body, {
        'webhook-id': String(request!.headers['webhook-id']),
        'webhook-timestamp': String(request!.headers['webhook-timestamp']),
        'webhook-signature': String(request!.headers['webhook-signature']),
      });
      expect(verified).toEqual(accepted.envelope);
      verifiedEnvelopes([request!], tenant.secret);

      const delivery = await waitForDelivery(cluster, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.attempts[0]).toMatchObject({ number: 1, trigger: 'initial', outcome: 'succeeded', response_status: 200 });
      expectOneRecordPerSend(delivery, requestsFor(receiver, accepted.id));
    } finally {
      await receiver.close();
    }
  });

  it('are retried after a failed attempt, with the same id and body, each attempt recorded once', async () => {
    const receiver = await startReceiver((_request, index) => (index === 0 ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
    try {
      const tenant = await tenantReceivingAt(cluster, receiver.url);
      const accepted = await trigger(cluster, tenant.key);
      const delivery = await waitForDelivery(cluster, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.attempts.map((attempt: { trigger: string; outcome: string }) => [attempt.trigger, attempt.outcome])).toEqual([
        ['initial', 'failed'],
        ['retry', 'succeeded'],
      ]);
      const [first, second] = requestsFor(receiver, accepted.id);
      expect(second!.body).toBe(first!.body);
      expect(second!.headers['x-service-delivery-id']).toBe(accepted.id);
      expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(500);
      expectOneRecordPerSend(delivery, requestsFor(receiver, accepted.id));
    } finally {
      await receiver.close();
    }
  });

  it('cancel during the backoff ends the delivery and its workflow, and nothing more is sent', async () => {
    const receiver = await startReceiver(() => ({ status: 503 }));
    try {
      const tenant = await tenantReceivingAt(cluster, receiver.url);
      const accepted = await trigger(cluster, tenant.key);
      // Two attempts failed: the next is an hour away.
      await waitForDelivery(cluster, tenant.key, accepted.id, (d) => d.status === 'retrying' && d.attempts.length === 2);
      const cancelled = await cluster.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ id: accepted.id, status: 'cancelled', next_attempt_at: null });
      const result = await cluster.temporal.workflow.getHandle(deliveryWorkflowId(accepted.id)).result();
      expect(result).toMatchObject({ status: 'cancelled', attemptsMade: 2 });
      expect(requestsFor(receiver, accepted.id)).toHaveLength(2);
      const delivery = await waitForDelivery(cluster, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('cancelled');
      expectOneRecordPerSend(delivery, requestsFor(receiver, accepted.id));
    } finally {
      await receiver.close();
    }
  });

  it('replay of a failed delivery re-sends the identical body under the same id as a new, recorded attempt', async () => {
    const receiver = await startReceiver(() => ({ status: 410, body: 'unsubscribed' }));
    try {
      const tenant = await tenantReceivingAt(cluster, receiver.url);
      const accepted = await trigger(cluster, tenant.key, { event: 'prior_auth.request.pended' });
      const failed = await waitForDelivery(cluster, tenant.key, accepted.id, isFinished);
      expect(failed).toMatchObject({ status: 'failed' });

      receiver.answerWith(() => ({ status: 200, body: 'fixed' }));
      const replay = await cluster.call(`/v1/webhooks/deliveries/${accepted.id}/replay`, { key: tenant.key, method: 'POST' });
      expect(replay.status).toBe(202);
      const [first, replayed] = await waitUntil(
        () => (requestsFor(receiver, accepted.id).length >= 2 ? requestsFor(receiver, accepted.id) : undefined),
        {
          what: 'the replayed attempt reaching the receiver',
        },
      );
      expect(replayed!.body).toBe(first!.body);
      expect(replayed!.headers['x-service-delivery-id']).toBe(accepted.id);
      const delivery = await waitForDelivery(cluster, tenant.key, accepted.id, (d) => d.status === 'succeeded');
      expect(delivery.attempts.at(-1)).toMatchObject({ trigger: 'replay', outcome: 'succeeded', response_body: 'fixed' });
      expectOneRecordPerSend(delivery, requestsFor(receiver, accepted.id));
    } finally {
      await receiver.close();
    }
  });
});

describe('a scenario run on the cluster', () => {
  it('emits the prior-authorization events in step order, each signed and delivered once', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(cluster, receiver.url);
      const accepted = await startRun(cluster, tenant.key, 'prior_auth_approved_after_pend', { pace: FAST, outcome: 'pended_then_approved' });
      const run = await waitForRun(cluster, tenant.key, accepted.id, hasEnded, 60_000);
      expect(run.status).toBe('completed');
      const emitted = emittedOf(run);
      const envelopes = verifiedEnvelopes(await receiver.waitForRequests(emitted.length), tenant.secret);
      expect(envelopes.map((envelope) => envelope.event)).toEqual(PENDED_THEN_APPROVED_EVENTS);
      expect(envelopes.map((envelope) => envelope.delivery_id)).toEqual(emitted.map((entry) => entry.delivery_id));
    } finally {
      await receiver.close();
    }
  });
});
