import { eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { smartTokens } from '../../drizzle/schema';
import { revokeApiKey } from '../../platform/organizations';
import { type RunningProcess, runEntryPoint } from '../support/processes';
import { type CallResult, call, startTestService, type TestService } from '../support/service';
import { bearer, postForm, standaloneTokens } from '../support/smart';
import { waitUntil } from '../support/wait';

/**
 * Two API processes on one database, as production runs them: this test's own API, and
 * `npm run start:api` as a child process. Each caches API keys and SMART access tokens and each
 * counts requests, so these prove the state that must be shared is: revocation and the rate limit.
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
    // One public address for both, as behind a load balancer: the tokens' issuer and audience.
    PUBLIC_BASE_URL: first.baseUrl,
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

describe('two API processes with SMART access tokens', () => {
  const scope = 'launch/patient patient/*.rs offline_access';
  let patientId: string;
  beforeAll(() => {
    patientId = first.fhirStore.patients()[0]!.id!;
  });
  const read = (baseUrl: string, token: string) => call(baseUrl, `/fhir/R4/Patient/${patientId}`, { headers: bearer(token) });

  /** Both processes have seen (and cached) the token. */
  async function readOnBoth(token: string): Promise<void> {
    expect((await read(secondUrl, token)).status).toBe(200);
    expect((await read(secondUrl, token)).status).toBe(200);
    expect((await read(first.baseUrl, token)).status).toBe(200);
  }

  /** The second process answers 401 for `token` within a second of `revoke` returning. */
  async function refusedBySecondWithinASecond(token: string, revoke: () => Promise<unknown>): Promise<void> {
    await revoke();
    const revokedAt = performance.now();
    let last: CallResult | undefined;
    await waitUntil(
      async () => {
        last = await read(secondUrl, token);
        return last.status === 401 ? true : undefined;
      },
      { what: 'the second process refusing the revoked access token', timeoutMs: 1_000, intervalMs: 20, lastSeen: () => last?.status },
    );
    expect(performance.now() - revokedAt).toBeLessThan(1_000);
    expect(last!.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'login' }] });
    expect((await read(first.baseUrl, token)).status).toBe(401);
  }

  it('refuse an access token revoked at the other process (RFC 7009) within a second', async () => {
    const { tokens, client } = await standaloneTokens(first, patientId, scope);
    await readOnBoth(tokens.access_token);
    await refusedBySecondWithinASecond(tokens.access_token, async () => {
      expect((await postForm(first, '/oauth/revoke', { token: tokens.access_token, client_id: client.client_id })).status).toBe(200);
    });
  });

  it('refuse the access tokens of a grant whose refresh token was revoked within a second', async () => {
    const { tokens, client } = await standaloneTokens(first, patientId, scope);
    await readOnBoth(tokens.access_token);
    await refusedBySecondWithinASecond(tokens.access_token, async () => {
      expect((await postForm(first, '/oauth/revoke', { token: tokens.refresh_token!, client_id: client.client_id })).status).toBe(200);
    });
  });

  it('refuse the access token a refresh replaced within a second, and accept the new one', async () => {
    const { tokens, client } = await standaloneTokens(first, patientId, scope);
    await readOnBoth(tokens.access_token);
    let refreshed: CallResult | undefined;
    await refusedBySecondWithinASecond(tokens.access_token, async () => {
      refreshed = await postForm(first, '/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: client.client_id,
      });
      expect(refreshed.status).toBe(200);
    });
    await readOnBoth(refreshed!.body.access_token);
  });

  it('refuse an access token whose row was deleted (retention, SQL by hand) within a second', async () => {
    const { tokens } = await standaloneTokens(first, patientId, scope);
    await readOnBoth(tokens.access_token);
    await refusedBySecondWithinASecond(tokens.access_token, () =>
      first.database.db.delete(smartTokens).where(eq(smartTokens.id, decodeJwt(tokens.access_token).jti!)),
    );
  });
});
