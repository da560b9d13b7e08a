import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKeys } from '../../drizzle/schema';
import { createLogger, redactUrl } from '../../platform/logger';
import { startTestService, type TestService } from '../support/service';
import {
  authorizationParams,
  authorizeWithPicker,
  basicAuth,
  bearer,
  pkcePair,
  postForm,
  registerSmartClient,
  requestAuthorization,
} from '../support/smart';

/**
 * Secrets, tokens, codes and launch handles never reach a log (BRIEF, Security): a whole flow runs
 * with the API's and the worker's logs captured, and nothing it created is found in them.
 */

const lines: string[] = [];
let service: TestService;
let patientId: string;
/** The marker of this run's failing insert: a trigger in the scratch database refuses connections so named. */
const failingName = `fail-${randomBytes(6).toString('hex')}`;
const trigger = `refuse_${failingName.replace(/-/g, '_')}`;

beforeAll(async () => {
  const logger = createLogger('debug', { pretty: false, destination: { write: (line: string) => lines.push(line) } });
  service = await startTestService({}, { logger });
  patientId = service.fhirStore.patients().find((patient) => service.fhirStore.listForPatient('Observation', patient.id!).length > 0)!.id!;
  const { db } = service.database;
  await db.execute(
    sql.raw(`create function ${trigger}() returns trigger language plpgsql as $$
      begin
        if new.name = '${failingName}' then raise exception 'refused by the test (synthetic failure)'; end if;
        return new;
      end $$`),
  );
  await db.execute(sql.raw(`create trigger ${trigger} before insert on connections for each row execute function ${trigger}()`));
});
afterAll(async () => {
  await service.database.db.execute(sql.raw(`drop trigger if exists ${trigger} on connections; drop function if exists ${trigger}()`));
  await service.stop();
});

describe('logs', () => {
  it('hold none of the secrets, tokens, codes or launch handles a whole flow created', async () => {
    const created: Record<string, string> = {};
    const secret = (value: unknown) => value as string;
    const tenant = await service.newTenant();
    created.apiKey = tenant.key;

    // A connection with its own secret, replayed under its Idempotency-Key, then rotated.
    const headers = { 'idempotency-key': `conn-${randomBytes(8).toString('hex')}` };
    const body = { name: 'Logged (synthetic)', rotate_secret: true };
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body, headers });
    expect(connection.status).toBe(201);
    created.connectionSecret = connection.body.webhook_secret;
    const replay = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body, headers });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toMatchObject({ id: connection.body.id, webhook_secret: `sbx_whsec_…${secret(created.connectionSecret).slice(-4)}` });
    const stored = await service.database.db.select({ body: idempotencyKeys.responseBody }).from(idempotencyKeys);
    expect(stored.map((row) => row.body ?? '').join('\n')).not.toContain(secret(created.connectionSecret));

    const rotated = await service.call(`/v1/connections/${connection.body.id}`, { key: tenant.key, method: 'PATCH', body: { rotate_secret: true } });
    expect(rotated.status).toBe(200);
    created.rotatedSecret = rotated.body.webhook_secret;
    const settings = await service.call('/v1/settings/webhook', { key: tenant.key, method: 'PATCH', body: { rotate_secret: true } });
    expect(settings.status).toBe(200);
    created.organizationSecret = settings.body.webhook_secret;

    // An EHR launch of a confidential client: launch handle, code, PKCE verifier, tokens, a refresh.
    const client = await registerSmartClient(service, tenant.key, { token_endpoint_auth_method: 'client_secret_basic' });
    created.clientSecret = client.client_secret!;
    const launch = await service.call('/v1/smart/launch', {
      key: tenant.key,
      method: 'POST',
      body: { client_id: client.client_id, patient: patientId },
    });
    created.launchHandle = launch.body.launch;
    const pkce = pkcePair();
    created.verifier = pkce.verifier;
    const params = authorizationParams(service, client, pkce.challenge, {
      launch: launch.body.launch,
      scope: 'launch patient/*.rs offline_access openid fhirUser',
    });
    created.state = secret(params.state);
    const authorized = await requestAuthorization(service, params);
    created.ehrCode = authorized.location!.searchParams.get('code')!;
    const tokens = await postForm(
      service,
      '/oauth/token',
      { grant_type: 'authorization_code', code: created.ehrCode, redirect_uri: secret(client.redirect_uris[0]), code_verifier: pkce.verifier },
      basicAuth(client.client_id, client.client_secret!),
    );
    expect(tokens.status).toBe(200);
    created.accessToken = tokens.body.access_token;
    created.idToken = tokens.body.id_token;
    created.refreshToken = tokens.body.refresh_token;
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(tokens.body.access_token) })).status).toBe(200);
    // A bad token is logged as a 401, never by its value.
    expect((await service.call('/fhir/R4/Patient', { headers: bearer(`${tokens.body.access_token}x`) })).status).toBe(401);
    const refreshed = await postForm(
      service,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token },
      basicAuth(client.client_id, client.client_secret!),
    );
    created.refreshedAccess = refreshed.body.access_token;
    created.refreshedRefresh = refreshed.body.refresh_token;

    // A standalone launch through the picker: its request id travels in the picker's URL.
    const publicClient = await registerSmartClient(service, tenant.key);
    const picker = await requestAuthorization(service, authorizationParams(service, publicClient, pkcePair().challenge));
    created.pickerRequest = picker.location!.searchParams.get('request')!;
    const { code } = await authorizeWithPicker(service, authorizationParams(service, publicClient, pkcePair().challenge), patientId);
    created.pickerCode = code;

    // A database query that fails while writing a generated secret: a 500, logged.
    const failed = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: failingName, rotate_secret: true } });
    expect(failed.status).toBe(500);

    const log = lines.join('');
    // The logs were captured: the requests are there, and so is the database error.
    expect(log).toContain('/oauth/authorize/patient?request=redacted');
    expect(log).toContain('refused by the test (synthetic failure)');
    for (const [name, value] of Object.entries(created)) {
      expect(value, name).toEqual(expect.any(String));
      expect(log.includes(value), `${name} found in the logs`).toBe(false);
    }
    // The generated secret of the failed insert was never shown to anyone: no secret-shaped value may appear.
    expect(log).not.toMatch(/sbx_whsec_[A-Za-z0-9_-]{8}/);
    expect(log).not.toMatch(/params: (?!\[redacted\])/);
  });

  it('keeps the path and harmless parameters of a URL, and replaces the values of sensitive ones', () => {
    expect(redactUrl('/oauth/authorize?client_id=cli_1&launch=abc&state=s&code=c&scope=patient%2F*.rs')).toBe(
      '/oauth/authorize?client_id=cli_1&launch=redacted&state=redacted&code=redacted&scope=patient%2F*.rs',
    );
    expect(redactUrl('/v1/connections?limit=5')).toBe('/v1/connections?limit=5');
  });
});
