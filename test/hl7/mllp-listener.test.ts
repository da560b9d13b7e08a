import { connect } from 'node:net';
import type { Bundle, Patient } from 'fhir/r4';
import { Client, type InboundResponse, Message } from 'node-hl7-client';
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

/** The MLLP listener against the real pipeline: Postgres, Temporal, a receiver. Every message is synthetic. */

let service: TestService;
let receiver: TestReceiver;
let listener: RunningMllpListener;
beforeAll(async () => {
  service = await startTestService();
  receiver = await startReceiver();
  listener = await startTestMllpListener(service);
});
afterAll(async () => {
  await listener.close();
  await receiver.close();
  await service.stop();
});

/** A message with MSH fields set (`{ 8: token }` is MSH-8); the rest of the text untouched. */
function withMsh(text: string, fields: Record<number, string | undefined>): string {
  const [header, ...rest] = text.split('\r');
  const values = header!.split('|');
  for (const [n, value] of Object.entries(fields)) if (value !== undefined) values[Number(n) - 1] = value;
  return [values.join('|'), ...rest].join('\r');
}

/** A connection of a new tenant receiving at `url`, with an HL7 identity and its MLLP token. */
async function mllpConnection(url: string, identity?: { application: string; facility: string }, tenantKey?: string) {
  const key = tenantKey ?? (await tenantReceivingAt(service, url)).key;
  const connection = await service.call('/v1/connections', { key, method: 'POST', body: { name: 'MLLP feed (synthetic)', webhook_url: url } });
  const application = identity?.application ?? `EHR-${connection.body.id.slice(-8)}`;
  const facility = identity?.facility ?? 'MLLP';
  const put = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, {
    key,
    method: 'PUT',
    body: { receiving_application: application, receiving_facility: facility },
  });
  expect(put.status).toBe(200);
  return { key, connectionId: connection.body.id as string, application, facility, token: put.body.mllp_token as string };
}

/** The ADT^A01 template addressed to a connection, with its token, in the mode MSH-15/MSH-16 say (original by default). */
function adtFor(
  target: { application: string; facility: string; token: string },
  mode: { accept?: string; application?: string } = {},
  controlId?: string,
) {
  return withMsh(renderTemplate('adt-a01')!.er7, {
    5: target.application,
    6: target.facility,
    8: target.token,
    15: mode.accept ?? '',
    16: mode.application ?? '',
    10: controlId,
  });
}

/** Sends frames on one connection and returns the first `count` answers (unframed, UTF-8). */
async function exchange(frames: (string | Buffer)[], count: number, port = listener.port): Promise<string[]> {
  const socket = connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
  });
  socket.on('error', () => {});
  const answers = () =>
    received
      .toString('utf8')
      .split(String.fromCharCode(FS, 0x0d))
      .filter(Boolean)
      .map((framed) => framed.replace(String.fromCharCode(VT), ''));
  try {
    for (const content of frames) socket.write(frame(content));
    return await waitUntil(() => (answers().length >= count ? answers().slice(0, count) : undefined), {
      what: `${count} answers`,
      lastSeen: answers,
      timeoutMs: 30_000,
    });
  } finally {
    socket.destroy();
  }
}

const msa = (answer: string) => parseHl7(answer).segment('MSA')!;
/** A message that stops processing even when read leniently: a patient message without its PID. */
const withoutPid = (text: string) =>
  text
    .split('\r')
    .filter((line) => !line.startsWith('PID|'))
    .join('\r');
const segmentNames = (text: string) => text.split('\r').map((line) => line.slice(0, 3));

describe('MLLP bound to a credential (MSH-8)', () => {
  it('delivers a message carrying its connection token to that connection, answered AA by a real MLLP client, and the token goes no further', async () => {
    const own = await startReceiver();
    try {
      const target = await mllpConnection(own.url);
      expect(target.token).toMatch(/^sbx_mllp_[A-Za-z0-9_-]{30}$/);
      const text = adtFor(target);
      const acks: Message[] = [];
      const client = new Client({ host: '127.0.0.1' });
      const connection = client.createConnection({ port: listener.port, maxAttempts: 1 }, async (response: InboundResponse) => {
        acks.push(response.getMessage());
      });
      try {
        await connection.sendMessage(new Message({ text }));
        const [ack] = await waitUntil(() => (acks.length ? acks : undefined), { what: 'the ACK over MLLP' });
        expect(ack!.get('MSA.1').toString()).toBe('AA');
        expect(ack!.get('MSA.2').toString()).toBe(parseHl7(text).header.get(10));
        const deliveryId = /dlv_\w+/.exec(ack!.get('MSA.3').toString())![0];
        const [request] = await own.waitForRequests(1);
        expect(request!.headers['x-service-delivery-id']).toBe(deliveryId);
        expect(JSON.parse(request!.body)).toMatchObject({
          event: 'hl7.adt_a01.received',
          connection_id: target.connectionId,
          resource: { resourceType: 'Bundle' },
        });
        expect(request!.body).not.toContain(target.token);
        const delivery = await service.call(`/v1/webhooks/deliveries/${deliveryId}`, { key: target.key });
        expect(JSON.stringify(delivery.body)).not.toContain(target.token);
      } finally {
        await connection.close();
      }
    } finally {
      await own.close();
    }
  });

  it('answers a message without a valid token AR, the same whatever identity it names, and delivers nothing', async () => {
    const own = await startReceiver();
    try {
      const target = await mllpConnection(own.url);
      const other = await mllpConnection(receiver.url);
      const attempts = [
        adtFor({ ...target, token: '' }, {}, 'NOTOKEN1'),
        adtFor({ ...target, token: 'sbx_mllp_guessedguessedguessedguessed12' }, {}, 'NOTOKEN2'),
        adtFor({ application: 'NOBODY', facility: 'NOWHERE', token: '' }, {}, 'NOTOKEN3'),
        adtFor({ ...target, token: `${target.token}x` }, {}, 'NOTOKEN4'),
      ];
      const answers = await exchange(attempts, attempts.length);
      for (const [index, answer] of answers.entries()) {
        expect(msa(answer).get(1)).toBe('AR');
        expect(msa(answer).get(2)).toBe(`NOTOKEN${index + 1}`);
      }
      // Nothing in the answer depends on whether the named identity exists.
      const errors = answers.map((answer) => parseHl7(answer).segment('ERR')!.field(8).raw);
      expect(new Set(errors).size).toBe(1);
      expect(errors[0]).toContain('MSH-8');
      expect(parseHl7(answers[0]!).segment('ERR')!.field(2).raw).toBe('MSH^1^8');
      // Another organization's token with this identity's MSH-5/MSH-6: refused for the mismatch, naming only the token's own identity.
      const [crossed] = await exchange([adtFor({ ...target, token: other.token }, {}, 'CROSSED1')], 1);
      expect(msa(crossed!).get(1)).toBe('AR');
      expect(crossed).toContain(other.application);
      const deliveries = await service.call('/v1/webhooks/deliveries', { key: target.key });
      expect(deliveries.body.data).toEqual([]);
      expect(own.requests).toEqual([]);
    } finally {
      await own.close();
    }
  });

  it('scopes identities to their organization: the same identity in two organizations, no 409 across them, each message to its token holder', async () => {
    const identity = { application: `SHARED-${Date.now()}`, facility: 'NORTH' };
    const first = await mllpConnection(receiver.url, identity);
    const second = await mllpConnection(receiver.url, identity);
    expect(first.token).not.toBe(second.token);
    // Within one organization an identity still belongs to one connection.
    const sibling = await service.call('/v1/connections', { key: first.key, method: 'POST', body: { name: 'Second feed (synthetic)' } });
    const taken = await service.call(`/v1/sandbox/hl7/identities/${sibling.body.id}`, {
      key: first.key,
      method: 'PUT',
      body: { receiving_application: identity.application, receiving_facility: identity.facility },
    });
    expect(taken.status).toBe(409);
    const [ack] = await exchange([adtFor(second)], 1);
    expect(msa(ack!).get(1)).toBe('AA');
    const deliveryId = /dlv_\w+/.exec(msa(ack!).get(3))![0];
    expect((await service.call(`/v1/webhooks/deliveries/${deliveryId}`, { key: second.key })).body.connection_id).toBe(second.connectionId);
    expect((await service.call(`/v1/webhooks/deliveries/${deliveryId}`, { key: first.key })).status).toBe(404);
  });

  it('shows the token once, masked afterwards; a rotation stops the old token at once', async () => {
    const target = await mllpConnection(receiver.url);
    const read = await service.call(`/v1/sandbox/hl7/identities/${target.connectionId}`, { key: target.key });
    expect(read.body.mllp_token).toBe(`sbx_mllp_…${target.token.slice(-4)}`);
    const again = await service.call(`/v1/sandbox/hl7/identities/${target.connectionId}`, {
      key: target.key,
      method: 'PUT',
      body: { receiving_application: target.application, receiving_facility: target.facility },
    });
    expect(again.body.mllp_token).toBe(`sbx_mllp_…${target.token.slice(-4)}`);
    const rotated = await service.call(`/v1/sandbox/hl7/identities/${target.connectionId}`, {
      key: target.key,
      method: 'PUT',
      body: { receiving_application: target.application, receiving_facility: target.facility, rotate_token: true },
    });
    expect(rotated.body.mllp_token).toMatch(/^sbx_mllp_/);
    expect(rotated.body.mllp_token).not.toBe(target.token);
    const [old, fresh] = await exchange([adtFor(target, {}, 'OLDTOKEN'), adtFor({ ...target, token: rotated.body.mllp_token }, {}, 'NEWTOKEN')], 2);
    expect([msa(old!).get(1), msa(fresh!).get(1)]).toEqual(['AR', 'AA']);
  });
});

describe('acknowledgement modes over MLLP (MSH-15/MSH-16)', () => {
  it('sends the accept and the application acknowledgements each as its field asks', async () => {
    const target = await mllpConnection(receiver.url);
    const bad = (mode: { accept?: string; application?: string }, id: string) => withoutPid(adtFor(target, mode, id));
    const frames = [
      adtFor(target, { accept: 'AL', application: 'AL' }, 'ENH1'), // CA, then AA
      adtFor(target, { accept: 'AL', application: 'NE' }, 'ENH2'), // CA only
      adtFor(target, { accept: 'NE', application: 'AL' }, 'ENH3'), // AA only
      adtFor(target, { accept: 'ER', application: 'ER' }, 'ENH4'), // nothing: no error
      adtFor(target, { accept: 'SU', application: 'ER' }, 'ENH5'), // CA only
      bad({ accept: 'ER', application: 'ER' }, 'ENH6'), // a content error is committed (no CA asked for), then AE
      adtFor({ ...target, token: '' }, { accept: 'AL', application: 'AL' }, 'ENH7'), // CR, then the AR asked for
      adtFor(target, {}, 'ORIG8'), // original mode: AA
    ];
    const answers = await exchange(frames, 9);
    expect(answers.map((answer) => [msa(answer).get(1), msa(answer).get(2)])).toEqual([
      ['CA', 'ENH1'],
      ['AA', 'ENH1'],
      ['CA', 'ENH2'],
      ['AA', 'ENH3'],
      ['CA', 'ENH5'],
      ['AE', 'ENH6'],
      ['CR', 'ENH7'],
      ['AR', 'ENH7'],
      ['AA', 'ORIG8'],
    ]);
    // The accept acknowledgement is an ACK in the sender's version, with the trigger.
    expect(parseHl7(answers[0]!).header.field(9).raw).toBe('ACK^A01^ACK');
    expect(parseHl7(answers[0]!).header.get(12)).toBe('2.5.1');
    expect(parseHl7(answers[6]!).segment('ERR')!.field(2).raw).toBe('MSH^1^8');
  });

  it('checks the messages of a strict identity strictly, over MLLP and HTTP: a finding that is a warning elsewhere is an AE', async () => {
    const own = await startReceiver();
    try {
      const target = await mllpConnection(own.url);
      const strict = await service.call(`/v1/sandbox/hl7/identities/${target.connectionId}`, {
        key: target.key,
        method: 'PUT',
        body: { receiving_application: target.application, receiving_facility: target.facility, conformance: 'strict' },
      });
      expect(strict.body).toMatchObject({ conformance: 'strict', mllp_token: `sbx_mllp_…${target.token.slice(-4)}` });
      const text = adtFor(target, {}, 'STRICT1').replace('|19581212|F|', '|19581212|Q|');
      const [bad] = await exchange([text], 1);
      expect(msa(bad!).get(1)).toBe('AE');
      expect(parseHl7(bad!).segment('ERR')!.field(2).raw).toBe('PID^1^8^1^1');
      expect(own.requests).toEqual([]);
      // Over HTTP too the identity's strictness holds, unless the request asks otherwise.
      const inject = (query = '') => service.call(`/v1/sandbox/hl7/inject${query}`, { key: target.key, method: 'POST', body: { message: text } });
      expect((await inject()).status).toBe(422);
      expect((await inject('?conformance=lenient')).status).toBe(202);
    } finally {
      await own.close();
    }
  });
});

describe('batches and streams over MLLP', () => {
  it('answers an FHS/BHS batch with a batch acknowledgement: each message processed and acknowledged on its own, the token in BHS-8', async () => {
    const own = await startReceiver();
    try {
      const target = await mllpConnection(own.url);
      const message = (id: string) => adtFor({ ...target, token: '' }, {}, id);
      const batch = [
        'FHS|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000||||FILE-7',
        `BHS|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000|${target.token}|||BATCH-7`,
        message('BATCH-M1'),
        withoutPid(message('BATCH-M2')),
        message('BATCH-M3'),
        'BTS|3',
        'FTS|1',
      ].join('\r');
      const [answer] = await exchange([batch], 1);
      const lines = answer!.split('\r');
      expect(segmentNames(answer!)).toEqual(['FHS', 'BHS', 'MSH', 'MSA', 'MSH', 'MSA', 'ERR', 'MSH', 'MSA', 'BTS', 'FTS']);
      expect(lines[0]!.split('|')[11]).toBe('FILE-7');
      expect(lines[1]!.split('|')[11]).toBe('BATCH-7');
      expect(lines[1]).not.toContain(target.token);
      const acks = lines.filter((line) => line.startsWith('MSA')).map((line) => line.split('|').slice(1, 3));
      expect(acks).toEqual([
        ['AA', 'BATCH-M1'],
        ['AE', 'BATCH-M2'],
        ['AA', 'BATCH-M3'],
      ]);
      expect(lines.at(-2)).toBe('BTS|3');
      const requests = await own.waitForRequests(2);
      const controlIds = requests.map((request) => (JSON.parse(request.body).resource as Bundle).identifier!.value).sort();
      expect(controlIds).toEqual(['BATCH-M1', 'BATCH-M3']);
    } finally {
      await own.close();
    }
  });

  it('answers several messages in one frame with a batch acknowledgement, and several frames on one connection each with its own ACK', async () => {
    const target = await mllpConnection(receiver.url);
    const [stream] = await exchange([`${adtFor(target, {}, 'STREAM1')}\r${adtFor(target, {}, 'STREAM2')}`], 1);
    expect(segmentNames(stream!)).toEqual(['BHS', 'MSH', 'MSA', 'MSH', 'MSA', 'BTS']);
    expect(
      stream!
        .split('\r')
        .filter((line) => line.startsWith('MSA'))
        .map((line) => line.split('|')[2]),
    ).toEqual(['STREAM1', 'STREAM2']);
    const separate = await exchange([adtFor(target, {}, 'FRAME1'), adtFor(target, {}, 'FRAME2'), adtFor(target, {}, 'FRAME3')], 3);
    expect(separate.map((answer) => [msa(answer).get(1), msa(answer).get(2)])).toEqual([
      ['AA', 'FRAME1'],
      ['AA', 'FRAME2'],
      ['AA', 'FRAME3'],
    ]);
  });
});

describe('failed MLLP authentication and the address’s budget', () => {
  it('counts each message with an unknown token against the address’s failure budget; past it, a token the connection never used is refused before any lookup', async () => {
    const small = await startTestMllpListener(service, { FAILED_AUTH_PER_MINUTE: 3 });
    try {
      const target = await mllpConnection(receiver.url);
      const made = (n: number) => adtFor({ ...target, token: `sbx_mllp_madeupmadeupmadeupmadeup${n}` }, {}, `MADEUP${n}`);
      const [batch] = await exchange([[made(1), made(2), made(3)].join('\r')], 1, small.port);
      expect(batch!.split('\r').filter((line) => line.startsWith('MSA|AR'))).toHaveLength(3);
      const [refused] = await exchange([adtFor(target, {}, 'GOOD1')], 1, small.port);
      expect(msa(refused!).get(1)).toBe('AR');
      expect(refused).toContain('Too many failed authentications from this address');
      // The listener with budget to spare serves the same token.
      const [served] = await exchange([adtFor(target, {}, 'GOOD2')], 1);
      expect(msa(served!).get(1)).toBe('AA');
    } finally {
      await small.close();
    }
  });
});

describe('MSH-18 character sets and large messages over MLLP', () => {
  it('decodes an 8859/1 message by its MSH-18: the name reaches the webhook as the sender wrote it', async () => {
    const own = await startReceiver();
    try {
      const target = await mllpConnection(own.url);
      const text = withMsh(adtFor(target, {}, 'LATIN1'), { 18: '8859/1' });
      const pid = parseHl7(text).segment('PID')!;
      const family = pid.get(5, 1);
      const latin = text.replace(`|${family}^`, '|Müller^');
      const [ack] = await exchange([Buffer.from(latin, 'latin1')], 1);
      expect(msa(ack!).get(1)).toBe('AA');
      const [request] = await own.waitForRequests(1);
      const patient = (JSON.parse(request!.body).resource as Bundle).entry!.find((entry) => entry.resource!.resourceType === 'Patient')!
        .resource as Patient;
      expect(patient.name![0]!.family).toBe('Müller');
    } finally {
      await own.close();
    }
  });

  // Large enough to be processed off the event loop; a 256 KiB message maps to a Bundle above Temporal's 2 MB payload limit until payloads travel by reference (issue 21 item 5).
  it('processes a 64 KiB message in a worker thread and delivers it', async () => {
    const own = await startReceiver();
    try {
      const target = await mllpConnection(own.url);
      const head = withMsh(
        'MSH|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000+0000||ORU^R01^ORU_R01|BIGMLLP|P|2.5.1\rPID|1||M1^^^HOSP^MR||Doe^Jane||19800101|F\rOBR|1||F1|58410-2^CBC^LN|||20250101',
        { 5: target.application, 6: target.facility, 8: target.token },
      );
      const observations: string[] = [];
      for (let size = head.length, index = 1; size < 64 * 1024; index++) {
        observations.push(`OBX|${index}|NM|718-7^Hemoglobin^LN||13.${index % 10}|g/dL^g/dL^UCUM|12-16|N|||F`);
        size += observations.at(-1)!.length + 1;
      }
      const [ack] = await exchange([[head, ...observations].join('\r')], 1);
      expect(msa(ack!).get(1), ack).toBe('AA');
      const [request] = await own.waitForRequests(1, 60_000);
      const bundle = JSON.parse(request!.body).resource as Bundle;
      expect(bundle.entry!.filter((entry) => entry.resource!.resourceType === 'Observation')).toHaveLength(observations.length);
    } finally {
      await own.close();
    }
  });
});
