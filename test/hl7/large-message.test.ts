import { createHmac } from 'node:crypto';
import { connect } from 'node:net';
import { eq } from 'drizzle-orm';
import type { Bundle } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stagedEnvelopes } from '../../drizzle/schema';
import { FS, frame } from '../../hl7/mllp';
import { MAX_MESSAGE_BYTES, parseHl7 } from '../../hl7/parse';
import { HL7_TRIGGERS } from '../../hl7/triggers';
import { newId } from '../../platform/ids';
import type { RunningMllpListener } from '../../runtime/mllp';
import { PAGE_ENVELOPE_BYTES, recordNewDelivery } from '../../webhooks/delivery-records';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { isFinished, tenantReceivingAt, waitForDelivery } from '../support/deliveries';
import { largeOruR01 } from '../support/large-hl7';
import { startTestMllpListener } from '../support/mllp-listener';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * Issue #21, large messages end to end: a 256 KiB ORU^R01 maps to an envelope of several MiB, over
 * Temporal's 2 MB payload limit, so its delivery workflow carries a claim check (webhooks/claim-check.ts).
 * Over HTTP and over MLLP, the receiver gets the whole envelope signed, a replay sends it again
 * byte for byte, and the API shows the delivery, its envelope and its attempts.
 */

const ER7 = 'x-application/hl7-v2+er7';
/** Temporal refuses a payload over 2 MB; the envelope must be above that for this test to mean anything. */
const TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024;

let service: TestService;
let receiver: TestReceiver;
let tenant: Awaited<ReturnType<typeof tenantReceivingAt>>;
let listener: RunningMllpListener;
beforeAll(async () => {
  service = await startTestService();
  receiver = await startReceiver();
  tenant = await tenantReceivingAt(service, receiver.url);
  listener = await startTestMllpListener(service);
});
afterAll(async () => {
  await listener?.close();
  await receiver?.close();
  await service?.stop();
});

/** The catalog event an ORU^R01 is delivered under. */
const RESULT_EVENT = HL7_TRIGGERS.find((trigger) => trigger.type === 'ORU^R01')!.event;
const observationsIn = (text: string) => parseHl7(text).all('OBX').length;

async function requestFor(deliveryId: string, nth = 1): Promise<ReceivedRequest> {
  return waitUntil(
    () => {
      const matching = receiver.requests.filter((request) => request.headers['x-service-delivery-id'] === deliveryId);
      return matching.length >= nth ? matching[nth - 1] : undefined;
    },
    { what: `request ${nth} of ${deliveryId} at the receiver`, timeoutMs: 60_000 },
  );
}

/** The receiver got the whole envelope, signed with the organization's secret, carrying every OBX as an Observation. */
function expectWholeSignedEnvelope(request: ReceivedRequest, deliveryId: string, text: string, controlId: string) {
  const signature = createHmac('sha256', Buffer.from(tenant.secret, 'utf8')).update(request.body).digest('hex');
  expect(request.headers['x-service-signature']).toBe(`sha256=${signature}`);
  expect(request.headers['webhook-id']).toBe(deliveryId);
  expect(Buffer.byteLength(request.body)).toBeGreaterThan(TEMPORAL_PAYLOAD_LIMIT);
  const envelope = JSON.parse(request.body);
  expect(envelope).toMatchObject({ event: RESULT_EVENT, resource: { resourceType: 'Bundle', identifier: { value: controlId } } });
  const observations = (envelope.resource as Bundle).entry!.filter((entry) => entry.resource!.resourceType === 'Observation');
  expect(observations).toHaveLength(observationsIn(text));
  return envelope;
}

/** The workflow carried the claim check, not the envelope, and the envelope is stored once: in the delivery row. */
async function expectClaimCheckOnly(deliveryId: string) {
  const history = await service.temporal.workflow.getHandle(deliveryWorkflowId(deliveryId)).fetchHistory();
  const started = history.events!.find((event) => event.workflowExecutionStartedEventAttributes)!;
  const input = started.workflowExecutionStartedEventAttributes!.input!.payloads!;
  const inputBytes = input.reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
  expect(inputBytes).toBeLessThan(4096);
  expect(JSON.parse(Buffer.from(input[0]!.data!).toString('utf8')).newDelivery).toMatchObject({ id: deliveryId, envelopeStaged: true });
  const staged = await service.database.db.select().from(stagedEnvelopes).where(eq(stagedEnvelopes.deliveryId, deliveryId));
  expect(staged).toEqual([]);
}

/** Replays the finished delivery: the receiver gets the same bytes again, and the attempt log shows both attempts. */
async function expectReplayed(deliveryId: string, first: ReceivedRequest) {
  const replay = await service.call(`/v1/webhooks/deliveries/${deliveryId}/replay`, { key: tenant.key, method: 'POST' });
  expect(replay.status, JSON.stringify(replay.body).slice(0, 500)).toBe(202);
  const second = await requestFor(deliveryId, 2);
  expect(second.body).toBe(first.body);
  const replayed = await waitForDelivery(
    service,
    tenant.key,
    deliveryId,
    (delivery) => delivery.attempts.length === 2 && isFinished(delivery),
    60_000,
  );
  expect(replayed.attempts.map((attempt: { trigger: string; outcome: string }) => [attempt.trigger, attempt.outcome])).toEqual([
    ['initial', 'succeeded'],
    ['replay', 'succeeded'],
  ]);
  expect(replayed.envelope).toEqual(JSON.parse(first.body));
}

describe('a 256 KiB HL7 v2 message', () => {
  it('injected over HTTP as ER7 is delivered whole and signed, replayed, and readable through the API', async () => {
    const text = largeOruR01({ controlId: 'SYN-BIG-HTTP' });
    const response = await service.call('/v1/sandbox/hl7/inject', { key: tenant.key, method: 'POST', body: text, headers: { 'content-type': ER7 } });
    expect(response.status, String(response.body).slice(0, 500)).toBe(202);
    expect(parseHl7(response.body).segment('MSA')!.get(1)).toBe('AA');
    const deliveryId = response.headers.get('location')!.split('/').at(-1)!;

    const first = await requestFor(deliveryId);
    const envelope = expectWholeSignedEnvelope(first, deliveryId, text, 'SYN-BIG-HTTP');
    const delivery = await waitForDelivery(service, tenant.key, deliveryId, isFinished, 60_000);
    expect(delivery).toMatchObject({ status: 'succeeded', hl7_control_id: 'SYN-BIG-HTTP', attempts: [{ number: 1, outcome: 'succeeded' }] });
    expect(delivery.envelope).toEqual(envelope);
    await expectClaimCheckOnly(deliveryId);
    await expectReplayed(deliveryId, first);
  }, 180_000);

  it('injected over HTTP as JSON with an Idempotency-Key answers a retry with the same delivery', async () => {
    const text = largeOruR01({ controlId: 'SYN-BIG-JSON' });
    const send = () =>
      service.call('/v1/sandbox/hl7/inject', {
        key: tenant.key,
        method: 'POST',
        body: { message: text },
        headers: { 'idempotency-key': 'syn-big-json-1' },
      });
    const response = await send();
    expect(response.status, JSON.stringify(response.body).slice(0, 500)).toBe(202);
    expect(response.body.ack.code).toBe('AA');
    const deliveryId = response.body.delivery.id as string;
    expect(response.body.delivery.envelope.resource.identifier.value).toBe('SYN-BIG-JSON');
    const retried = await send();
    expect(retried.status).toBe(202);
    expect(retried.body.delivery.id).toBe(deliveryId);

    const first = await requestFor(deliveryId);
    expectWholeSignedEnvelope(first, deliveryId, text, 'SYN-BIG-JSON');
    await waitForDelivery(service, tenant.key, deliveryId, isFinished, 60_000);
    await expectClaimCheckOnly(deliveryId);
  }, 180_000);

  it('sent over MLLP to a connection’s HL7 identity is delivered whole and signed, replayed, and readable through the API', async () => {
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'Large MLLP feed (synthetic)' } });
    expect(connection.status).toBe(201);
    const application = `BIG-${connection.body.id.slice(-8)}`;
    const identity = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, {
      key: tenant.key,
      method: 'PUT',
      body: { receiving_application: application, receiving_facility: 'MLLP' },
    });
    expect(identity.status).toBe(200);
    const text = largeOruR01({ controlId: 'SYN-BIG-MLLP', receiving: [application, 'MLLP'], mllpToken: identity.body.mllp_token });
    expect(Buffer.byteLength(text)).toBe(MAX_MESSAGE_BYTES);

    const ack = parseHl7(await sendOverMllp(text));
    expect(ack.segment('MSA')!.get(1)).toBe('AA');
    expect(ack.segment('MSA')!.get(2)).toBe('SYN-BIG-MLLP');
    const deliveryId = /dlv_\w+/.exec(ack.segment('MSA')!.get(3))![0];

    const first = await requestFor(deliveryId);
    const envelope = expectWholeSignedEnvelope(first, deliveryId, text, 'SYN-BIG-MLLP');
    expect(envelope.connection_id).toBe(connection.body.id);
    const delivery = await waitForDelivery(service, tenant.key, deliveryId, isFinished, 60_000);
    expect(delivery).toMatchObject({ status: 'succeeded', hl7_control_id: 'SYN-BIG-MLLP', connection_id: connection.body.id });
    expect(delivery.envelope).toEqual(envelope);
    await expectClaimCheckOnly(deliveryId);
    await expectReplayed(deliveryId, first);
  }, 180_000);
});

describe('the delivery list with large envelopes', () => {
  it('ends a page early once its envelopes pass the page budget, and the cursor continues after it', async () => {
    const owner = await service.newTenant('Large envelopes (synthetic)');
    // Synthetic envelopes of 6 MiB each: two fit a 16 MiB page, a third does not.
    const envelopeBytes = 6 * 1024 * 1024;
    expect(2 * envelopeBytes).toBeLessThanOrEqual(PAGE_ENVELOPE_BYTES);
    expect(3 * envelopeBytes).toBeGreaterThan(PAGE_ENVELOPE_BYTES);
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      const id = newId('dlv');
      const head = JSON.stringify({ id: newId('evt'), event: 'results.report.final', note: 'synthetic' });
      await recordNewDelivery(service.database.db, {
        id,
        organizationId: owner.organizationId,
        connectionId: null,
        scenarioId: null,
        event: 'results.report.final',
        environment: 'sandbox',
        envelopeBody: `${head.slice(0, -1)},"padding":"${'x'.repeat(envelopeBytes - head.length - 14)}"}`,
        createdAt: new Date().toISOString(),
      });
      ids.unshift(id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: { id: string; envelope: { note: string } }[]; next_cursor: string | null } } = await service.call(
        `/v1/webhooks/deliveries?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
        { key: owner.key },
      );
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeGreaterThan(0);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      for (const delivery of page.body.data) expect(delivery.envelope.note).toBe('synthetic');
      seen.push(...page.body.data.map((delivery) => delivery.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(ids);
  }, 120_000);
});

/** One message in one MLLP frame over a plain TCP socket; resolves with the ACK's ER7. */
function sendOverMllp(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(listener.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const received = Buffer.concat(chunks);
      const end = received.indexOf(FS);
      if (end === -1) return;
      socket.end();
      resolve(received.subarray(1, end).toString('utf8'));
    });
    socket.write(frame(text));
  });
}
