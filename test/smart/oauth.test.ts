import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKeys, smartAuthorizations } from '../../drizzle/schema';
import { digest } from '../../smart/opaque-token';
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
  standaloneTokens,
  userTokens,
} from '../support/smart';

let service: TestService;
let patientId: string;
let fhirBase: string;
beforeAll(async () => {
  service = await startTestService();
  fhirBase = `${service.baseUrl}/fhir/R4`;
  patientId = service.fhirStore.patients().find((patient) => service.fhirStore.listForPatient('Observation', patient.id!).length > 0)!.id!;
});
afterAll(() => service.stop());

const exchange = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(service, '/oauth/token', { grant_type: 'authorization_code', ...form }, headers);

function expectOAuthError(response: { status: number; headers: Headers; body: any }, status: number, error: string) {
  expect(response.status).toBe(status);
  expect(response.body).toEqual({ error, error_description: expect.any(String) });
  expect(response.headers.get('cache-control')).toBe('no-store');
}

/** A public client, a fresh PKCE pair and a code for `patientId`, not yet exchanged. */
async function freshCode(extra: Record<string, string> = {}) {
  const tenant = await service.newTenant();
  const client = await registerSmartClient(service, tenant.key);
  const pkce = pkcePair();
  const { code } = await authorizeWithPicker(service, authorizationParams(service, client, pkce.challenge, extra), patientId);
  return { client, code, ...pkce, redirectUri: client.redirect_uris[0]!, key: tenant.key };
}

describe('SMART discovery', () => {
  it('publishes every SMART 2.x field with absolute URLs, S256 only, and true capabilities, with CORS', async () => {
    for (const path of ['/.well-known/smart-configuration', '/fhir/R4/.well-known/smart-configuration']) {
      const response = await service.call(path, { headers: { origin: 'https://app.example' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.body).toMatchObject({
        issuer: service.baseUrl,
        jwks_uri: `${service.baseUrl}/.well-known/jwks.json`,
        authorization_endpoint: `${service.baseUrl}/oauth/authorize`,
        token_endpoint: `${service.baseUrl}/oauth/token`,
        introspection_endpoint: `${service.baseUrl}/oauth/introspect`,
        revocation_endpoint: `${service.baseUrl}/oauth/revoke`,
        grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
        code_challenge_methods_supported: ['S256'],
        response_types_supported: ['code'],
      });
      expect(response.body.capabilities).toEqual(
        expect.arrayContaining([
          'launch-ehr',
          'launch-standalone',
          'client-public',
          'client-confidential-symmetric',
          'context-ehr-patient',
          'context-standalone-patient',
          'permission-patient',
          'permission-v1',
          'permission-v2',
          'permission-offline',
          'sso-openid-connect',
        ]),
      );
      expect(response.body.capabilities).toContain('permission-user');
      expect(response.body.scopes_supported).toEqual(expect.arrayContaining(['user/*.rs', 'user/Claim.c', 'user/Subscription.crds']));
    }
    const openid = await service.call('/.well-known/openid-configuration');
    expect(openid.body).toMatchObject({
      issuer: service.baseUrl,
      jwks_uri: `${service.baseUrl}/.well-known/jwks.json`,
      id_token_signing_alg_values_supported: ['RS256'],
    });
  });

  it('answers CORS preflights for the token endpoint and the FHIR reads', async () => {
    for (const path of ['/oauth/token', '/fhir/R4/Patient/x']) {
      const preflight = await fetch(`${service.baseUrl}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': path.startsWith('/oauth') ? 'POST' : 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
      expect(preflight.status, path).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
      expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/i);
    }
  });
});

describe('client registration and EHR launch', () => {
  it('registers a confidential client with its secret shown once, and a replay without it', async () => {
    const tenant = await service.newTenant();
    const body = {
      client_name: 'Chart app',
      redirect_uris: ['https://app.example/callback'],
      scope: 'launch patient/*.rs openid fhirUser',
      launch_uri: 'https://app.example/launch',
    };
    const headers = { 'idempotency-key': `register-${tenant.organizationId}` };
    const created = await service.call('/v1/smart/clients', { key: tenant.key, method: 'POST', body, headers });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      client_id: expect.stringMatching(/^cli_/),
      client_secret: expect.stringMatching(/^sbx_cs_/),
      client_secret_expires_at: 0,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code', 'refresh_token'],
      ...body,
    });
    const replay = await service.call('/v1/smart/clients', { key: tenant.key, method: 'POST', body, headers });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.client_id).toBe(created.body.client_id);
    expect(replay.body).not.toHaveProperty('client_secret');
    const stored = await service.database.db.execute(
      `select count(*)::int as count from idempotency_keys where response_body like '%${created.body.client_secret}%'`,
    );
    expect(stored).toMatchObject([{ count: 0 }]);
  });

  it('refuses bad registrations field by field', async () => {
    const tenant = await service.newTenant();
    const response = await service.call('/v1/smart/clients', {
      key: tenant.key,
      method: 'POST',
      body: {
        client_name: '',
        redirect_uris: ['not a url', 'https://app.example/cb#frag'],
        token_endpoint_auth_method: 'client_secret_post',
        scope: 'patient/*.rs everything',
      },
    });
    expect(response.status).toBe(422);
    expect(response.body.errors.map((error: { path: string }) => error.path)).toEqual(
      expect.arrayContaining(['body.client_name', 'body.redirect_uris.0', 'body.redirect_uris.1', 'body.token_endpoint_auth_method', 'body.scope']),
    );
  });

  it("launches only the organization's own clients, for patients and encounters that exist", async () => {
    const owner = await service.newTenant();
    const stranger = await service.newTenant();
    const client = await registerSmartClient(service, owner.key);
    const launch = (key: string, body: unknown) => service.call('/v1/smart/launch', { key, method: 'POST', body });

    expect((await launch(stranger.key, { client_id: client.client_id, patient: patientId })).status).toBe(404);
    const unknownPatient = await launch(owner.key, { client_id: client.client_id, patient: 'no-such-patient' });
    expect(unknownPatient.status).toBe(422);
    expect(unknownPatient.body.errors).toEqual([{ path: 'body.patient', message: expect.stringContaining('no-such-patient') }]);
    expect((await launch(owner.key, { client_id: client.client_id, patient: patientId, encounter: 'no-such-encounter' })).status).toBe(422);

    const created = await launch(owner.key, { client_id: client.client_id, patient: patientId });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ launch: expect.any(String), iss: fhirBase, launch_url: null });
    expect(Date.parse(created.body.expires_at)).toBeGreaterThan(Date.now());
  });

  it('keeps a launch handle out of the idempotency store: a replay refuses clearly instead of answering a handle it no longer has', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key, { launch_uri: 'https://app.example/launch' });
    const request = {
      key: tenant.key,
      method: 'POST',
      body: { client_id: client.client_id, patient: patientId },
      headers: { 'idempotency-key': `launch-${randomUUID()}` },
    } as const;
    const created = await service.call('/v1/smart/launch', request);
    expect(created.status).toBe(201);
    const replay = await service.call('/v1/smart/launch', request);
    expect(replay.status).toBe(409);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toMatchObject({ code: 'launch_handle_shown_once', detail: expect.stringContaining(created.body.expires_at) });
    const stored = await service.database.db.select({ body: idempotencyKeys.responseBody }).from(idempotencyKeys);
    const everything = stored.map((row) => row.body ?? '').join('\n');
    expect(everything).not.toContain(created.body.launch);
    expect(everything).not.toContain(encodeURIComponent(created.body.launch));
  });

  it('spends a launch handle once, and only for its own client', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key);
    const other = await registerSmartClient(service, tenant.key);
    const { launch } = (
      await service.call('/v1/smart/launch', { key: tenant.key, method: 'POST', body: { client_id: client.client_id, patient: patientId } })
    ).body;
    const ehr = (target: typeof client) =>
      requestAuthorization(service, authorizationParams(service, target, pkcePair().challenge, { launch, scope: 'launch patient/*.rs' }));

    const wrongClient = await ehr(other);
    expect(wrongClient.location?.searchParams.get('error')).toBe('invalid_request');
    const first = await ehr(client);
    expect(first.location?.searchParams.get('code')).toEqual(expect.any(String));
    const again = await ehr(client);
    expect(again.location?.searchParams.get('error')).toBe('invalid_request');
    expect(again.location?.searchParams.get('code')).toBeNull();
  });

  it('carries an encounter from the launch into the token response and launch/encounter', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key);
    const encounter = service.fhirStore.listForPatient('Encounter', patientId)[0]!;
    const launched = await service.call('/v1/smart/launch', {
      key: tenant.key,
      method: 'POST',
      body: { client_id: client.client_id, patient: patientId, encounter: encounter.id },
    });
    const pkce = pkcePair();
    const params = authorizationParams(service, client, pkce.challenge, {
      launch: launched.body.launch,
      scope: 'launch launch/patient launch/encounter patient/Encounter.rs',
    });
    const authorized = await requestAuthorization(service, params);
    const code = authorized.location!.searchParams.get('code')!;
    const tokens = await exchange({ code, code_verifier: pkce.verifier, redirect_uri: params.redirect_uri!, client_id: client.client_id });
    expect(tokens.body).toMatchObject({
      patient: patientId,
      encounter: encounter.id,
      need_patient_banner: false,
      scope: 'launch launch/patient launch/encounter patient/Encounter.rs',
    });
    expect((await service.call(`/fhir/R4/Encounter/${encounter.id}`, { headers: bearer(tokens.body.access_token) })).status).toBe(200);
  });
});

describe('the authorization endpoint', () => {
  it('shows an error page, never a redirect, for an unknown client or an unregistered redirect_uri', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key, { redirect_uris: ['https://app.example/callback'] });
    const params = authorizationParams(service, client, pkcePair().challenge);
    const cases: Record<string, string>[] = [
      { redirect_uri: 'https://attacker.example/callback' },
      { redirect_uri: 'https://app.example/callback/' },
      { redirect_uri: 'https://app.example/callback?extra=1' },
      { client_id: 'cli_unknown' },
    ];
    for (const bad of cases) {
      const response = await requestAuthorization(service, { ...params, ...bad });
      expect(response.status, JSON.stringify(bad)).toBe(400);
      expect(response.location).toBeNull();
      expect(response.body).toContain('<h1>');
      expect(response.body).not.toContain('attacker.example/callback"');
    }
  });

  it('redirects RFC 6749 errors with the state for a wrong aud, missing or plain PKCE, or a wrong response_type', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key);
    const { challenge } = pkcePair();
    const cases: [Record<string, string>, string][] = [
      [{ aud: 'https://other-ehr.example/fhir' }, 'invalid_request'],
      [{ aud: `${service.baseUrl}/fhir/R5` }, 'invalid_request'],
      [{ code_challenge: '' }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: '' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ scope: 'user/*.write' }, 'invalid_scope'],
    ];
    for (const [override, error] of cases) {
      const params = authorizationParams(service, client, challenge, override);
      const response = await requestAuthorization(service, Object.fromEntries(Object.entries(params).filter(([, value]) => value !== '')));
      expect(response.status, JSON.stringify(override)).toBe(302);
      expect(`${response.location!.origin}${response.location!.pathname}`).toBe(client.redirect_uris[0]);
      expect(response.location!.searchParams.get('error'), JSON.stringify(override)).toBe(error);
      expect(response.location!.searchParams.get('state')).toBe(params.state);
      expect(response.location!.searchParams.get('code')).toBeNull();
    }
  });

  it('accepts the same request by POST, and a person can decline at the picker', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key);
    const params = authorizationParams(service, client, pkcePair().challenge);
    const posted = await fetch(`${service.baseUrl}/oauth/authorize`, { method: 'POST', body: new URLSearchParams(params), redirect: 'manual' });
    expect(posted.status).toBe(303);
    const picker = new URL(posted.headers.get('location')!, service.baseUrl);
    const declined = await fetch(`${service.baseUrl}/oauth/authorize/patient`, {
      method: 'POST',
      body: new URLSearchParams({ request: picker.searchParams.get('request')!, deny: '1' }),
      redirect: 'manual',
    });
    const location = new URL(declined.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe(params.state);
  });

  it('grants only what it serves, in the syntax asked for, and says so in scope', async () => {
    const { tokens } = await standaloneTokens(
      service,
      patientId,
      'launch launch/patient launch/encounter patient/Observation.cruds patient/Patient.read patient/*.write user/*.read openid fhirUser profile',
    );
    expect(tokens.scope).toBe('launch/patient patient/Observation.rs patient/Patient.read openid fhirUser');
  });
});

describe('user-level grants (a provider-side app acting as its user)', () => {
  it('grants user/ scopes the registration names, as a synthetic Practitioner, reading every patient as a system token does', async () => {
    const { tokens, key } = await userTokens(service, 'openid fhirUser user/*.rs user/Claim.write patient/*.rs offline_access', {
      registered: 'openid fhirUser offline_access patient/*.rs user/*.rs user/Claim.c',
    });
    // Standalone, yet no patient picker: the user is a practitioner; one grant has one context, so the patient-level scope is left out.
    expect(tokens.scope).toBe('openid fhirUser user/*.rs user/Claim.c offline_access');
    expect(tokens.patient).toBeUndefined();
    const fhirUser = String(decodeJwt(tokens.id_token!).fhirUser);
    expect(fhirUser).toMatch(new RegExp(`^${fhirBase}/Practitioner/[^/]+$`));
    expect(decodeJwt(tokens.access_token).fhirUser).toBe(fhirUser);
    expect((await service.call(fhirUser.slice(service.baseUrl.length), { headers: bearer(tokens.access_token) })).status).toBe(200);

    for (const patient of service.fhirStore.patients().slice(0, 2)) {
      expect((await service.call(`/fhir/R4/Patient/${patient.id}`, { headers: bearer(tokens.access_token) })).status).toBe(200);
      const observations = await service.call(`/fhir/R4/Observation?patient=${patient.id}`, { headers: bearer(tokens.access_token) });
      expect(observations.status).toBe(200);
      expect(observations.body.total).toBe(service.fhirStore.listForPatient('Observation', patient.id!).length);
    }
    // A user-level token is not a system one: bulk export stays refused.
    const exported = await service.call('/fhir/R4/Patient/$export', { headers: { ...bearer(tokens.access_token), prefer: 'respond-async' } });
    expect(exported.status).toBe(403);

    // A refresh keeps the user-level grant; introspection says whose it is.
    const refreshed = await postForm(service, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: decodeJwt(tokens.access_token).client_id as string,
      scope: 'user/Claim.c',
    });
    expect(refreshed.body.scope).toBe('user/Claim.c');
    const introspected = await postForm(service, '/oauth/introspect', { token: refreshed.body.access_token }, bearer(key));
    expect(introspected.body).toMatchObject({ active: true, scope: 'user/Claim.c', sub: fhirUser.slice(`${fhirBase}/`.length) });
  });

  it("grants no user/ scope beyond what the app's registration names (none when it registered no scope)", async () => {
    const tenant = await service.newTenant();
    for (const registration of [{}, { scope: 'openid patient/*.rs user/Patient.rs' }]) {
      const client = await registerSmartClient(service, tenant.key, registration);
      const params = authorizationParams(service, client, pkcePair().challenge, { scope: 'user/Claim.c user/*.rs' });
      const response = await requestAuthorization(service, params);
      expect(response.location!.searchParams.get('error'), JSON.stringify(registration)).toBe('invalid_scope');
    }
  });
});

describe('the token endpoint (g(10)-style negative checks)', () => {
  it('issues a Bearer JWT, verifiable with the published JWKS, with the launch context and no-store', async () => {
    const { client, code, verifier, redirectUri } = await freshCode();
    const response = await exchange({ code, code_verifier: verifier, redirect_uri: redirectUri, client_id: client.client_id });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    expect(response.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, patient: patientId, need_patient_banner: true });
    const jwks = createRemoteJWKSet(new URL(`${service.baseUrl}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(response.body.access_token, jwks, { issuer: service.baseUrl, audience: fhirBase });
    expect(payload).toMatchObject({ client_id: client.client_id, patient: patientId, scope: response.body.scope });
    const { payload: idToken } = await jwtVerify(response.body.id_token, jwks, { issuer: service.baseUrl, audience: client.client_id });
    expect(idToken.fhirUser).toBe(`${fhirBase}/Patient/${patientId}`);
  });

  it('refuses a missing, a wrong and a plain-equal code_verifier', async () => {
    const missing = await freshCode();
    expectOAuthError(
      await exchange({ code: missing.code, redirect_uri: missing.redirectUri, client_id: missing.client.client_id }),
      400,
      'invalid_request',
    );

    const wrong = await freshCode();
    expectOAuthError(
      await exchange({ code: wrong.code, code_verifier: pkcePair().verifier, redirect_uri: wrong.redirectUri, client_id: wrong.client.client_id }),
      400,
      'invalid_grant',
    );

    const plain = await freshCode();
    expectOAuthError(
      await exchange({ code: plain.code, code_verifier: plain.challenge, redirect_uri: plain.redirectUri, client_id: plain.client.client_id }),
      400,
      'invalid_grant',
    );
  });

  it('refuses a reused code and revokes the tokens the first use issued', async () => {
    const { client, code, verifier, redirectUri } = await freshCode();
    const form = { code, code_verifier: verifier, redirect_uri: redirectUri, client_id: client.client_id };
    const first = await exchange(form);
    expect(first.status).toBe(200);
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(first.body.access_token) })).status).toBe(200);
    expectOAuthError(await exchange(form), 400, 'invalid_grant');
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(first.body.access_token) })).status).toBe(401);
  });

  it('refuses an expired code', async () => {
    const { client, code, verifier, redirectUri } = await freshCode();
    await service.database.db
      .update(smartAuthorizations)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(smartAuthorizations.codeHash, digest(code)));
    expectOAuthError(await exchange({ code, code_verifier: verifier, redirect_uri: redirectUri, client_id: client.client_id }), 400, 'invalid_grant');
  });

  it('refuses a redirect_uri other than the one authorized, and another client', async () => {
    const { client, code, verifier } = await freshCode();
    expectOAuthError(
      await exchange({ code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:9/other', client_id: client.client_id }),
      400,
      'invalid_grant',
    );
    const second = await freshCode();
    const other = await registerSmartClient(service, second.key);
    expectOAuthError(
      await exchange({ code: second.code, code_verifier: second.verifier, redirect_uri: second.redirectUri, client_id: other.client_id }),
      400,
      'invalid_grant',
    );
  });

  it('authenticates confidential clients with Basic only, and refuses a bad secret', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key, { token_endpoint_auth_method: 'client_secret_basic' });
    const pkce = pkcePair();
    const { code } = await authorizeWithPicker(service, authorizationParams(service, client, pkce.challenge), patientId);
    const form = { code, code_verifier: pkce.verifier, redirect_uri: client.redirect_uris[0]! };

    const badSecret = await exchange(form, basicAuth(client.client_id, 'sbx_cs_wrong'));
    expectOAuthError(badSecret, 401, 'invalid_client');
    expect(badSecret.headers.get('www-authenticate')).toMatch(/^Basic /);
    expectOAuthError(await exchange({ ...form, client_id: client.client_id }), 401, 'invalid_client');
    expectOAuthError(await exchange({ ...form, client_id: client.client_id, client_secret: client.client_secret! }), 401, 'invalid_client');
  });

  it('answers RFC 6749 errors for a bad grant_type and a body that is not a form', async () => {
    expectOAuthError(await postForm(service, '/oauth/token', { grant_type: 'password' }), 400, 'unsupported_grant_type');
    expectOAuthError(await postForm(service, '/oauth/token', {}), 400, 'invalid_request');
    const json = await service.call('/oauth/token', { method: 'POST', body: { grant_type: 'authorization_code' } });
    expectOAuthError(json, 400, 'invalid_request');
    expect(json.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('refresh, revocation and introspection', () => {
  it('rotates the refresh token; the refreshed-away access and refresh tokens stop working', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs offline_access');
    const refreshed = await postForm(service, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.client_id,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toMatchObject({ patient: patientId, scope: tokens.scope, refresh_token: expect.any(String) });
    expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);

    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(tokens.access_token) })).status).toBe(401);
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(refreshed.body.access_token) })).status).toBe(200);
    expectOAuthError(
      await postForm(service, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: client.client_id }),
      400,
      'invalid_grant',
    );
  });

  it('refuses a bad refresh token and a scope wider than the grant', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/Patient.rs offline_access');
    expectOAuthError(
      await postForm(service, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'not-a-refresh-token', client_id: client.client_id }),
      400,
      'invalid_grant',
    );
    expectOAuthError(
      await postForm(service, '/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: client.client_id,
        scope: 'patient/*.rs',
      }),
      400,
      'invalid_scope',
    );
  });

  it('narrows the scope at refresh when asked', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs offline_access');
    const narrowed = await postForm(service, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.client_id,
      scope: 'patient/Patient.rs offline_access',
    });
    expect(narrowed.body.scope).toBe('patient/Patient.rs offline_access');
    expect((await service.call(`/fhir/R4/Observation?patient=${patientId}`, { headers: bearer(narrowed.body.access_token) })).status).toBe(403);
  });

  it('revokes an access token, and a refresh token with its whole grant (RFC 7009)', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs offline_access');
    const revoked = await postForm(service, '/oauth/revoke', { token: tokens.access_token, client_id: client.client_id });
    expect(revoked.status).toBe(200);
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(tokens.access_token) })).status).toBe(401);

    const refreshed = await postForm(service, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.client_id,
    });
    expect(refreshed.status).toBe(200);
    expect((await postForm(service, '/oauth/revoke', { token: refreshed.body.refresh_token, client_id: client.client_id })).status).toBe(200);
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(refreshed.body.access_token) })).status).toBe(401);
  });

  it('introspects for the owning organization, and answers active:false alone otherwise', async () => {
    const { tokens, client, key } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs openid fhirUser');
    const active = await postForm(service, '/oauth/introspect', { token: tokens.access_token }, bearer(key));
    expect(active.status).toBe(200);
    expect(active.body).toMatchObject({
      active: true,
      client_id: client.client_id,
      scope: tokens.scope,
      patient: patientId,
      fhirUser: `${fhirBase}/Patient/${patientId}`,
      exp: expect.any(Number),
    });

    const stranger = await service.newTenant();
    expect((await postForm(service, '/oauth/introspect', { token: tokens.access_token }, bearer(stranger.key))).body).toEqual({ active: false });
    expect((await postForm(service, '/oauth/introspect', { token: 'garbage' }, bearer(key))).body).toEqual({ active: false });
    expect((await postForm(service, '/oauth/introspect', { token: tokens.access_token })).status).toBe(401);
  });
});

describe('across API processes and restarts', () => {
  it('exchanges a code at another API process; the token works at every process and after a restart', async () => {
    // Production runs several API processes behind one PUBLIC_BASE_URL; they share only the database.
    const { client, code, verifier, redirectUri } = await freshCode();
    const sibling = await startTestService({ PUBLIC_BASE_URL: service.baseUrl });
    let accessToken: string;
    try {
      const exchanged = await postForm(sibling, '/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: client.client_id,
      });
      expect(exchanged.status).toBe(200);
      accessToken = exchanged.body.access_token;
      expect((await sibling.call('/.well-known/jwks.json')).body).toEqual((await service.call('/.well-known/jwks.json')).body);
    } finally {
      await sibling.stop();
    }
    expect((await service.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(accessToken) })).status).toBe(200);
    const restarted = await startTestService({ PUBLIC_BASE_URL: service.baseUrl });
    try {
      expect((await restarted.call(`/fhir/R4/Patient/${patientId}`, { headers: bearer(accessToken) })).status).toBe(200);
    } finally {
      await restarted.stop();
    }
  });
});
