import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busyRetryDelayMs, createOrganizationSlots } from '../../webhooks/fair-share';
import { tenantReceivingAt, trigger } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * One tenant cannot starve the rest (issue 23): an organization whose receiver never answers holds
 * at most its own slots of the worker, so another organization's deliveries keep the latency they
 * have under light load. The worker here has 6 activity slots and 2 per organization, so without the
 * bound the silent receiver's 12 deliveries would hold every slot for the whole receiver timeout.
 */
const ACTIVITY_SLOTS = 6;
const SLOTS_PER_ORGANIZATION = 2;

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

beforeAll(async () => {
  service = await startTestService({
    WORKER_MAX_CONCURRENT_ACTIVITIES: String(ACTIVITY_SLOTS),
    DELIVERY_SLOTS_PER_ORGANIZATION: String(SLOTS_PER_ORGANIZATION),
    WEBHOOK_TIMEOUT_MS: '15000',
  });
  healthy = await startReceiver();
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/webhooks`;
});
afterAll(async () => {
  silent.closeAllConnections();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
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

  it('counts slots per organization and gives them back', () => {
    const slots = createOrganizationSlots(2);
    expect([slots.tryAcquire('a'), slots.tryAcquire('a'), slots.tryAcquire('a'), slots.tryAcquire('b')]).toEqual([true, true, false, true]);
    slots.release('a');
    expect(slots.tryAcquire('a')).toBe(true);
    expect(busyRetryDelayMs(1, () => 0.5)).toBe(500);
    expect(busyRetryDelayMs(3, () => 0.5)).toBe(2_000);
    expect(busyRetryDelayMs(30, () => 1)).toBe(18_750);
  });
});
