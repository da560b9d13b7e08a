import { Hl7Message } from '@medplum/core';
import { Hl7Client } from '@medplum/hl7';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTemplate } from '../../hl7/templates';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/**
 * Partners' published clients, unchanged, on the HL7 v2 and webhook sides: `@medplum/hl7`'s MLLP
 * client sends a run of messages with the connection's token, and the `standardwebhooks` library
 * (Standard Webhooks' reference implementation) verifies every kind of delivery the receiver gets:
 * triggered webhooks, HL7-derived ones and webhook.delivery.exhausted reports.
 */
let service: TestService;
let receiver: TestReceiver;
beforeAll(async () => {
  // A short retry schedule, so a delivery that fails for good is reported within the test (as test/webhooks/exhausted.test.ts does).
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '100ms,200ms' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await service.stop();
});

/** Verifies a request as a partner's receiver does with the standardwebhooks library, with the first of its secrets that signed it; answers its payload. */
function verified(secrets: string[], request: ReceivedRequest): { event: string } {
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  };
  const failures: string[] = [];
  for (const secret of secrets) {
    try {
      return new Webhook(secret, { format: 'raw' }).verify(request.body, headers) as { event: string };
    } catch (error) {
      failures.push((error as Error).message);
    }
  }
  throw new Error(`standardwebhooks did not verify the request: ${failures.join('; ')}`);
}

describe('@medplum/hl7 Hl7Client, unchanged, over MLLP', () => {
  it('sends a run of messages on one connection with the connection’s token in MSH-8: each answered AA and delivered, each delivery verified by standardwebhooks', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'MLLP feed (synthetic)' } });
    const application = `MEDPLUM${connection.body.id.slice(-6).toUpperCase()}`;
    const identity = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, {
      key: tenant.key,
      method: 'PUT',
      body: { receiving_application: application, receiving_facility: 'MLLP' },
    });
    expect(identity.status).toBe(200);
    const client = new Hl7Client({ host: '127.0.0.1', port: service.mllpPort! });
    const controlIds = ['MEDPLUM1', 'MEDPLUM2', 'MEDPLUM3'];
    try {
      for (const controlId of controlIds) {
        const message = Hl7Message.parse(renderTemplate('adt-a01')!.er7);
        message.getSegment('MSH')!.setField(5, application);
        message.getSegment('MSH')!.setField(6, 'MLLP');
        message.getSegment('MSH')!.setField(8, identity.body.mllp_token);
        message.getSegment('MSH')!.setField(10, controlId);
        const ack = await client.sendAndWait(message);
        expect(ack.getSegment('MSA')?.getField(1)?.toString()).toBe('AA');
        expect(ack.getSegment('MSA')?.getField(2)?.toString()).toBe(controlId);
      }
    } finally {
      await client.close();
    }
    const arrived = await receiver.waitForRequests(controlIds.length);
    const mine = arrived.filter((request) => request.body.includes(application));
    expect(mine).toHaveLength(controlIds.length);
    for (const request of mine) expect(verified([tenant.secret, connection.body.webhook_secret], request).event).toEqual(expect.any(String));
  });
});

describe('standardwebhooks verifies every kind of delivery', () => {
  it('a triggered webhook, and the webhook.delivery.exhausted report of one that failed for good', async () => {
    const failing = await startReceiver(() => ({ status: 503, body: 'down' }));
    const organization = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, organization.url);
      const sent = await trigger(service, tenant.key);
      const [webhook] = await organization.waitForRequests(1);
      expect(verified([tenant.secret], webhook!)).toEqual(JSON.parse(JSON.stringify(sent.envelope)));
      const connection = await service.call('/v1/connections', {
        key: tenant.key,
        method: 'POST',
        body: { name: 'Failing receiver', webhook_url: failing.url },
      });
      const failed = await trigger(service, tenant.key, { connection_id: connection.body.id });
      expect(await waitForDelivery(service, tenant.key, failed.id, isFinished)).toMatchObject({ status: 'failed' });
      const [, report] = await organization.waitForRequests(2);
      expect(verified([tenant.secret], report!)).toMatchObject({ event: 'webhook.delivery.exhausted' });
    } finally {
      await Promise.all([failing.close(), organization.close()]);
    }
  });
});
