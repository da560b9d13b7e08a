import type { Bundle } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTemplate } from '../../hl7/templates';
import { tenantReceivingAt } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/** Batches and streams over HTTP: POST /v1/sandbox/hl7/inject with several (synthetic) messages in one body. */

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

/** The ADT^A01 template with its control id and acknowledgement fields (MSH-15/MSH-16) set. */
function adt(controlId: string, mode: { accept?: string; application?: string } = {}): string {
  const [header, ...rest] = renderTemplate('adt-a01')!.er7.split('\r');
  const fields = header!.split('|');
  Object.assign(fields, { 9: controlId, 14: mode.accept ?? '', 15: mode.application ?? '' });
  return [fields.join('|'), ...rest].join('\r');
}

const post = (body: string, contentType = ER7, accept?: string) =>
  service.call('/v1/sandbox/hl7/inject', {
    key: tenant.key,
    method: 'POST',
    body,
    headers: { 'content-type': contentType, ...(accept ? { accept } : {}) },
  });

const segmentNames = (text: string) => text.split('\r').map((line) => line.slice(0, 3));
const msaOf = (text: string) =>
  text
    .split('\r')
    .filter((line) => line.startsWith('MSA'))
    .map((line) => line.split('|').slice(1, 3));

describe('batches and streams over HTTP', () => {
  it('answers an FHS/BHS batch with the batch acknowledgement in ER7, each message acknowledged and delivered on its own', async () => {
    const batch = [
      'FHS|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000||||FILE-H1',
      'BHS|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000||||BATCH-H1',
      adt('HTTP-B1'),
      // A patient message without its PID stops processing: AE however leniently it is read.
      adt('HTTP-B2')
        .split('\r')
        .filter((line) => !line.startsWith('PID|'))
        .join('\r'),
      adt('HTTP-B3'),
      'BTS|3',
      'FTS|1',
    ].join('\n');
    const before = receiver.requests.length;
    const response = await post(batch);
    expect(response.status).toBe(202);
    expect(response.headers.get('content-type')).toContain(ER7);
    const answer = String(response.body);
    expect(segmentNames(answer)).toEqual(['FHS', 'BHS', 'MSH', 'MSA', 'MSH', 'MSA', 'ERR', 'MSH', 'MSA', 'BTS', 'FTS']);
    expect(answer.split('\r')[1]!.split('|')[11]).toBe('BATCH-H1');
    expect(msaOf(answer)).toEqual([
      ['AA', 'HTTP-B1'],
      ['AE', 'HTTP-B2'],
      ['AA', 'HTTP-B3'],
    ]);
    const requests = (await receiver.waitForRequests(before + 2)).slice(before);
    expect(requests.map((request) => (JSON.parse(request.body).resource as Bundle).identifier!.value).sort()).toEqual(['HTTP-B1', 'HTTP-B3']);
  });

  it('answers several messages in one JSON body with each message’s acknowledgements, as its MSH-15/MSH-16 ask, and its delivery', async () => {
    const stream = [adt('HTTP-S1'), adt('HTTP-S2', { accept: 'AL', application: 'AL' }), adt('HTTP-S3', { accept: 'AL', application: 'NE' })].join(
      '\r',
    );
    const response = await post(JSON.stringify({ message: stream }), 'application/json');
    expect(response.status).toBe(202);
    expect(segmentNames(response.body.batch_ack)).toEqual(['BHS', 'MSH', 'MSA', 'MSH', 'MSA', 'MSH', 'MSA', 'MSH', 'MSA', 'BTS']);
    expect(msaOf(response.body.batch_ack)).toEqual([
      ['AA', 'HTTP-S1'],
      ['CA', 'HTTP-S2'],
      ['AA', 'HTTP-S2'],
      ['CA', 'HTTP-S3'],
    ]);
    expect(
      response.body.messages.map((message: { message_control_id: string; code: string; acks: string[] }) => [
        message.message_control_id,
        message.code,
        message.acks.length,
      ]),
    ).toEqual([
      ['HTTP-S1', 'AA', 1],
      ['HTTP-S2', 'AA', 2],
      ['HTTP-S3', 'AA', 1],
    ]);
    for (const message of response.body.messages) {
      const delivery = await service.call(`/v1/webhooks/deliveries/${message.delivery_id}`, { key: tenant.key });
      expect(delivery.body.hl7_control_id).toBe(message.message_control_id);
    }
  });

  it('answers 422 with the batch acknowledgement when no message of it is accepted, and refuses a batch over 100 messages', async () => {
    const refused = await post(`BHS|^~\\&|LAB|HOSP\r${adt('HTTP-R1').replace('|2.5.1|', '|9.9|')}\rBTS|1`);
    expect(refused.status).toBe(422);
    expect(msaOf(String(refused.body))).toEqual([['AR', 'HTTP-R1']]);
    const many = Array.from({ length: 101 }, (_, index) => adt(`HTTP-M${index}`)).join('\r');
    const tooMany = await post(JSON.stringify({ message: many }), 'application/json');
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toMatchObject({ code: 'hl7_batch_too_large' });
    expect(tooMany.body.detail).toContain('holds 101');
  });
});
