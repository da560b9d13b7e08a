import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCostBudget } from '../../platform/cost-budget';
import { systemToken } from '../support/backend-services';
import { startTestService, type TestService } from '../support/service';
import { bearer, postForm } from '../support/smart';
import { waitUntil } from '../support/wait';

/**
 * Rate limits where there is no API key to count against (issue 23): OAuth and FHIR per client
 * address, weighted by cost, and failed authentication on every surface. Budgets are small here so
 * the test reaches them; the defaults are in platform/config.ts.
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService({
    FHIR_RATE_LIMIT_PER_MINUTE: '10',
    OAUTH_RATE_LIMIT_PER_MINUTE: '30',
    FAILED_AUTH_PER_MINUTE: '5',
    SCENARIO_RUNS_IN_FLIGHT_PER_ORGANIZATION: '1',
  });
});
afterAll(() => service.stop());

describe('rate limits per address', () => {
  it('answers FHIR over its budget with 429, an OperationOutcome and Retry-After', async () => {
    for (let index = 0; index < 10; index += 1) expect((await service.call('/fhir/R4/metadata')).status).toBe(200);
    const refused = await service.call('/fhir/R4/metadata');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'throttled' }] });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts a token exchange as five authorization requests, and answers OAuth over its budget with an RFC 6749 error', async () => {
    // 30 units: two token requests (10 each) and five authorization requests (2 each).
    for (let index = 0; index < 2; index += 1) {
      expect((await postForm(service, '/oauth/token', { grant_type: 'authorization_code', client_id: 'cli_unknown' })).status).toBeLessThan(429);
    }
    for (let index = 0; index < 5; index += 1) expect((await service.call('/oauth/authorize')).status).toBe(400);
    const refused = await postForm(service, '/oauth/token', { grant_type: 'authorization_code' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringContaining('Retry-After') });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it("bounds an organization's scenario runs in flight, and only its own", async () => {
    const tenant = await service.newTenant();
    const other = await service.newTenant();
    const run = (key: string) =>
      service.call('/v1/sandbox/scenarios/lab_order_to_result/run', { key, method: 'POST', body: { pace: { mode: 'manual' } } });
    const first = await run(tenant.key);
    expect(first.status).toBe(202);
    // The run's workflow records it as running; from then on it counts.
    await waitUntil(
      async () => ((await service.call(`/v1/sandbox/scenarios/runs/${first.body.id}`, { key: tenant.key })).status === 200 ? true : undefined),
      {
        what: 'the run recorded',
      },
    );
    const refused = await run(tenant.key);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'too_many_in_flight', detail: expect.stringContaining('1 scenario runs running') });
    expect(refused.headers.get('retry-after')).toBe('10');
    expect((await run(other.key)).status).toBe(202);
    const cancelled = await service.call(`/v1/sandbox/scenarios/runs/${first.body.id}/cancel`, { key: tenant.key, method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect((await run(tenant.key)).status).toBe(202);
  });

  it('refills a budget over the minute, and keeps each address apart', () => {
    let now = 0;
    const budget = createCostBudget(60, () => now);
    expect(budget.spend('a', 50)).toEqual({ allowed: true });
    expect(budget.spend('a', 20)).toEqual({ allowed: false, retryAfterSeconds: 10 });
    expect(budget.spend('b', 60)).toEqual({ allowed: true });
    now += 10_000;
    expect(budget.spend('a', 20)).toEqual({ allowed: true });
    expect(budget.exhausted('b')).toEqual({ exhausted: false });
  });
});

describe('the failed-authentication budget', () => {
  // A service of its own, so the other budgets this file spends leave these requests alone.
  let alone: TestService;
  beforeAll(async () => {
    alone = await startTestService({ FAILED_AUTH_PER_MINUTE: '5' });
  });
  afterAll(() => alone.stop());

  it('limits an address’s failed authentications, never its valid credentials: past the budget a bad credential is 429, a valid one is served', async () => {
    const tenant = await alone.newTenant();
    const { accessToken } = await systemToken(alone, 'system/Patient.rs', tenant.key);
    const badKey = (attempt: number) => alone.call('/v1/connections', { key: `sk_sandbox_${'x'.repeat(40)}${attempt}` });
    let refused: Awaited<ReturnType<typeof badKey>> | undefined;
    for (let attempt = 0; attempt < 10 && !refused; attempt += 1) {
      const answer = await badKey(attempt);
      if (answer.status === 429) refused = answer;
      else expect(answer.status).toBe(401);
    }
    expect(refused?.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('failed authentications') });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
    // Still past the budget: bad credentials stay refused on every surface…
    expect((await badKey(99)).status).toBe(429);
    expect((await alone.call('/fhir/R4/Patient/syn-pat-0001', { headers: bearer(`${accessToken}x`) })).status).toBe(429);
    // …and valid ones are served.
    expect((await alone.call('/v1/connections', { key: tenant.key })).status).toBe(200);
    expect((await alone.call('/fhir/R4/Patient/syn-pat-0001', { headers: bearer(accessToken) })).status).toBe(200);
  });
});
