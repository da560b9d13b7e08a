import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt } from 'jose';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CallResult, startTestService, type TestService } from '../support/service';
import { bearer, standaloneTokens } from '../support/smart';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { waitUntil } from '../support/wait';

/**
 * Revocation within a second, always (issue 23): the API reaches Postgres through a proxy that this
 * test cuts and restores, as a database restart does to every connection, the LISTEN one included.
 * A key and a token the API has cached, revoked once the database is back, are refused within a
 * second; the test revokes through its own direct connection.
 */
/** How long the database is away: the scenario, not a wait for something to happen. */
const RESTART_MS = 2_000;
let service: TestService;
let database: TcpProxy;
let direct: postgres.Sql;
let patientId: string;
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

/** Polls `request` until it answers 401 and says how long that took from `since`. */
async function refusedWithin(what: string, since: number, request: () => Promise<CallResult>): Promise<number> {
  let last: number | undefined;
  await waitUntil(
    async () => {
      last = (await request()).status;
      return last === 401 ? true : undefined;
    },
    { what, timeoutMs: 1_000, intervalMs: 20, lastSeen: () => last },
  );
  const elapsed = Date.now() - since;
  console.log(`revocation after a database restart: ${what} in ${elapsed} ms`);
  return elapsed;
}

describe('revocation after a database restart', () => {
  it('refuses a cached API key and a cached access token revoked after the restart within a second', async () => {
    const tenant = await service.newTenant();
    const { tokens } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs');
    const listConnections = () => service.call('/v1/connections', { key: tenant.key });
    const readPatient = () => service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(tokens.access_token) });
    // Answered twice each: both credentials are now cached by this API process.
    for (let round = 0; round < 2; round += 1) {
      expect((await listConnections()).status).toBe(200);
      expect((await readPatient()).status).toBe(200);
    }

    await database.cut();
    try {
      expect((await listConnections()).status).toBe(503);
      // As long as a restart takes: longer than any one attempt to listen again.
      await sleep(RESTART_MS);
    } finally {
      await database.restore();
    }
    // The database is back: the first request that reaches it proves it.
    await waitUntil(async () => ((await listConnections()).status === 200 ? true : undefined), { what: 'the API reaching the database again' });

    const revokedAt = Date.now();
    await direct`update api_keys set revoked_at = now() where id = ${tenant.keyId}`;
    await direct`update smart_tokens set revoked_at = now() where id = ${decodeJwt(tokens.access_token).jti!}`;
    expect(await refusedWithin('the revoked API key refused', revokedAt, listConnections)).toBeLessThan(1_000);
    expect(await refusedWithin('the revoked access token refused', revokedAt, readPatient)).toBeLessThan(1_000);
  });
});
