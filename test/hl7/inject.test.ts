import { createHmac } from 'node:crypto';
import type { Bundle } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { SYNTHETIC_TAG } from '../../fixtures/synthetic';
import { parseHl7 } from '../../hl7/parse';
import { listTemplates, renderTemplate } from '../../hl7/templates';
import { mapToFhir } from '../../hl7/to-fhir';
import { validateHl7 } from '../../hl7/validate';
import { tenantReceivingAt } from '../support/deliveries';
import { fhirErrors } from '../support/fhir-validator';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

const ER7 = 'x-application/hl7-v2+er7';

let service: TestService;
let receiver: TestReceiver;
let tenant: Awaited<ReturnType<typeof tenantReceivingAt>>;
beforeAll(async () => {
  service = await startTestService();
  receiver = await startReceiver();
  tenant = await tenantReceivingAt(service, receiver.url);
});
afterAll(async () => {
  await receiver.close();
  await service.stop();
});

const inject = (body: unknown, headers: Record<string, string> = {}, key = tenant.key) =>
  service.call('/v1/sandbox/hl7/inject', { key, method: 'POST', body, headers });
const controlIdOf = (text: string) => parseHl7(text).header.get(10);
const msaOf = (ack: string) => parseHl7(ack).segment('MSA')!;
const resourceTypes = (bundle: Bundle) => bundle.entry!.map((entry) => entry.resource!.resourceType);

describe('POST /v1/sandbox/hl7/inject', () => {
  it('takes every template with AA, and delivers its FHIR R4 Bundle signed to the receiver, under its catalog event', async () => {
    const templates = listTemplates();
    const accepted = [];
    for (const template of templates) {
      const response = await inject({ message: template.er7 });
      expect(response.status, `${template.id}: ${JSON.stringify(response.body)}`).toBe(202);
      expect(response.body.ack).toMatchObject({ code: 'AA', message_control_id: controlIdOf(template.er7) });
      expect(response.body.errors).toEqual([]);
      expect(response.body.warnings).toEqual([]);
      expect(response.body.acknowledgements).toEqual({ mode: 'original', accept_ack: null, application_ack_due: true });
      expect(response.body.delivery).toMatchObject({ event: template.event, hl7_control_id: controlIdOf(template.er7), status: 'pending' });
      expect(response.headers.get('location')).toBe(`/v1/webhooks/deliveries/${response.body.delivery.id}`);
      accepted.push({ template, deliveryId: response.body.delivery.id as string });
    }
    const requests = await receiver.waitForRequests(templates.length, 60_000);
    for (const { template, deliveryId } of accepted) {
      const request = requests.find((candidate) => candidate.headers['x-service-delivery-id'] === deliveryId);
      expect(request, template.id).toBeDefined();
      const signature = createHmac('sha256', Buffer.from(tenant.secret, 'utf8')).update(request!.body).digest('hex');
      expect(request!.headers['x-service-signature']).toBe(`sha256=${signature}`);
      const envelope = JSON.parse(request!.body);
      expect(envelope).toMatchObject({ event: template.event, connection_id: null, environment: 'sandbox' });
      const bundle = envelope.resource as Bundle;
      expect(fhirErrors(bundle), template.id).toEqual([]);
      for (const entry of bundle.entry!) {
        expect(fhirErrors(entry.resource!), `${template.id} ${entry.resource!.resourceType}`).toEqual([]);
        expect(entry.resource!.meta?.tag).toContainEqual(SYNTHETIC_TAG);
      }
      // The resources the segment maps produce for this message, no more, no fewer.
      const message = parseHl7(template.er7);
      expect(resourceTypes(bundle)).toEqual(resourceTypes(mapToFhir(message, validateHl7(message).type!).bundle));
      expect(bundle.identifier!.value).toBe(controlIdOf(template.er7));
    }
    // Every delivery records its success; an idle keep-alive socket the server has just closed may reset one poll, which is retried.
    const ids = new Set(accepted.map(({ deliveryId }) => deliveryId));
    await waitUntil(
      async () => {
        const page = await service.call('/v1/webhooks/deliveries?limit=200&status=succeeded', { key: tenant.key }).catch(() => undefined);
        const succeeded = (page?.body.data ?? []).filter((delivery: { id: string }) => ids.has(delivery.id));
        return succeeded.length === ids.size ? true : undefined;
      },
      { what: 'every template delivery succeeded', timeoutMs: 60_000 },
    );
  }, 150_000);

  it('answers raw ER7 with an ER7 ACK, and JSON when Accept asks for it', async () => {
    const text = renderTemplate('adt-a04')!.er7.replaceAll('\r', '\r\n');
    const raw = await inject(text, { 'content-type': ER7 });
    expect(raw.status).toBe(202);
    expect(raw.headers.get('content-type')).toMatch(/^x-application\/hl7-v2\+er7/);
    expect(msaOf(raw.body).get(1)).toBe('AA');
    expect(msaOf(raw.body).get(2)).toBe(controlIdOf(text));
    const deliveryId = raw.headers.get('location')!.split('/').at(-1)!;
    expect((await service.call(`/v1/webhooks/deliveries/${deliveryId}`, { key: tenant.key })).body.hl7_control_id).toBe(controlIdOf(text));

    const asJson = await inject(text, { 'content-type': 'text/plain', accept: 'application/json' });
    expect(asJson.status).toBe(202);
    expect(asJson.body.ack.code).toBe('AA');
  });

  it('accepts a message with malformed fields with AA and one warning each, the fields left out of the Bundle', async () => {
    const text = renderTemplate('adt-a01')!.er7.replace('|19581212|F|', '|19581340|Q|');
    const json = await inject({ message: text });
    expect(json.status).toBe(202);
    expect(json.body.ack.code).toBe('AA');
    expect(json.body.errors).toEqual([]);
    expect(json.body.warnings).toEqual([
      expect.objectContaining({
        path: 'PID^1^7^1^1',
        segment: 'PID',
        field: 7,
        code: 102,
        severity: 'W',
        message: expect.stringContaining('19581340'),
      }),
      expect.objectContaining({ path: 'PID^1^8^1^1', segment: 'PID', field: 8, code: 103, severity: 'W' }),
    ]);
    const er7 = await inject(text, { 'content-type': ER7 });
    expect(er7.status).toBe(202);
    expect(
      parseHl7(er7.body)
        .all('ERR')
        .map((err) => [err.field(2).raw, err.get(3), err.get(4)]),
    ).toEqual([
      ['PID^1^7^1^1', '102', 'W'],
      ['PID^1^8^1^1', '103', 'W'],
    ]);
  });

  it('accepts any trigger: one without a template goes out as hl7.message.received', async () => {
    const text = renderTemplate('adt-a01')!.er7.replace('ADT^A01^ADT_A01', 'ADT^A05^ADT_A05');
    const json = await inject({ message: text });
    expect(json.status).toBe(202);
    expect(json.body.delivery.event).toBe('hl7.message.received');
    expect(findEvent('hl7.message.received')).toBeDefined();
  });

  it('answers the accept ACK over HTTP when MSH-15/MSH-16 ask for enhanced mode without an application ACK', async () => {
    const lines = renderTemplate('adt-a01')!.er7.split('\r');
    lines[0] = `${lines[0]!.split('|').slice(0, 12).join('|')}|||AL|NE`;
    const text = lines.join('\r');
    const er7 = await inject(text, { 'content-type': ER7 });
    expect(er7.status).toBe(202);
    expect(msaOf(er7.body).get(1)).toBe('CA');
    expect(msaOf(er7.body).get(2)).toBe(controlIdOf(text));
    const json = await inject({ message: text });
    expect(json.body.ack.code).toBe('AA');
    expect(json.body.acknowledgements).toMatchObject({ mode: 'enhanced', accept_ack: { code: 'CA' }, application_ack_due: false });
  });

  it('answers AE with each problem located in strict mode, as a 422 problem with the ACK inside, or as ER7', async () => {
    const text = renderTemplate('adt-a01')!.er7.replace('|19581212|F|', '|19581340|Q|');
    const json = await service.call('/v1/sandbox/hl7/inject?conformance=strict', { key: tenant.key, method: 'POST', body: { message: text } });
    expect(json.status).toBe(422);
    expect(json.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(json.body).toMatchObject({ status: 422, code: 'hl7_invalid', ack: { code: 'AE', message_control_id: controlIdOf(text) } });
    expect(json.body.errors).toEqual([
      expect.objectContaining({ path: 'PID^1^7^1^1', segment: 'PID', field: 7, code: 102, message: expect.stringContaining('19581340') }),
      expect.objectContaining({ path: 'PID^1^8^1^1', segment: 'PID', field: 8, code: 103 }),
    ]);
    expect(msaOf(json.body.ack.er7).get(1)).toBe('AE');

    const er7 = await service.call('/v1/sandbox/hl7/inject?conformance=strict', {
      key: tenant.key,
      method: 'POST',
      body: text,
      headers: { 'content-type': ER7 },
    });
    expect(er7.status).toBe(422);
    const ack = parseHl7(er7.body);
    expect(ack.segment('MSA')!.get(1)).toBe('AE');
    expect(ack.all('ERR').map((err) => [err.field(2).raw, err.get(3)])).toEqual([
      ['PID^1^7^1^1', '102'],
      ['PID^1^8^1^1', '103'],
    ]);
  });

  it('answers AR with ERR 200 for a message type that is not one', async () => {
    const text = renderTemplate('adt-a01')!.er7.replace('ADT^A01^ADT_A01', 'Q1^Q01^QRY_Q01');
    const json = await inject({ message: text });
    expect(json.status).toBe(422);
    expect(json.body).toMatchObject({ code: 'hl7_rejected', ack: { code: 'AR' } });
    expect(json.body.errors[0]).toMatchObject({ path: 'MSH^1^9^1^1', code: 200 });
    const er7 = await inject(text, { 'content-type': ER7 });
    expect(msaOf(er7.body).get(1)).toBe('AR');
    expect(parseHl7(er7.body).segment('ERR')!.get(3)).toBe('200');
  });

  it('answers 400 to what is not HL7 at all, 413 over 256 KiB, and never 5xx', async () => {
    const notHl7 = await inject({ message: 'Hello, this is a letter, not a message.' });
    expect(notHl7.status).toBe(400);
    expect(notHl7.body).toMatchObject({ code: 'not_hl7', ack: { code: 'AR' } });
    expect(notHl7.body.errors).toEqual([
      expect.objectContaining({ path: 'MSH^1', code: 100, message: expect.stringContaining('not an HL7 v2 message') }),
    ]);
    expect((await inject('{"resourceType":"Patient"}', { 'content-type': 'text/plain' })).status).toBe(400);
    const big = `${renderTemplate('oru-r01')!.er7}\rNTE|1||${'x'.repeat(256 * 1024)}`;
    const tooLarge = await inject(big, { 'content-type': ER7 });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toMatchObject({ code: 'hl7_message_too_large', ack: { code: 'AR', message_control_id: controlIdOf(big) } });
    expect((await inject({ message: big })).status).toBe(413);
    for (const garbage of [
      'MSH',
      'MSH|',
      'MSH|^~\\&',
      `MSH|^~\\&|${'|'.repeat(5000)}`,
      'MSH|^~\\&|A|B|C|D|X||ADT^A01|1|P|2.5\rPID|||||||||||||||||||||||||||||||||',
    ]) {
      const response = await inject(garbage, { 'content-type': ER7 });
      expect(response.status, garbage.slice(0, 40)).toBeLessThan(500);
    }
  });

  it('honours Idempotency-Key: the same message again answers the first response and delivers once', async () => {
    const text = renderTemplate('adt-a08')!.er7;
    const headers = { 'content-type': ER7, 'idempotency-key': `hl7-${Date.now()}` };
    const first = await inject(text, headers);
    const again = await inject(text, headers);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toBe(first.body);
    expect((await inject(`${text}\rZPI|1`, headers)).status).toBe(422);
  });

  it('delivers for the connection named in the body, or the one whose HL7 identity MSH-5/MSH-6 name', async () => {
    const own = await startReceiver();
    try {
      const created = await service.call('/v1/connections', {
        key: tenant.key,
        method: 'POST',
        body: { name: 'Lab interface (synthetic)', webhook_url: own.url },
      });
      const connectionId = created.body.id as string;
      const text = renderTemplate('oru-r01')!.er7;
      const named = await inject({ message: text, connection_id: connectionId });
      expect(named.body.delivery.connection_id).toBe(connectionId);
      const identity = await service.call(`/v1/sandbox/hl7/identities/${connectionId}`, {
        key: tenant.key,
        method: 'PUT',
        body: { receiving_application: `LAB-${connectionId.slice(-6)}`, receiving_facility: 'NORTH' },
      });
      expect(identity.status).toBe(200);
      const addressed = await inject(text.replace('|SANDBOX|SYNTHETIC|', `|LAB-${connectionId.slice(-6)}|NORTH|`), { 'content-type': ER7 });
      const deliveryId = addressed.headers.get('location')!.split('/').at(-1)!;
      expect((await service.call(`/v1/webhooks/deliveries/${deliveryId}`, { key: tenant.key })).body.connection_id).toBe(connectionId);
      await own.waitForRequests(2);
      expect((await inject({ message: text, connection_id: 'conn_nope' })).status).toBe(404);
    } finally {
      await own.close();
    }
  });
});

describe('GET /v1/sandbox/hl7/templates', () => {
  it('pages through the templates, and reads one filled for another patient, in JSON or ER7', async () => {
    const first = await service.call('/v1/sandbox/hl7/templates?limit=5', { key: tenant.key });
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(5);
    const rest = await service.call(`/v1/sandbox/hl7/templates?limit=200&cursor=${first.body.next_cursor}`, { key: tenant.key });
    const all = [...first.body.data, ...rest.body.data];
    expect(all.map((template: { id: string }) => template.id)).toEqual(
      listTemplates()
        .map((template) => template.id)
        .sort(),
    );
    expect(all.find((template: { id: string }) => template.id === 'adt-a01')).toMatchObject({
      message_type: 'ADT^A01^ADT_A01',
      event: 'hl7.adt_a01.received',
      version: '2.5.1',
    });

    const other = service.fhirStore.patients()[3]!;
    const one = await service.call(`/v1/sandbox/hl7/templates/vxu-v04?patient=${other.id}`, { key: tenant.key });
    expect(one.body.patient_id).toBe(other.id);
    expect(parseHl7(one.body.er7).segment('PID')!.get(5, 1)).toBe(other.name![0]!.family);
    const er7 = await service.call('/v1/sandbox/hl7/templates/vxu-v04', { key: tenant.key, headers: { accept: ER7 } });
    expect(er7.body).toBe(renderTemplate('vxu-v04')!.er7);
    expect((await service.call('/v1/sandbox/hl7/templates/nope', { key: tenant.key })).status).toBe(404);
    expect((await service.call('/v1/sandbox/hl7/templates/adt-a01?patient=syn-pat-9999', { key: tenant.key })).status).toBe(404);
    expect((await service.call('/v1/sandbox/hl7/templates')).status).toBe(401);
  });

  it('documents the HL7 routes in /openapi.json, with the ER7 body of the inject', async () => {
    const document = (await service.call('/openapi.json')).body;
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sandbox/hl7/templates',
        '/v1/sandbox/hl7/templates/{template_id}',
        '/v1/sandbox/hl7/inject',
        '/v1/sandbox/hl7/identities/{connection_id}',
      ]),
    );
    expect(Object.keys(document.paths['/v1/sandbox/hl7/inject'].post.requestBody.content)).toEqual([
      'application/json',
      ER7,
      'application/hl7-v2',
      'text/plain',
    ]);
  });
});
