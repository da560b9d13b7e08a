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
 * One tenant cannot starve the rest (issue 23): an organization whose receiver never answers holds
 * at most its own slots of the worker, so another organization's deliveries keep the latency they
 * have under light load. The worker here has 6 activity slots and 2 per organization, so without the
 * bound the silent receiver's 12 deliveries would hold every slot for the whole receiver timeout.
 * And one organization's burst is served without a rejection loop (issue 32): an attempt past its
 * organization's slots waits its turn on the worker, never failed and retried for it, and without
 * holding a worker slot while it waits.
 */
const ACTIVITY_SLOTS = 6;
const SLOTS_PER_ORGANIZATION = 2;
/** Far past the organization's 2 slots, so nearly all of it waits its turn on the worker. */
const BURST = 150;
const LIGHT_LOAD = 5;

let service: TestService;
let healthy: TestReceiver;
/** A receiver that reads each request and never answers it; `hanging` holds the requests still open. */
const hanging = new Set<ServerResponse>();
const silent = createServer((req, res) => {
  req.resume();
  hanging.add(res);
  res.on('close', () => hanging.delete(res));
});
let silentUrl: string;

/**
 * A receiver that holds every request until `release()`, then answers each (and every later one)
 * 200: `received` counts the requests, `mostHeld` is the most it held at once.
 */
function holdingReceiver() {
  const held = new Set<ServerResponse>();
  let released = false;
  const answer = (res: ServerResponse) => res.writeHead(200).end('ok');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.received += 1;
      if (released) return answer(res);
      held.add(res);
      receiver.mostHeld = Math.max(receiver.mostHeld, held.size);
      res.on('close', () => held.delete(res));
    });
  });
  const receiver = {
    url: '',
    received: 0,
    mostHeld: 0,
    held: () => held.size,
    release() {
      released = true;
      for (const res of held) answer(res);
      held.clear();
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
const holding = holdingReceiver();

beforeAll(async () => {
  service = await startTestService({
    WORKER_MAX_CONCURRENT_ACTIVITIES: String(ACTIVITY_SLOTS),
    DELIVERY_SLOTS_PER_ORGANIZATION: String(SLOTS_PER_ORGANIZATION),
    WEBHOOK_TIMEOUT_MS: '15000',
    // The bursts send hundreds of requests with one key within a minute.
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  healthy = await startReceiver();
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/webhooks`;
  await holding.listen();
});
afterAll(async () => {
  silent.closeAllConnections();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  await holding.close();
  await healthy?.close();
  await service?.stop();
});

/** From the trigger's answer to the receiver's having the request, in ms, for `count` deliveries one after another. */
async function latencies(key: string, count: number): Promise<number[]> {
  const measured: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const before = healthy.requests.length;
    const started = Date.now();
    await trigger(service, key);
    await healthy.waitForRequests(before + 1, 30_000);
    measured.push(healthy.requests[before]!.receivedAt - started);
  }
  return measured;
}

/** Triggers `count` deliveries for the key, 8 at a time, as a partner's burst; their ids. */
async function triggerMany(key: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const sender = async () => {
    while (next < count) {
      next += 1;
      ids.push((await trigger(service, key)).id);
    }
  };
  await Promise.all(Array.from({ length: 8 }, sender));
  return ids;
}

/** Waits until every delivery has ended, and gives their statuses (each `succeeded`, when all went well). */
async function finalStatuses(key: string, ids: string[]): Promise<string[]> {
  const statuses: string[] = [];
  for (const id of ids) statuses.push((await waitForDelivery(service, key, id, isFinished, 120_000)).status);
  return statuses;
}

/**
 * The deliveries whose attempt activities did not each run once at the first try, from their
 * workflow histories: a failed or timed-out attempt, or one started again (a retried activity's
 * started event carries the try it ended on), as OrganizationBusy rejections used to show.
 */
async function notRunOnce(client: Client, ids: string[]) {
  const histories = await Promise.all(
    ids.map(async (id) => {
      const events = (await client.workflow.getHandle(deliveryWorkflowId(id)).fetchHistory()).events ?? [];
      const tries = events
        .filter((event) => event.activityTaskStartedEventAttributes)
        .map((event) => event.activityTaskStartedEventAttributes!.attempt);
      const failed = events.filter((event) => event.activityTaskFailedEventAttributes || event.activityTaskTimedOutEventAttributes).length;
      return { id, tries, failed };
    }),
  );
  return histories.filter(({ tries, failed }) => failed > 0 || tries.length !== 1 || tries[0] !== 1);
}

describe('fair sharing between organizations', () => {
  it("keeps one organization's deliveries at their light-load latency while another's receiver never answers", async () => {
    const other = await tenantReceivingAt(service, healthy.url);
    const noisy = await tenantReceivingAt(service, silentUrl);

    await latencies(other.key, 1); // warm-up
    const baseline = await latencies(other.key, 3);

    for (let index = 0; index < 12; index += 1) await trigger(service, noisy.key);
    // The silent receiver holds as many attempts as the organization has slots; the rest wait their turn.
    await waitUntil(() => (hanging.size >= SLOTS_PER_ORGANIZATION ? true : undefined), { what: 'the silent receiver holding attempts' });

    const underLoad = await latencies(other.key, 3);
    const bound = Math.max(4 * Math.max(...baseline), 3_000);
    console.log(`fair sharing: light load ${baseline.join(', ')} ms; beside a silent receiver ${underLoad.join(', ')} ms (bound ${bound} ms)`);
    for (const latency of underLoad) expect(latency).toBeLessThan(bound);
    // The noisy organization holds no more than its slots.
    expect(hanging.size).toBeLessThanOrEqual(SLOTS_PER_ORGANIZATION);
  });

  it("serves one organization's burst with every delivery sent once and each attempt's activity run once: none rejected or retried", async () => {
    const tenant = await tenantReceivingAt(service, healthy.url);
    const burst = await triggerMany(tenant.key, BURST);

    expect(await finalStatuses(tenant.key, burst)).toEqual(burst.map(() => 'succeeded'));
    const received = healthy.requests.map((request) => String(request.headers['x-service-delivery-id']));
    expect(burst.filter((id) => received.filter((each) => each === id).length !== 1)).toEqual([]);
    expect(await notRunOnce(service.temporal, burst)).toEqual([]);
  }, 300_000);

  it("serves another organization's light load in full while one organization's burst waits its turn", async () => {
    const bursting = await tenantReceivingAt(service, holding.url);
    const light = await tenantReceivingAt(service, healthy.url);

    const burst = await triggerMany(bursting.key, BURST);
    // The burst's receiver holds what it gets: its organization's slots fill, the rest of the burst waits.
    await waitUntil(() => (holding.held() >= SLOTS_PER_ORGANIZATION ? true : undefined), { what: 'the burst filling its slots' });
    const lightLoad = await triggerMany(light.key, LIGHT_LOAD);
    expect(await finalStatuses(light.key, lightLoad)).toEqual(lightLoad.map(() => 'succeeded'));
    // Every delivery of the light load arrived while the burst had had no more than its slots' worth sent.
    expect(holding.received).toBe(SLOTS_PER_ORGANIZATION);
    expect(holding.mostHeld).toBe(SLOTS_PER_ORGANIZATION);

    holding.release();
    expect(await finalStatuses(bursting.key, burst)).toEqual(burst.map(() => 'succeeded'));
    expect(holding.received).toBe(BURST);
    expect(await notRunOnce(service.temporal, [...burst, ...lightLoad])).toEqual([]);
  }, 300_000);
});
