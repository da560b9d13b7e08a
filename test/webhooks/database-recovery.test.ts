import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantReceivingAt, trigger } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

// The API and its worker reach Postgres only through a proxy this file cuts, as a Postgres restart does.
let database: TcpProxy;
let service: TestService;
let receiver: TestReceiver;

beforeAll(async () => {
  const databaseUrl = new URL(inject('databaseUrl'));
  database = await startTcpProxy({ host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) });
  const proxied = new URL(databaseUrl);
  proxied.host = database.address;
  service = await startTestService({ DATABASE_URL: proxied.toString() });
  receiver = await startReceiver();
});

afterAll(async () => {
  await database.restore().catch(() => {});
  await service?.stop();
  await Promise.all([receiver?.close(), database?.close()]);
});

describe('Postgres back after an outage', () => {
  it('serves again at once: a delivery triggered a second after Postgres accepts connections arrives within 5 s', { timeout: 90_000 }, async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    await trigger(service, tenant.key);
    await receiver.waitForRequests(1);

    await database.cut();
    // Ten seconds of requests against the cut database, five a second, as a busy API sees a restart:
    // each failed connection attempt grows the client's reconnect backoff (postgres.js: up to 20 s).
    const during: Promise<{ status: number; at: number }>[] = [];
    for (const outageEnds = Date.now() + 10_000; Date.now() < outageEnds; await sleep(200)) {
      during.push(service.call('/v1/webhooks/deliveries', { key: tenant.key }).then((response) => ({ status: response.status, at: Date.now() })));
    }
    await database.restore();
    const restoredAt = Date.now();
    // The scenario, not a wait for a condition: the partner sends one second after Postgres is back.
    await sleep(1000);
    const triggeredAt = Date.now();
    const accepted = await trigger(service, tenant.key);
    const [, request] = await receiver.waitForRequests(2, 5_000);
    expect(request!.headers['x-service-delivery-id']).toBe(accepted.id);
    expect(request!.receivedAt - triggeredAt).toBeLessThan(5_000);
    // Requests made during the outage were answered 503 (or 200 once it was over), never 500, and none
    // was held in a reconnect backoff long after Postgres was back.
    const answers = await Promise.all(during);
    expect(answers.filter((answer) => answer.status !== 503 && answer.status !== 200)).toEqual([]);
    expect(answers.filter((answer) => answer.status === 503).length).toBeGreaterThan(0);
    expect(Math.max(...answers.map((answer) => answer.at)) - restoredAt).toBeLessThan(5_000);
  });
});
