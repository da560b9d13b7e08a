import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFinished, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let receiver: TestReceiver;
beforeAll(async () => {
  [service, receiver] = await Promise.all([startTestService({ WEBHOOK_RETRY_SCHEDULE: '200ms' }), startReceiver()]);
});
afterAll(() => Promise.all([service.stop(), receiver.close()]));

/** A tenant with its own receiver path, so each test counts only its own requests. */
async function chaosTenant(profile: Record<string, unknown>) {
  const tenant = await tenantReceivingAt(service, receiver.url);
  const patched = await service.call('/v1/sandbox/webhook-reliability', { key: tenant.key, method: 'PATCH', body: profile });
  expect(patched.status).toBe(200);
  return tenant;
}

const requestsFor = (deliveryId: string) => receiver.requests.filter((request) => request.headers['x-service-delivery-id'] === deliveryId);

describe('chaos modes, as the attempt log and the receiver see them', () => {
  it('transient 503 on the first attempt: recorded as 503, the receiver only sees the retry', async () => {
    const tenant = await chaosTenant({ transient_503: { first_n_attempts: 1 } });
    const accepted = await trigger(service, tenant.key);
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    expect(delivery.status).toBe('succeeded');
    expect(delivery.attempts.map((a: { chaos: string | null; response_status: number }) => [a.chaos, a.response_status])).toEqual([
      ['transient_503', 503],
      [null, 200],
    ]);
    expect(delivery.attempts[0].error).toContain('receiver was not called');
    const requests = requestsFor(accepted.id);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body).toBe(JSON.stringify(delivery.envelope));
  });

  it('rate limit on the first attempt: recorded as 429, the retry waits at least its Retry-After', async () => {
    const tenant = await chaosTenant({ rate_limit: { first_n_attempts: 1, retry_after_seconds: 1 } });
    const accepted = await trigger(service, tenant.key);
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    expect(delivery.status).toBe('succeeded');
    expect(delivery.attempts[0]).toMatchObject({ chaos: 'rate_limit', response_status: 429, outcome: 'failed' });
    const gap = Date.parse(delivery.attempts[1].attempted_at) - Date.parse(delivery.attempts[0].attempted_at);
    expect(gap).toBeGreaterThanOrEqual(1000);
    expect(requestsFor(accepted.id)).toHaveLength(1);
  });

  it('slow: the signed request is held before sending, so it arrives late with its original timestamp', async () => {
    const tenant = await chaosTenant({ slow: { first_n_attempts: 1, delay_ms: 1500 } });
    const accepted = await trigger(service, tenant.key);
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    expect(delivery.status).toBe('succeeded');
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({ chaos: 'slow', response_status: 200 });
    expect(delivery.attempts[0].duration_ms).toBeGreaterThanOrEqual(1500);
    const [request] = requestsFor(accepted.id);
    const signedAt = Number(request!.headers['webhook-timestamp']) * 1000;
    expect(request!.receivedAt - signedAt).toBeGreaterThanOrEqual(1000);
    expect(request!.body).toBe(JSON.stringify(delivery.envelope));
  });

  it('a rate of 1 touches every attempt, until the retries run out', async () => {
    const tenant = await chaosTenant({ transient_503: { rate: 1 } });
    const accepted = await trigger(service, tenant.key);
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    expect(delivery.status).toBe('failed');
    expect(delivery.attempts.map((a: { chaos: string }) => a.chaos)).toEqual(['transient_503', 'transient_503']);
    expect(requestsFor(accepted.id)).toHaveLength(0);
  });

  it('a rate of 0 and first_n_attempts of 0 leave deliveries alone', async () => {
    const tenant = await chaosTenant({ transient_503: { rate: 0, first_n_attempts: 0 }, slow: { rate: 0 }, rate_limit: { rate: 0 } });
    const accepted = await trigger(service, tenant.key);
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
    expect(delivery.attempts).toEqual([expect.objectContaining({ chaos: null, outcome: 'succeeded' })]);
  });
});

describe('the reliability profile', () => {
  it('starts with every mode off, merges partial updates, and validates each field', async () => {
    const tenant = await service.newTenant();
    const initial = await service.call('/v1/sandbox/webhook-reliability', { key: tenant.key });
    expect(initial.body).toEqual({
      transient_503: { first_n_attempts: 0, rate: 0 },
      slow: { first_n_attempts: 0, rate: 0, delay_ms: 3000 },
      rate_limit: { first_n_attempts: 0, rate: 0, retry_after_seconds: 5 },
      bulk_export: { fail: { rate: 0 }, slow: { rate: 0, delay_ms: 5000 }, partial: { rate: 0, every_nth: 10 } },
      updated_at: null,
    });

    await service.call('/v1/sandbox/webhook-reliability', { key: tenant.key, method: 'PATCH', body: { slow: { rate: 0.25 } } });
    const merged = await service.call('/v1/sandbox/webhook-reliability', { key: tenant.key, method: 'PATCH', body: { slow: { delay_ms: 500 } } });
    expect(merged.body.slow).toEqual({ first_n_attempts: 0, rate: 0.25, delay_ms: 500 });
    expect(merged.body.updated_at).toEqual(expect.any(String));
    const exports = await service.call('/v1/sandbox/webhook-reliability', {
      key: tenant.key,
      method: 'PATCH',
      body: { bulk_export: { partial: { rate: 1 } } },
    });
    expect(exports.body.bulk_export.partial).toEqual({ rate: 1, every_nth: 10 });
    expect(exports.body.slow).toEqual(merged.body.slow);

    const invalid = await service.call('/v1/sandbox/webhook-reliability', {
      key: tenant.key,
      method: 'PATCH',
      body: { transient_503: { rate: 2 }, slow: { delay_ms: -1 }, flaky: {}, bulk_export: { partial: { every_nth: 1 } } },
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors.map((error: { path: string }) => error.path).sort()).toEqual([
      'body.bulk_export.partial.every_nth',
      'body.flaky',
      'body.slow.delay_ms',
      'body.transient_503.rate',
    ]);
    expect((await service.call('/v1/sandbox/webhook-reliability', { key: tenant.key })).body.slow.delay_ms).toBe(500);
  });
});
