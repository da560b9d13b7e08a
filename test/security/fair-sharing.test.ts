import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * One tenant cannot starve the rest (issues 23 and 32). The worker here has 6 activity slots and 2
 * per organization, so without the bound one organization's 12 deliveries to a receiver that never
 * answers would hold every slot for the whole receiver timeout; and an attempt past its
 * organization's bound waits its turn without failing (no rejected activity attempts to retry) and
 * without holding a worker slot.
 */
const ACTIVITY_SLOTS = 6;
const SLOTS_PER_ORGANIZATION = 2;
const BURST = 200;
const LIGHT_LOAD = 5;

let service: TestService;
let healthy: TestReceiver;

/**
 * A receiver that reads each request and answers it only once `release()` is called (every request
 * from then on at once): `held()` is how many it holds now, `mostHeld` the most it ever held at once.
 */
function holdingReceiver() {
  const waiting = new Set<ServerResponse>();
  let released = false;
  const answer = (res: ServerResponse) => res.writeHead(200).end('ok');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.received += 1;
      if (released) return answer(res);
      waiting.add(res);
      receiver.mostHeld = Math.max(receiver.mostHeld, waiting.size);
      res.on('close', () => waiting.delete(res));
    });
  });
  const receiver = {
    url: '',
    received: 0,
    mostHeld: 0,
    held: () => waiting.size,
    release() {
      released = true;
      for (const res of waiting) answer(res);
      waiting.clear();
    },
    async listen() {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}
const silent = holdingReceiver();
const bursting = holdingReceiver();

beforeAll(async () => {
  service = await startTestService({
    WORKER_MAX_CONCURRENT_ACTIVITIES: String(ACTIVITY_SLOTS),
    DELIVERY_SLOTS_PER_ORGANIZATION: String(SLOTS_PER_ORGANIZATION),
    // Longer than any step of a test on a loaded machine: a held request stays held until the test lets it go.
    WEBHOOK_TIMEOUT_MS: '120000',
  });
  healthy = await startReceiver();
  await silent.listen();
  await bursting.listen();
});
afterAll(async () => {
  await silent.close();
  await bursting.close();
  await healthy?.close();
  await service?.stop();
});

/** Triggers `count` deliveries for the key, a few at a time, and returns their ids in the order they were accepted. */
async function triggerMany(key: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  const next = async () => {
    while (ids.length < count) {
      const slot = ids.push('') - 1;
      ids[slot] = (await trigger(service, key)).id;
    }
  };
  await Promise.all(Array.from({ length: 8 }, next));
  return ids;
}

/**
 * How each attempt of a delivery's activity went, from its workflow's history: every attempt the
 * server started (retries included: a started event records the attempt it ended on) and every
 * failure or timeout Temporal saw. A delivery served at its first try has one attempt and no failure.
 */
async function activityAttempts(client: Client, deliveryId: string) {
  const events = (await client.workflow.getHandle(deliveryWorkflowId(deliveryId)).fetchHistory()).events ?? [];
  return {
    started: events
      .filter((event) => event.activityTaskStartedEventAttributes)
      .map((event) => event.activityTaskStartedEventAttributes!.attempt ?? 1),
    failed: events.filter((event) => event.activityTaskFailedEventAttributes || event.activityTaskTimedOutEventAttributes).length,
  };
}

describe('fair sharing between organizations', () => {
  it("serves another organization's deliveries while one organization's receiver never answers", async () => {
    const other = await tenantReceivingAt(service, healthy.url);
    const noisy = await tenantReceivingAt(service, silent.url);

    await triggerMany(noisy.key, 12);
    // The silent receiver holds as many attempts as the organization has slots; the rest wait their turn.
    await waitUntil(() => (silent.held() >= SLOTS_PER_ORGANIZATION ? true : undefined), { what: 'the silent receiver holding attempts' });

    const served = await triggerMany(other.key, 3);
    for (const id of served) expect((await waitForDelivery(service, other.key, id, isFinished)).status).toBe('succeeded');
    // All three were served while the noisy organization's first attempts still hung: none of its
    // others had even been sent, so they waited behind their own organization, not in front of others.
    expect(silent.received).toBe(SLOTS_PER_ORGANIZATION);
    expect(silent.mostHeld).toBe(SLOTS_PER_ORGANIZATION);
  });

  it("serves one organization's burst with no rejected attempt, and another organization's deliveries ahead of the burst's tail", async () => {
    const burstTenant = await tenantReceivingAt(service, bursting.url);
    const light = await tenantReceivingAt(service, healthy.url);

    const burst = await triggerMany(burstTenant.key, BURST);
    // The burst's receiver holds what it gets: the organization's slots fill and the rest of its burst waits on the worker.
    await waitUntil(() => (bursting.held() >= SLOTS_PER_ORGANIZATION ? true : undefined), { what: 'the burst filling its slots' });
    const lightIds = await triggerMany(light.key, LIGHT_LOAD);
    for (const id of lightIds) expect((await waitForDelivery(service, light.key, id, isFinished)).status).toBe('succeeded');
    // The light organization was served in full while the burst had had no more than its slots' worth sent.
    expect(bursting.received).toBe(SLOTS_PER_ORGANIZATION);
    expect(bursting.mostHeld).toBe(SLOTS_PER_ORGANIZATION);

    bursting.release();
    for (const id of burst) expect((await waitForDelivery(service, burstTenant.key, id, isFinished, 120_000)).status).toBe('succeeded');
    // Every delivery of the burst was sent once.
    expect(bursting.received).toBe(BURST);

    // Zero activity failures: each delivery's attempt ran once, at its first try, with no failure or timeout in its history.
    const histories = await Promise.all([...burst, ...lightIds].map((id) => activityAttempts(service.temporal, id)));
    expect(histories.filter(({ started, failed }) => failed > 0 || started.length !== 1 || started[0] !== 1)).toEqual([]);
  }, 300_000);
});
