import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalog } from '../../catalog/events';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

let service: TestService;
let receiver: TestReceiver;
beforeAll(async () => {
  [service, receiver] = await Promise.all([startTestService({ WEBHOOK_RETRY_SCHEDULE: '200ms' }), startReceiver()]);
});
afterAll(() => Promise.all([service.stop(), receiver.close()]));

describe('POST /v1/webhooks/trigger-mock-event', () => {
  it('answers 202 with the delivery, its URL and a Location header', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const response = await service.call('/v1/webhooks/trigger-mock-event', { key: tenant.key, method: 'POST' });
    expect(response.status).toBe(202);
    expect(response.headers.get('location')).toBe(`/v1/webhooks/deliveries/${response.body.id}`);
    expect(response.body).toMatchObject({
      event: 'adt.patient.admitted',
      status: 'pending',
      connection_id: null,
      environment: 'sandbox',
      attempts: [],
    });
    expect(response.body.id).toMatch(/^dlv_/);
    expect(response.body.envelope.resource).toMatchObject({ resourceType: 'Encounter', status: 'in-progress' });
  });

  it('reads event, scenario_id and connection_id from the query string too, the body winning', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'Query' } });
    const fromQuery = await service.call(
      `/v1/webhooks/trigger-mock-event?event=results.observation.final&scenario_id=prior_auth_denied&connection_id=${connection.body.id}`,
      {
        key: tenant.key,
        method: 'POST',
      },
    );
    expect(fromQuery.status).toBe(202);
    expect(fromQuery.body).toMatchObject({ event: 'results.observation.final', scenario_id: 'prior_auth_denied', connection_id: connection.body.id });
    const bodyWins = await service.call('/v1/webhooks/trigger-mock-event?event=results.observation.final', {
      key: tenant.key,
      method: 'POST',
      body: { event: 'claims.claim.adjudicated' },
    });
    expect(bodyWins.body.event).toBe('claims.claim.adjudicated');
  });

  it('sends every catalog event with a FHIR resource in its envelope', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    for (const name of eventCatalog.keys()) {
      const accepted = await trigger(service, tenant.key, { event: name });
      expect((accepted.envelope as { event: string }).event).toBe(name);
      expect((accepted.envelope as { resource: { resourceType: string } }).resource.resourceType).toMatch(/^[A-Z][A-Za-z]+$/);
    }
  });

  it('refuses an unknown event with 422 saying where the valid ones are', async () => {
    const tenant = await service.newTenant();
    const response = await service.call('/v1/webhooks/trigger-mock-event', {
      key: tenant.key,
      method: 'POST',
      body: { event: 'adt.patient.teleported' },
    });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('unknown_event');
    expect(response.body.errors).toEqual([{ path: 'body.event', message: expect.stringContaining('GET /v1/sandbox/catalog') }]);
    expect((await service.call('/v1/webhooks/deliveries', { key: tenant.key })).body.data).toEqual([]);
  });

  it('answers 404 for an unknown connection or scenario and 422 for bad fields', async () => {
    const tenant = await service.newTenant();
    const unknown = await service.call('/v1/webhooks/trigger-mock-event', { key: tenant.key, method: 'POST', body: { connection_id: 'conn_nope' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toContain('conn_nope');
    const noScenario = await service.call('/v1/webhooks/trigger-mock-event', {
      key: tenant.key,
      method: 'POST',
      body: { scenario_id: 'teleportation_consult' },
    });
    expect(noScenario.status).toBe(404);
    expect(noScenario.body.detail).toContain('GET /v1/sandbox/catalog');
    const bad = await service.call('/v1/webhooks/trigger-mock-event', {
      key: tenant.key,
      method: 'POST',
      body: { scenario_id: 'Not A Scenario!', colour: 1 },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['body.colour', 'body.scenario_id']);
  });

  it('honours Idempotency-Key: one delivery, one request to the receiver', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const headers = { 'idempotency-key': randomUUID() };
    const first = await service.call('/v1/webhooks/trigger-mock-event', {
      key: tenant.key,
      method: 'POST',
      body: { event: 'claims.claim.submitted' },
      headers,
    });
    const retry = await service.call('/v1/webhooks/trigger-mock-event', {
      key: tenant.key,
      method: 'POST',
      body: { event: 'claims.claim.submitted' },
      headers,
    });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.id).toBe(first.body.id);
    await waitForDelivery(service, tenant.key, first.body.id, isFinished);
    expect((await service.call('/v1/webhooks/deliveries', { key: tenant.key })).body.data).toHaveLength(1);
    expect(receiver.requests.filter((request) => request.headers['x-service-delivery-id'] === first.body.id)).toHaveLength(1);
  });
});

describe('GET /v1/webhooks/deliveries', () => {
  it('filters by status, event, connection and time, and pages with a cursor', async () => {
    const failing = await startReceiver(() => ({ status: 500 }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const connection = await service.call('/v1/connections', {
        key: tenant.key,
        method: 'POST',
        body: { name: 'Failing', webhook_url: failing.url },
      });
      const since = new Date().toISOString();
      const ok = [
        await trigger(service, tenant.key, { event: 'claims.claim.submitted' }),
        await trigger(service, tenant.key, { event: 'claims.claim.submitted' }),
      ];
      const bad = await trigger(service, tenant.key, { event: 'eligibility.check.completed', connection_id: connection.body.id });
      for (const { id } of [...ok, bad]) await waitForDelivery(service, tenant.key, id, isFinished);

      const list = (query: string) => service.call(`/v1/webhooks/deliveries?${query}`, { key: tenant.key }).then((response) => response.body);
      const ids = (page: { data: { id: string }[] }) => page.data.map((delivery) => delivery.id);
      // The failed one is reported by a webhook.delivery.exhausted delivery to the organization default.
      const report = await waitUntil(async () => (await list('event=webhook.delivery.exhausted')).data[0], { what: 'the exhausted report' });
      await waitForDelivery(service, tenant.key, report.id, isFinished);

      expect(ids(await list('status=failed'))).toEqual([bad.id]);
      expect(ids(await list('status=succeeded'))).toEqual([report.id, ok[1]!.id, ok[0]!.id]);
      expect(ids(await list('event=claims.claim.submitted'))).toEqual([ok[1]!.id, ok[0]!.id]);
      expect(ids(await list(`connection_id=${connection.body.id}`))).toEqual([bad.id]);
      expect(ids(await list(`created_after=${since}`))).toHaveLength(4);
      expect(ids(await list('created_before=2000-01-01T00:00:00Z'))).toEqual([]);

      const failedDelivery = (await list('status=failed')).data[0];
      expect(failedDelivery.attempts).toHaveLength(2);
      expect(failedDelivery.envelope.event).toBe('eligibility.check.completed');

      const firstPage = await list('limit=3');
      expect(ids(firstPage)).toEqual([report.id, bad.id, ok[1]!.id]);
      const secondPage = await list(`limit=3&cursor=${firstPage.next_cursor}`);
      expect(ids(secondPage)).toEqual([ok[0]!.id]);
      expect(secondPage.next_cursor).toBeNull();

      const invalid = await service.call('/v1/webhooks/deliveries?status=lost&created_after=yesterday', { key: tenant.key });
      expect(invalid.status).toBe(422);
      expect(invalid.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['query.created_after', 'query.status']);
    } finally {
      await failing.close();
    }
  });
});

describe('Temporal visibility', () => {
  it('finds each delivery run in the Web UI by OrgId, EventType and DeliveryStatus', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const accepted = await trigger(service, tenant.key, { event: 'remittance.payment.issued' });
    await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    const query = `OrgId = '${tenant.organizationId}' AND EventType = 'remittance.payment.issued' AND DeliveryStatus = 'succeeded'`;
    // Visibility is eventually consistent: wait for the run to be listed.
    const found = await waitUntil(
      async () => {
        const ids: string[] = [];
        for await (const run of service.temporal.workflow.list({ query })) ids.push(run.workflowId);
        return ids.length > 0 ? ids : undefined;
      },
      { what: 'the delivery run appearing in Temporal visibility', timeoutMs: 15_000, intervalMs: 200 },
    );
    expect(found).toEqual([deliveryWorkflowId(accepted.id)]);
  });
});
