import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDelivery } from '../../api/webhooks/start-delivery';
import { mllpHandler } from '../../hl7/inject';
import { renderTemplate } from '../../hl7/templates';
import { createCostBudget } from '../../platform/cost-budget';
import { createWorkflowGateway } from '../../platform/workflow-gateway';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { type CallResult, startTestService, type TestService } from '../support/service';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { waitUntil } from '../support/wait';

// The API and its worker reach Postgres and Temporal only through proxies this file cuts.
const CALL_TIMEOUT_MS = 1500;

let database: TcpProxy;
let temporal: TcpProxy;
let service: TestService;
let receiver: TestReceiver;
// A direct connection, beside the proxy: what the test sees of the database while the API cannot.
let direct: postgres.Sql;

beforeAll(async () => {
  const databaseUrl = new URL(inject('databaseUrl'));
  database = await startTcpProxy({ host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) });
  const [temporalHost, temporalPort] = inject('temporalAddress').split(':');
  temporal = await startTcpProxy({ host: temporalHost!, port: Number(temporalPort) });
  const proxied = new URL(databaseUrl);
  proxied.host = database.address;
  service = await startTestService({
    DATABASE_URL: proxied.toString(),
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
    WEBHOOK_RETRY_SCHEDULE: '500ms,1s,2s',
  });
  direct = postgres(databaseUrl.toString(), { max: 1, onnotice: () => {} });
  receiver = await startReceiver();
});

afterAll(async () => {
  await Promise.all([database.restore().catch(() => {}), temporal.restore().catch(() => {})]);
  await service?.stop();
  await Promise.all([receiver?.close(), direct?.end(), database?.close(), temporal?.close()]);
});

/** The trigger as a partner sends it, with an Idempotency-Key. */
const triggerWithKey = (apiKey: string, key: string) =>
  service.call('/v1/webhooks/trigger-mock-event', { key: apiKey, method: 'POST', body: {}, headers: { 'idempotency-key': key } });

/** Retries a request with its Idempotency-Key, as a partner would, until it is answered 202. */
async function retryUntilAccepted(apiKey: string, key: string, seen: CallResult[]): Promise<CallResult> {
  return waitUntil(
    async () => {
      const response = await triggerWithKey(apiKey, key);
      seen.push(response);
      return response.status === 202 ? response : undefined;
    },
    { what: `the trigger with Idempotency-Key ${key} being accepted`, intervalMs: 200, lastSeen: () => seen.at(-1)?.body },
  );
}

const receivedIds = () => receiver.requests.map((request) => String(request.headers['x-service-delivery-id']));

/** Each delivery succeeded and arrived exactly once, and the organization has no delivery but these and `others`. */
async function expectDeliveredOnce(apiKey: string, ids: string[], others: string[] = []): Promise<void> {
  for (const id of ids) {
    const delivery = await waitForDelivery(service, apiKey, id, isFinished, 60_000);
    expect(delivery).toMatchObject({ status: 'succeeded' });
    expect(receivedIds().filter((received) => received === id)).toHaveLength(1);
  }
  const listed = await service.call('/v1/webhooks/deliveries?limit=200', { key: apiKey });
  expect((listed.body.data as { id: string }[]).map((delivery) => delivery.id).sort()).toEqual([...ids, ...others].sort());
}

function expectUnavailableProblem(response: CallResult): void {
  expect(response.status).toBe(503);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.headers.get('retry-after')).toBe('5');
  expect(response.body.detail).toMatch(/briefly unavailable|did not confirm the start/);
}

describe('a database outage', () => {
  it('answers 503 with Retry-After while the database is cut, never 500; each key ends with one delivery, which arrives once', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const keys = Array.from({ length: 24 }, (_, index) => `db-outage-${index}-${randomUUID()}`);
    const answers = new Map<string, CallResult[]>(keys.map((key) => [key, []]));
    let answered = 0;
    let readiness: CallResult | undefined;
    // Four partners send at once; the cut comes after the first six answers and lasts for the next twelve.
    const queue = [...keys];
    const sender = async () => {
      for (let key = queue.shift(); key; key = queue.shift()) {
        answers.get(key)!.push(await triggerWithKey(tenant.key, key));
        answered += 1;
        if (answered === 6) await database.cut();
        if (answered === 18) {
          readiness = await service.call('/readyz');
          await database.restore();
        }
      }
    };
    await Promise.all([sender(), sender(), sender(), sender()]);

    expect(readiness?.status).toBe(503);
    expect(readiness?.body.checks).toMatchObject({ database: expect.stringMatching(/^down: /), temporal: 'ok' });
    const firstAnswers = [...answers.values()].map((seen) => seen[0]!);
    expect(firstAnswers.filter((response) => response.status === 503).length).toBeGreaterThan(0);
    for (const response of firstAnswers) if (response.status !== 202) expectUnavailableProblem(response);

    // Every partner retries with its key until accepted; a key answered 202 keeps its delivery.
    const finalIds: string[] = [];
    for (const key of keys) {
      const seen = answers.get(key)!;
      const accepted = seen[0]!.status === 202 ? seen[0]! : await retryUntilAccepted(tenant.key, key, seen);
      const again = await triggerWithKey(tenant.key, key);
      expect(again.status).toBe(202);
      expect(again.body.id).toBe(accepted.body.id);
      finalIds.push(accepted.body.id);
    }
    expect([...answers.values()].flat().filter((response) => response.status === 500)).toEqual([]);
    expect(new Set(finalIds).size).toBe(keys.length);
    await expectDeliveredOnce(tenant.key, finalIds);
  }, 120_000);

  // Each endpoint that starts a workflow, and how its 202 names the delivery.
  const startingEndpoints = [
    {
      name: 'the mock event trigger',
      send: (apiKey: string, key: string) => triggerWithKey(apiKey, key),
      deliveryOf: (body: any) => body,
    },
    {
      name: 'the HL7 inject',
      send: async (apiKey: string, key: string) => {
        const template = await service.call('/v1/sandbox/hl7/templates/adt-a01', { key: apiKey });
        return service.call('/v1/sandbox/hl7/inject', {
          key: apiKey,
          method: 'POST',
          body: { message: template.body.er7 },
          headers: { 'idempotency-key': key },
        });
      },
      deliveryOf: (body: any) => body.delivery,
    },
  ];

  it.each(startingEndpoints)(
    '$name answers 202 with the delivery when the database fails after its workflow started, and a retry with the key gets the same one',
    async ({ send, deliveryOf }) => {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const key = `after-start-${randomUUID()}`;
      // Slow Temporal answers widen the window between reserving the delivery and its workflow starting.
      temporal.setLatency(300);
      const pending = send(tenant.key, key);
      // The request has reserved its delivery and staged its envelope (the last database step before the
      // start; the delivery row once its workflow took the envelope): the cut falls while the start is under way.
      await waitUntil(
        async () => {
          const [reserved] = await direct`select reservation from idempotency_keys where key = ${key}`;
          const [staged] = await direct`
            select (select count(*) from staged_envelopes where organization_id = ${tenant.organizationId})
                 + (select count(*) from deliveries where organization_id = ${tenant.organizationId}) as rows`;
          return reserved?.reservation && Number(staged!.rows) > 0 ? true : undefined;
        },
        { what: 'the request reserving its delivery with the key and staging its envelope' },
      );
      await database.cut();
      const first = await pending;
      temporal.setLatency(0);
      await database.restore();

      expect(first.status).toBe(202);
      const delivery = deliveryOf(first.body);
      expect(delivery).toMatchObject({ id: expect.stringMatching(/^dlv_/), status: 'pending' });
      expect(first.headers.get('location')).toBe(`/v1/webhooks/deliveries/${delivery.id}`);
      const retried = await waitUntil(
        async () => {
          const response = await send(tenant.key, key);
          return response.status === 202 ? response : undefined;
        },
        { what: 'the retry being accepted' },
      );
      expect(deliveryOf(retried.body).id).toBe(delivery.id);
      expect(deliveryOf(retried.body).envelope).toEqual(delivery.envelope);
      await expectDeliveredOnce(tenant.key, [delivery.id]);
    },
    60_000,
  );
});

describe('an MLLP message during a database outage', () => {
  it('is answered AR (rejected for a reason unrelated to its content: send it again), not dropped, and AA with its delivery once the database is back', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'MLLP feed (synthetic)' } });
    const application = `OUTAGE${randomUUID().slice(0, 8).toUpperCase()}`;
    const identity = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, {
      key: tenant.key,
      method: 'PUT',
      body: { receiving_application: application, receiving_facility: 'MLLP' },
    });
    const handler = mllpHandler({
      db: service.database.db,
      startDelivery: (delivery) =>
        startDelivery(
          { db: service.database.db, workflows: createWorkflowGateway(service.temporal, service.taskQueue) },
          delivery,
          service.config.WEBHOOK_RETRY_SCHEDULE,
        ),
      budget: createCostBudget(service.config.HL7_RATE_LIMIT_PER_MINUTE),
      failedAuthentications: createCostBudget(service.config.FAILED_AUTH_PER_MINUTE),
    });
    const peer = { remoteAddress: '127.0.0.1' };
    const handle = async (text: string) => {
      const answers: string[] = [];
      await handler(text, (answer) => answers.push(answer), peer);
      return answers.join('\n');
    };
    // Addressed to the identity, with its MLLP token in MSH-8, in the original acknowledgement mode (MSH-15/MSH-16 empty).
    const [header, ...rest] = renderTemplate('adt-a01')!.er7.split('\r');
    const fields = header!.split('|');
    Object.assign(fields, { 4: application, 5: 'MLLP', 7: identity.body.mllp_token, 14: '', 15: '' });
    const text = [fields.join('|'), ...rest].join('\r');

    await database.cut();
    const during = await handle(text).finally(() => database.restore());
    expect(during).toMatch(/MSA\|AR\|/);
    expect(during).toContain('send it again shortly');

    // The sender sends it again, as the AR asks, until it is accepted (reconnecting may take a moment).
    const after = await waitUntil(
      async () => {
        const ack = await handle(text);
        return /MSA\|AA\|/.test(ack) ? ack : undefined;
      },
      { what: 'the message being accepted once the database is back', intervalMs: 200 },
    );
    const [, deliveryId] = after.match(/delivery (dlv_\w+)/)!;
    await expectDeliveredOnce(tenant.key, [deliveryId!]);
  });
});

describe('a Temporal outage', () => {
  it('answers 503 within the call deadline while Temporal is cut, and work accepted before the cut completes after it', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    // The delivery accepted before the cut fails its first attempt, so its retry falls in the outage.
    const failedOnce = new Set<string>();
    let before = { id: '' };
    receiver.answerWith((request) => {
      const id = String(request.headers['x-service-delivery-id']);
      if (id !== before.id || failedOnce.has(id)) return { status: 200, body: 'ok' };
      failedOnce.add(id);
      return { status: 500, body: 'not yet' };
    });
    before = await trigger(service, tenant.key);
    await waitUntil(() => (failedOnce.has(before.id) ? true : undefined), { what: 'the first attempt failing' });

    await temporal.cut();
    const key = `temporal-outage-${randomUUID()}`;
    const started = Date.now();
    const during = await triggerWithKey(tenant.key, key);
    const elapsedMs = Date.now() - started;
    const readiness = await service.call('/readyz');
    await temporal.restore();

    expectUnavailableProblem(during);
    expect(during.body.code).toBe('workflow_engine_unavailable');
    expect(during.body.detail).toMatch(/Retry with the same Idempotency-Key/);
    expect(elapsedMs).toBeLessThan(CALL_TIMEOUT_MS + 1000);
    expect(readiness.status).toBe(503);
    expect(readiness.body.checks).toMatchObject({ database: 'ok', temporal: expect.stringMatching(/^down: /) });

    const accepted = await retryUntilAccepted(tenant.key, key, []);
    const delivered = await waitForDelivery(service, tenant.key, before.id, isFinished, 60_000);
    expect(delivered).toMatchObject({ status: 'succeeded' });
    expect(delivered.attempts.map((attempt: { response_status: number }) => attempt.response_status)).toEqual([500, 200]);
    await expectDeliveredOnce(tenant.key, [accepted.body.id], [before.id]);
    receiver.answerWith(() => ({ status: 200, body: 'ok' }));
  }, 90_000);
});
