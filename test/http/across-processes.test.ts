import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { revokeApiKey } from '../../platform/organizations';
import { type RunningProcess, runEntryPoint } from '../support/processes';
import { type CallResult, call, startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * Two API processes on one database, as production runs them: this test's own API, and
 * `npm run start:api` as a child process. Each caches API keys and each counts requests, so these
 * prove the state that must be shared is: revocation and the rate limit.
 */
const LIMIT = 4;
let first: TestService;
let second: RunningProcess;
let secondUrl: string;

beforeAll(async () => {
  first = await startTestService({ RATE_LIMIT_PER_MINUTE: String(LIMIT) });
  second = runEntryPoint('bin/start-api.ts', [], {
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    RATE_LIMIT_PER_MINUTE: String(LIMIT),
    PORT: '0',
    HOST: '127.0.0.1',
    HL7_MLLP_PORT: 'off',
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
  });
  const [, port] = await second.waitFor(/listening on 127\.0\.0\.1:(\d+)/);
  secondUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

/** Rate-limit windows are whole minutes of the database clock: start a test early in one so it does not straddle two. */
async function earlyInAMinute(): Promise<void> {
  await waitUntil(() => (new Date().getSeconds() < 45 ? true : undefined), { what: 'the start of a minute', timeoutMs: 20_000, intervalMs: 200 });
}

describe('two API processes', () => {
  it('refuse a revoked key on the other process within a second', async () => {
    const tenant = await first.newTenant();
    // Both processes have seen (and cached) the key before it is revoked.
    expect((await call(secondUrl, '/v1/connections', { key: tenant.key })).status).toBe(200);
    expect((await call(secondUrl, '/v1/connections', { key: tenant.key })).status).toBe(200);
    expect((await first.call('/v1/connections', { key: tenant.key })).status).toBe(200);

    expect(await revokeApiKey(first.database.db, tenant.keyId)).toBe(true);
    const revokedAt = performance.now();
    let last: CallResult | undefined;
    await waitUntil(
      async () => {
        last = await call(secondUrl, '/v1/connections', { key: tenant.key });
        return last.status === 401 ? true : undefined;
      },
      { what: 'the second process refusing the revoked key', timeoutMs: 1_000, intervalMs: 20, lastSeen: () => last?.status },
    );
    expect(performance.now() - revokedAt).toBeLessThan(1_000);
    expect(last!.body.code).toBe('revoked_api_key');
    expect((await first.call('/v1/connections', { key: tenant.key })).body.code).toBe('revoked_api_key');
  });

  it('share one rate limit per key: the budget is spent across both, then both answer 429 with Retry-After', async () => {
    const tenant = await first.newTenant();
    await earlyInAMinute();
    for (let i = 0; i < LIMIT / 2; i += 1) {
      expect((await first.call('/v1/connections', { key: tenant.key })).status).toBe(200);
      expect((await call(secondUrl, '/v1/connections', { key: tenant.key })).status).toBe(200);
    }
    for (const refused of [await call(secondUrl, '/v1/connections', { key: tenant.key }), await first.call('/v1/connections', { key: tenant.key })]) {
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ code: 'rate_limited', status: 429 });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    const other = await first.newTenant();
    expect((await call(secondUrl, '/v1/connections', { key: other.key })).status).toBe(200);
  });
});
