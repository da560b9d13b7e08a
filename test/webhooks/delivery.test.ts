import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { newId } from '../../platform/ids';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { deliveryWorkflow } from '../../workflows/delivery/workflow';
import { isFinished, requestsFor, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { freePort } from '../support/ports';
import { startReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

// A short schedule through configuration: 4 retries, so 5 attempts in all.
const SCHEDULE_MS = [300, 600, 900, 1200];
// Temporal timers fire after their delay, give or take the server's timer granularity.
const TIMER_SLACK_MS = 1500;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE_MS.map((ms) => `${ms}ms`).join(',') });
});
afterAll(() => service.stop());

describe('a delivery to a real receiver', () => {
  it('arrives with both signatures valid, the delivery id header, and the stored envelope as its body', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key, { event: 'claims.claim.submitted' });
      expect(accepted.url).toBe(`/v1/webhooks/deliveries/${accepted.id}`);
      const [request] = await receiver.waitForRequests(1);

      expect(request!.headers['x-service-delivery-id']).toBe(accepted.id);
      expect(request!.headers['webhook-id']).toBe(accepted.id);
      expect(request!.headers['content-type']).toBe('application/json');
      expect(request!.headers['user-agent']).toMatch(/^SyntheticHealthcareSandbox-Webhooks\/\d+\.\d+\.\d+$/);

      const expected = createHmac('sha256', Buffer.from(tenant.secret, 'utf8')).update(request!.body).digest('hex');
      const [scheme, received] = String(request!.headers['x-service-signature']).split('=');
      expect(scheme).toBe('sha256');
      expect(timingSafeEqual(Buffer.from(received!, 'hex'), Buffer.from(expected, 'hex'))).toBe(true);

      // An independent verifier: the Standard Webhooks reference library, with the raw secret.
      const verified = new Webhook(tenant.secret, { format: 'raw' }).verify(request!.body, {
        'webhook-id': String(request!.headers['webhook-id']),
        'webhook-timestamp': String(request!.headers['webhook-timestamp']),
        'webhook-signature': String(request!.headers['webhook-signature']),
      });
      expect(verified).toEqual(accepted.envelope);
      expect(() => new Webhook(`${tenant.secret}x`, { format: 'raw' }).verify(request!.body, request!.headers as Record<string, string>)).toThrow();

      const envelope = JSON.parse(request!.body);
      expect(envelope).toMatchObject({
        event: 'claims.claim.submitted',
        connection_id: null,
        environment: 'sandbox',
        resource: { resourceType: 'Claim' },
      });
      expect(envelope.id).toMatch(/^evt_/);

      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery).toMatchObject({ status: 'succeeded', next_attempt_at: null });
      expect(delivery.attempts).toHaveLength(1);
      expect(delivery.attempts[0]).toMatchObject({
        number: 1,
        trigger: 'initial',
        outcome: 'succeeded',
        response_status: 200,
        response_body: 'ok',
        target_url: receiver.url,
        target_source: 'organization',
        chaos: null,
        error: null,
      });
    } finally {
      await receiver.close();
    }
  });
});

describe('failing receivers', () => {
  it('retry on the configured schedule, stop after 5 attempts and end failed', async () => {
    const receiver = await startReceiver(() => ({ status: 500, body: 'receiver is down' }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);

      const retrying = await waitForDelivery(service, tenant.key, accepted.id, (d) => d.status === 'retrying');
      expect(Date.parse(retrying.next_attempt_at)).toBeGreaterThan(Date.parse(retrying.attempts[0].attempted_at));

      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('failed');
      expect(delivery.next_attempt_at).toBeNull();
      expect(delivery.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2, 3, 4, 5]);
      expect(delivery.attempts.map((a: { trigger: string }) => a.trigger)).toEqual(['initial', 'retry', 'retry', 'retry', 'retry']);
      expect(
        delivery.attempts.every(
          (a: { response_status: number; response_body: string }) => a.response_status === 500 && a.response_body === 'receiver is down',
        ),
      ).toBe(true);
      // Its webhook.delivery.exhausted report goes to the same receiver as a delivery of its own.
      const received = requestsFor(receiver, accepted.id);
      expect(received).toHaveLength(5);

      // Each gap between attempts is the schedule's entry for it, as the receiver saw them.
      for (let i = 1; i < received.length; i += 1) {
        const gap = received[i]!.receivedAt - received[i - 1]!.receivedAt;
        expect(gap, `gap before attempt ${i + 1}`).toBeGreaterThanOrEqual(SCHEDULE_MS[i - 1]!);
        expect(gap, `gap before attempt ${i + 1}`).toBeLessThan(SCHEDULE_MS[i - 1]! + TIMER_SLACK_MS);
      }
      // The workflow ends (once it has started its report's run), so no timer is left to send a sixth request.
      const handle = service.temporal.workflow.getHandle(deliveryWorkflowId(accepted.id));
      await handle.result();
      expect((await handle.describe()).status.name).toBe('COMPLETED');
    } finally {
      await receiver.close();
    }
  });

  it('stop at once on 410 Gone', async () => {
    const receiver = await startReceiver(() => ({ status: 410, body: 'unsubscribed' }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('failed');
      expect(delivery.attempts).toHaveLength(1);
      expect(delivery.attempts[0]).toMatchObject({ outcome: 'gone', response_status: 410 });
      expect(requestsFor(receiver, accepted.id)).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('wait at least a 429 Retry-After before the next attempt', async () => {
    const receiver = await startReceiver((_request, index) => (index === 0 ? { status: 429, headers: { 'Retry-After': '2' } } : { status: 204 }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const retrying = await waitForDelivery(service, tenant.key, accepted.id, (d) => d.status === 'retrying');
      expect(Date.parse(retrying.next_attempt_at) - Date.parse(retrying.attempts[0].attempted_at)).toBeGreaterThanOrEqual(2000);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('succeeded');
      const gap = receiver.requests[1]!.receivedAt - receiver.requests[0]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(2000);
      expect(gap).toBeLessThan(2000 + TIMER_SLACK_MS);
    } finally {
      await receiver.close();
    }
  });
});

describe('cancel and replay', () => {
  it('cancel mid-backoff ends the delivery at once and nothing more reaches the receiver', async () => {
    const slow = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '1h' });
    const receiver = await startReceiver(() => ({ status: 503 }));
    try {
      const tenant = await tenantReceivingAt(slow, receiver.url);
      const accepted = await trigger(slow, tenant.key);
      await waitForDelivery(slow, tenant.key, accepted.id, (d) => d.status === 'retrying');

      const cancelled = await slow.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ id: accepted.id, status: 'cancelled', next_attempt_at: null });
      // The hour-long timer is gone with the run: the workflow has completed, cancelled.
      const result = await slow.temporal.workflow.getHandle(deliveryWorkflowId(accepted.id)).result();
      expect(result).toMatchObject({ status: 'cancelled', attemptsMade: 1 });
      expect(receiver.requests).toHaveLength(1);

      const again = await slow.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ code: 'delivery_state_conflict' });
      expect(again.body.detail).toContain('already cancelled');
    } finally {
      await receiver.close();
      await slow.stop();
    }
  });

  it('replay of a failed delivery re-sends the identical body with the same delivery id, as a new attempt', async () => {
    const receiver = await startReceiver(() => ({ status: 500 }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key, { event: 'prior_auth.request.pended' });
      const failed = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(failed.status).toBe('failed');

      receiver.answerWith(() => ({ status: 200, body: 'fixed' }));
      const replay = await service.call(`/v1/webhooks/deliveries/${accepted.id}/replay`, { key: tenant.key, method: 'POST' });
      expect(replay.status).toBe(202);
      expect(replay.body.status).toBe('pending');

      // Only this delivery's requests: its webhook.delivery.exhausted report reaches the same receiver.
      const ofDelivery = () => requestsFor(receiver, accepted.id);
      const [first, , , , , replayed] = await waitUntil(() => (ofDelivery().length >= 6 ? ofDelivery() : undefined), {
        what: 'the replayed attempt reaching the receiver',
      });
      expect(replayed!.body).toBe(first!.body);
      expect(replayed!.headers['x-service-delivery-id']).toBe(accepted.id);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, (d) => d.status === 'succeeded');
      expect(delivery.attempts).toHaveLength(6);
      expect(delivery.attempts[5]).toMatchObject({ number: 6, trigger: 'replay', outcome: 'succeeded', response_body: 'fixed' });
      expect(JSON.stringify(delivery.envelope)).toBe(first!.body);
    } finally {
      await receiver.close();
    }
  });

  it('refuses to replay a delivery that is still retrying', async () => {
    const slow = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '1h' });
    const receiver = await startReceiver(() => ({ status: 500 }));
    try {
      const tenant = await tenantReceivingAt(slow, receiver.url);
      const accepted = await trigger(slow, tenant.key);
      await waitForDelivery(slow, tenant.key, accepted.id, (d) => d.status === 'retrying');
      const replay = await slow.call(`/v1/webhooks/deliveries/${accepted.id}/replay`, { key: tenant.key, method: 'POST' });
      expect(replay.status).toBe(409);
      expect(replay.body.detail).toContain('retrying');
      await slow.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
    } finally {
      await receiver.close();
      await slow.stop();
    }
  });
});

describe('webhook targets', () => {
  it('a connection override wins over the organization default, URL and secret each on their own', async () => {
    const organizationReceiver = await startReceiver();
    const connectionReceiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, organizationReceiver.url);
      const own = await service.call('/v1/connections', {
        key: tenant.key,
        method: 'POST',
        body: { name: 'Own target', environment: 'staging', webhook_url: connectionReceiver.url, rotate_secret: true },
      });
      const accepted = await trigger(service, tenant.key, { connection_id: own.body.id });
      const [request] = await connectionReceiver.waitForRequests(1);
      const envelope = JSON.parse(request!.body);
      expect(envelope).toMatchObject({ connection_id: own.body.id, environment: 'staging' });
      expect(request!.headers['x-service-signature']).toBe(
        `sha256=${createHmac('sha256', own.body.webhook_secret).update(request!.body).digest('hex')}`,
      );
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.attempts[0]).toMatchObject({ target_url: connectionReceiver.url, target_source: 'connection' });

      // A connection with its own URL but no own secret is signed with the organization secret.
      const urlOnly = await service.call('/v1/connections', {
        key: tenant.key,
        method: 'POST',
        body: { name: 'URL only', webhook_url: connectionReceiver.url },
      });
      await trigger(service, tenant.key, { connection_id: urlOnly.body.id });
      const [, second] = await connectionReceiver.waitForRequests(2);
      expect(second!.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', tenant.secret).update(second!.body).digest('hex')}`);
      expect(organizationReceiver.requests).toHaveLength(0);
    } finally {
      await organizationReceiver.close();
      await connectionReceiver.close();
    }
  });

  it('a URL fixed while a delivery is retrying takes effect on its next attempt', async () => {
    const nothingListens = `http://127.0.0.1:${await freePort()}/webhooks`;
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, nothingListens);
      const accepted = await trigger(service, tenant.key);
      const retrying = await waitForDelivery(service, tenant.key, accepted.id, (d) => d.status === 'retrying');
      expect(retrying.attempts[0].error).toMatch(/Could not reach the receiver: ECONNREFUSED/);

      await service.call('/v1/settings/webhook', { key: tenant.key, method: 'PATCH', body: { webhook_url: receiver.url } });
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.attempts.map((a: { target_url: string }) => a.target_url)).toEqual([nothingListens, receiver.url]);
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});

describe('tenancy', () => {
  it("another organization's key sees none of these deliveries", async () => {
    const receiver = await startReceiver();
    try {
      const owner = await tenantReceivingAt(service, receiver.url);
      const stranger = await service.newTenant();
      const accepted = await trigger(service, owner.key);
      await waitForDelivery(service, owner.key, accepted.id, isFinished);
      for (const [method, path] of [
        ['GET', `/v1/webhooks/deliveries/${accepted.id}`],
        ['POST', `/v1/webhooks/deliveries/${accepted.id}/replay`],
        ['POST', `/v1/webhooks/deliveries/${accepted.id}/cancel`],
      ] as const) {
        const response = await service.call(path, { key: stranger.key, method });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(response.body.code).toBe('not_found');
      }
      expect((await service.call('/v1/webhooks/deliveries', { key: stranger.key })).body.data).toEqual([]);
      const ownerConnection = await service.call('/v1/connections', { key: owner.key, method: 'POST', body: { name: 'mine' } });
      const borrowed = await service.call('/v1/webhooks/trigger-mock-event', {
        key: stranger.key,
        method: 'POST',
        body: { connection_id: ownerConnection.body.id },
      });
      expect(borrowed.status).toBe(404);
    } finally {
      await receiver.close();
    }
  });
});

describe('accepted work is never lost', () => {
  it('a delivery whose workflow started, but whose API process died before recording it, is recorded by the workflow and arrives', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const newDelivery = {
        id: newId('dlv'),
        organizationId: tenant.organizationId,
        connectionId: null,
        scenarioId: null,
        event: 'adt.patient.admitted',
        environment: 'sandbox',
        envelopeBody: JSON.stringify({
          id: newId('evt'),
          event: 'adt.patient.admitted',
          connection_id: null,
          environment: 'sandbox',
          occurred_at: new Date().toISOString(),
          resource: findEvent('adt.patient.admitted')!.sampleResource(service.fhirStore),
        }),
        createdAt: new Date().toISOString(),
      };
      // What the API had done when it died: the workflow is started, the row is not written.
      await service.temporal.workflow.start(deliveryWorkflow, {
        workflowId: deliveryWorkflowId(newDelivery.id),
        taskQueue: service.taskQueue,
        args: [{ deliveryId: newDelivery.id, retryScheduleMs: SCHEDULE_MS, newDelivery }],
      });
      const [request] = await receiver.waitForRequests(1);
      expect(request!.body).toBe(newDelivery.envelopeBody);
      const delivery = await waitForDelivery(service, tenant.key, newDelivery.id, isFinished);
      expect(delivery).toMatchObject({ status: 'succeeded', created_at: newDelivery.createdAt });
    } finally {
      await receiver.close();
    }
  });
});

describe('the worker restarting', () => {
  it('stopped mid-backoff and replaced: every delivery still completes, none lost', async () => {
    const restartable = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '1500ms' });
    const seen = new Set<string>();
    // Each delivery's first attempt fails; its retry succeeds.
    const receiver = await startReceiver((request) => {
      const id = String(request.headers['x-service-delivery-id']);
      if (seen.has(id)) return { status: 200 };
      seen.add(id);
      return { status: 503 };
    });
    try {
      const tenant = await tenantReceivingAt(restartable, receiver.url);
      const accepted = await Promise.all(Array.from({ length: 5 }, () => trigger(restartable, tenant.key)));
      for (const { id } of accepted) await waitForDelivery(restartable, tenant.key, id, (d) => d.status === 'retrying');

      await restartable.stopWorker();
      const backoffs = await Promise.all(accepted.map(({ id }) => restartable.call(`/v1/webhooks/deliveries/${id}`, { key: tenant.key })));
      const latestRetry = Math.max(...backoffs.map((response) => Date.parse(response.body.next_attempt_at)));
      // Let every retry come due while no worker runs, then bring one back.
      await waitUntil(() => (Date.now() > latestRetry + 500 ? true : undefined), { what: 'every retry coming due' });
      expect(receiver.requests).toHaveLength(5);
      await restartable.startWorker();

      for (const { id } of accepted) {
        const delivery = await waitForDelivery(restartable, tenant.key, id, isFinished);
        expect(delivery.status).toBe('succeeded');
        expect(delivery.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['failed', 'succeeded']);
      }
      expect(receiver.requests).toHaveLength(10);
    } finally {
      await receiver.close();
      await restartable.stop();
    }
  });
});
