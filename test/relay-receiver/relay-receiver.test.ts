import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger';
import { createRelayReceiver } from '../../relay-receiver/app';
import { type ListeningServer, listen } from '../../runtime/services';
import { signEnvelope } from '../../webhooks/signing';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { call, startTestService, type TestService } from '../support/service';

let service: TestService;
let developerApp: TestReceiver;
let relay: ListeningServer;
let relayUrl: string;
let tenant: Awaited<ReturnType<typeof tenantReceivingAt>>;

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '200ms,200ms' });
  developerApp = await startReceiver();
  // The relay learns the tenant's secret after the tenant exists: resolve it lazily.
  let secrets: string[] = [];
  relay = await listen(
    createRelayReceiver({ secrets: async () => secrets, forwardUrl: developerApp.url, logger: createLogger('silent', { pretty: false }) }),
    '127.0.0.1',
    0,
    1,
  );
  relayUrl = `http://127.0.0.1:${relay.port}`;
  tenant = await tenantReceivingAt(service, `${relayUrl}/webhooks`);
  secrets = [tenant.secret];
});
afterAll(() => Promise.all([service.stop(), developerApp.close(), relay.close()]));

describe('the demo relay receiver', () => {
  it('verifies a real delivery, forwards it with its signature headers, and lists it', async () => {
    const accepted = await trigger(service, tenant.key, { event: 'adt.patient.discharged' });
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    expect(delivery.status).toBe('succeeded');
    expect(delivery.attempts[0].response_body).toContain('"status":"received"');

    const forwarded = developerApp.requests.find((request) => request.headers['x-service-delivery-id'] === accepted.id)!;
    expect(forwarded.body).toBe(JSON.stringify(delivery.envelope));
    expect(forwarded.headers['x-service-signature']).toMatch(/^sha256=/);
    expect(forwarded.headers['webhook-signature']).toMatch(/^v1,/);

    const listed = (await call(relayUrl, '/deliveries')).body.data.find((record: { delivery_id: string }) => record.delivery_id === accepted.id);
    expect(listed).toMatchObject({ event: 'adt.patient.discharged', verified: true, duplicate: false, answered: 200, forwarded: { status: 200 } });
  });

  it('refuses a tampered body or a wrong secret with 401', async () => {
    const body = JSON.stringify({ id: 'evt_x', event: 'adt.patient.admitted', resource: { resourceType: 'Encounter' } });
    const signed = signEnvelope({ deliveryId: 'dlv_forged', body, secret: tenant.secret, timestampSeconds: Math.floor(Date.now() / 1000) });
    const tampered = await call(relayUrl, '/webhooks', { method: 'POST', headers: signed, body: body.replace('admitted', 'discharged') });
    expect(tampered.status).toBe(401);
    expect(tampered.body.error).toContain('X-Service-Signature');

    const wrongSecret = signEnvelope({
      deliveryId: 'dlv_forged',
      body,
      secret: 'sbx_whsec_not-the-secret',
      timestampSeconds: Math.floor(Date.now() / 1000),
    });
    expect((await call(relayUrl, '/webhooks', { method: 'POST', headers: wrongSecret, body })).status).toBe(401);

    const stale = signEnvelope({ deliveryId: 'dlv_forged', body, secret: tenant.secret, timestampSeconds: Math.floor(Date.now() / 1000) - 3600 });
    const replayedLater = await call(relayUrl, '/webhooks', { method: 'POST', headers: stale, body });
    expect(replayedLater.status).toBe(401);
    expect(replayedLater.body.error).toContain('webhook-timestamp');
    expect(developerApp.requests.some((request) => request.headers['x-service-delivery-id'] === 'dlv_forged')).toBe(false);
  });

  it('deduplicates on X-Service-Delivery-Id: a replay is acknowledged, not forwarded twice', async () => {
    const accepted = await trigger(service, tenant.key);
    await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    await service.call(`/v1/webhooks/deliveries/${accepted.id}/replay`, { key: tenant.key, method: 'POST' });
    const replayed = await waitForDelivery(service, tenant.key, accepted.id, (d) => d.attempts.length === 2 && isFinished(d));
    expect(replayed.attempts[1].response_body).toContain('"status":"duplicate"');
    expect(developerApp.requests.filter((request) => request.headers['x-service-delivery-id'] === accepted.id)).toHaveLength(1);
  });

  it("passes the developer app's failure back, so the delivery retries until the app takes it", async () => {
    let failuresLeft = 1;
    developerApp.answerWith(() => (failuresLeft-- > 0 ? { status: 500 } : { status: 200 }));
    try {
      const accepted = await trigger(service, tenant.key);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([500, 200]);
      expect(developerApp.requests.filter((request) => request.headers['x-service-delivery-id'] === accepted.id)).toHaveLength(2);
    } finally {
      developerApp.answerWith(() => ({ status: 200 }));
    }
  });

  it('shows deliveries on a page that updates live over server-sent events', async () => {
    const page = await call(relayUrl, '/');
    expect(page.status).toBe(200);
    expect(page.body).toContain('<h1>Relay receiver</h1>');
    expect(page.body).toContain("new EventSource('deliveries/stream')");

    const controller = new AbortController();
    const stream = await fetch(`${relayUrl}/deliveries/stream`, { signal: controller.signal });
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    const reader = stream.body!.getReader();
    const accepted = await trigger(service, tenant.key, { event: 'results.observation.final' });
    let text = '';
    while (!text.includes(accepted.id)) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const record = JSON.parse(
      text
        .split('\n')
        .find((line) => line.includes(accepted.id))!
        .slice('data: '.length),
    );
    expect(record).toMatchObject({ delivery_id: accepted.id, event: 'results.observation.final', verified: true });
  });
});
