import { setTimeout as sleep } from 'node:timers/promises';
import { eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { smartAuthorizations, smartTokens } from '../../drizzle/schema';
import { canEvaluate } from '../../fhir/search-parameters';
import { smartUrls } from '../../smart/endpoints';
import { createTokenService } from '../../smart/tokens';
import { type CallResult, startTestService, type TestService } from '../support/service';
import { bearer, postForm, standaloneTokens } from '../support/smart';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { waitUntil } from '../support/wait';

/**
 * Each API process caches valid access tokens (smart/tokens.ts). These check, in one process, that a
 * token it has cached stops working as soon as it should; test/http/across-processes.test.ts checks
 * the same across two processes.
 */
let service: TestService;
let patientId: string;
const scope = 'launch/patient patient/*.rs offline_access';
// The API reaches Postgres through a proxy the last test cuts; the test itself connects directly.
let database: TcpProxy;
let direct: postgres.Sql;
beforeAll(async () => {
  const databaseUrl = new URL(inject('databaseUrl'));
  database = await startTcpProxy({ host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) });
  const proxied = new URL(databaseUrl);
  proxied.host = database.address;
  service = await startTestService({ DATABASE_URL: proxied.toString() });
  direct = postgres(databaseUrl.toString(), { max: 1, onnotice: () => {} });
  patientId = service.fhirStore.patients()[0]!.id!;
});
afterAll(async () => {
  await database?.restore().catch(() => {});
  await service?.stop();
  await Promise.all([direct?.end(), database?.close()]);
});

const read = (token: string) => service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(token) });

/** A fresh grant whose access token this process has answered (and so cached) twice. */
async function cachedTokens() {
  const issued = await standaloneTokens(service, patientId, scope);
  expect((await read(issued.tokens.access_token)).status).toBe(200);
  expect((await read(issued.tokens.access_token)).status).toBe(200);
  return issued;
}

function expectRefused(response: CallResult, code: 'login' | 'expired') {
  expect(response.status).toBe(401);
  expect(response.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code }] });
  expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
}

describe('a cached access token', () => {
  it('stops working at once when revoked (RFC 7009)', async () => {
    const { tokens, client } = await cachedTokens();
    expect((await postForm(service, '/oauth/revoke', { token: tokens.access_token, client_id: client.client_id })).status).toBe(200);
    expectRefused(await read(tokens.access_token), 'login');
  });

  it('stops working at once when its refresh token is revoked', async () => {
    const { tokens, client } = await cachedTokens();
    expect((await postForm(service, '/oauth/revoke', { token: tokens.refresh_token!, client_id: client.client_id })).status).toBe(200);
    expectRefused(await read(tokens.access_token), 'login');
  });

  it('stops working at once when a refresh replaces it', async () => {
    const { tokens, client } = await cachedTokens();
    const refreshed = await postForm(service, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.client_id,
    });
    expect(refreshed.status).toBe(200);
    expectRefused(await read(tokens.access_token), 'login');
    expect((await read(refreshed.body.access_token)).status).toBe(200);
  });

  it('stops working within a second when its row or its authorization is revoked or deleted by SQL', async () => {
    // No API call here: only the triggers' NOTIFY can tell the process.
    const changes = [
      (jti: string) => service.database.db.update(smartTokens).set({ revokedAt: new Date() }).where(eq(smartTokens.id, jti)),
      (jti: string) => service.database.db.delete(smartTokens).where(eq(smartTokens.id, jti)),
      async (jti: string) => {
        const [row] = await service.database.db.select().from(smartTokens).where(eq(smartTokens.id, jti));
        await service.database.db.update(smartAuthorizations).set({ revokedAt: new Date() }).where(eq(smartAuthorizations.id, row!.authorizationId));
      },
    ];
    for (const change of changes) {
      const { tokens } = await cachedTokens();
      await change(decodeJwt(tokens.access_token).jti!);
      const refused = await waitUntil(
        async () => {
          const response = await read(tokens.access_token);
          return response.status === 200 ? undefined : response;
        },
        { what: 'the changed token being refused', timeoutMs: 1_000, intervalMs: 20 },
      );
      expectRefused(refused, 'login');
    }
  });

  it('stops working at its exp, not when the cache would forget it', async () => {
    const { tokens } = await cachedTokens();
    // Signed so long ago that it has two or three seconds left.
    const short = await signedAt(tokens.access_token, new Date(Date.now() - service.config.SMART_ACCESS_TOKEN_SECONDS * 1000 + 3_000));
    expect((await read(short.token)).status).toBe(200);
    expect((await read(short.token)).status).toBe(200);
    await sleep(short.expiresAt.getTime() - Date.now() + 5);
    expectRefused(await read(short.token), 'expired');
  });

  it('is refused when it had expired before its first use', async () => {
    const { tokens } = await cachedTokens();
    const expired = await signedAt(tokens.access_token, new Date(Date.now() - 2 * service.config.SMART_ACCESS_TOKEN_SECONDS * 1000));
    expectRefused(await read(expired.token), 'expired');
    expectRefused(await read(expired.token), 'expired');
  });
});

describe('the cache of access tokens', () => {
  it('answers a cached token without the database, and forgets what it may have missed once it listens again', async () => {
    const { tokens } = await cachedTokens();
    const unseen = (await standaloneTokens(service, patientId, scope)).tokens.access_token;
    await database.cut();
    try {
      expect((await read(tokens.access_token)).status).toBe(200);
      expect((await read(unseen)).status).toBe(503);
      // Revoked while this process cannot hear the NOTIFY.
      await direct`update smart_tokens set revoked_at = now() where id = ${decodeJwt(tokens.access_token).jti!}`;
      expect((await read(tokens.access_token)).status).toBe(200);
    } finally {
      await database.restore();
    }
    // Not the 60 s max age: the cache is emptied as soon as the LISTEN is back.
    let last: CallResult | undefined;
    await waitUntil(
      async () => {
        last = await read(tokens.access_token);
        return last.status === 401 ? true : undefined;
      },
      { what: 'the token revoked during the outage being refused', timeoutMs: 15_000, intervalMs: 100, lastSeen: () => last?.status },
    );
    expect((await read(unseen)).status).toBe(200);
  });
});

/** Another access token of the same grant as `accessToken`, signed as if at `now` (how expiry is exercised). */
async function signedAt(accessToken: string, now: Date) {
  const { db } = service.database;
  const [row] = await db
    .select()
    .from(smartTokens)
    .where(eq(smartTokens.id, decodeJwt(accessToken).jti!));
  const [authorization] = await db.select().from(smartAuthorizations).where(eq(smartAuthorizations.id, row!.authorizationId));
  const tokens = createTokenService({
    db,
    lifetimes: service.config,
    urls: smartUrls(service.config.PUBLIC_BASE_URL),
    listen: service.database.listen,
    canFilter: canEvaluate,
  });
  return tokens.signAccessToken(authorization!, row!.scope, now);
}
