import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FS, frame, VT } from '../../hl7/mllp';
import { parseHl7 } from '../../hl7/parse';
import { renderTemplate } from '../../hl7/templates';
import type { RunningMllpListener } from '../../runtime/mllp';
import { tenantReceivingAt } from '../support/deliveries';
import { startTestMllpListener } from '../support/mllp-listener';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * Fair sharing of HL7 v2 (issue 23): each organization has its own budget of messages a minute, over
 * the HTTP inject and over MLLP, so one feed cannot take the listener from the others. A budget of 3
 * here; every message is a synthetic template.
 */

let service: TestService;
let receiver: TestReceiver;
let listener: RunningMllpListener;
beforeAll(async () => {
  service = await startTestService({ HL7_RATE_LIMIT_PER_MINUTE: '3' });
  receiver = await startReceiver();
  listener = await startTestMllpListener(service);
});
afterAll(async () => {
  await listener?.close();
  await receiver?.close();
  await service?.stop();
});

const adt = () => renderTemplate('adt-a01')!.er7;

/** One framed message over MLLP, its one answer back. */
async function sendOverMllp(text: string): Promise<string> {
  const socket = connect(listener.port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString('utf8');
  });
  socket.on('error', () => {});
  try {
    socket.write(frame(text));
    const end = String.fromCharCode(FS, 0x0d);
    return await waitUntil(
      () => (received.includes(end) ? received.slice(received.indexOf(String.fromCharCode(VT)) + 1, received.indexOf(end)) : undefined),
      {
        what: 'the answer',
        lastSeen: () => received,
      },
    );
  } finally {
    socket.destroy();
  }
}

/** A tenant's connection with an HL7 identity, and a message addressed to it with its MLLP token in MSH-8. */
async function mllpSender() {
  const { key } = await tenantReceivingAt(service, receiver.url);
  const connection = await service.call('/v1/connections', { key, method: 'POST', body: { name: 'MLLP feed (synthetic)' } });
  const application = `EHR-${connection.body.id.slice(-8)}`;
  const identity = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, {
    key,
    method: 'PUT',
    body: { receiving_application: application, receiving_facility: 'MLLP' },
  });
  expect(identity.status).toBe(200);
  const [header, ...rest] = adt().split('\r');
  const fields = header!.split('|');
  fields[4] = application;
  fields[5] = 'MLLP';
  fields[7] = identity.body.mllp_token;
  return [fields.join('|'), ...rest].join('\r');
}

describe('HL7 budget per organization', () => {
  it('over the HTTP inject: past the budget 429 with Retry-After, and another organization is still served', async () => {
    const first = await tenantReceivingAt(service, receiver.url);
    const inject = (key: string) => service.call('/v1/sandbox/hl7/inject', { key, method: 'POST', body: { message: adt() } });
    for (let sent = 0; sent < 3; sent += 1) expect((await inject(first.key)).status).toBe(202);
    const refused = await inject(first.key);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited' });
    expect(refused.body.detail).toContain('HL7 budget');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const second = await tenantReceivingAt(service, receiver.url);
    expect((await inject(second.key)).status).toBe(202);
  });

  it('over MLLP: past the budget an AR saying when to send again, and another organization is still accepted', async () => {
    const first = await mllpSender();
    for (let sent = 0; sent < 3; sent += 1)
      expect(
        parseHl7(await sendOverMllp(first))
          .segment('MSA')!
          .get(1),
      ).toBe('AA');
    const refused = parseHl7(await sendOverMllp(first));
    expect(refused.segment('MSA')!.get(1)).toBe('AR');
    expect(refused.segment('ERR')!.get(8)).toMatch(/HL7 budget is spent for now; send the message again in \d+ s/);
    const second = await mllpSender();
    expect(
      parseHl7(await sendOverMllp(second))
        .segment('MSA')!
        .get(1),
    ).toBe('AA');
  });
});
