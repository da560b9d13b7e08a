import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSERTION_CLOCK_SKEW_SECONDS } from '../../smart/client-assertion';
import { type ClientKey, clientCredentials, newClientKey, registerBackendClient, signAssertion, systemToken } from '../support/backend-services';
import { startTestService, type TestService } from '../support/service';
import { basicAuth, bearer, postForm, registerSmartClient } from '../support/smart';

let service: TestService;
let patientIds: string[];
beforeAll(async () => {
  service = await startTestService();
  patientIds = service.fhirStore
    .patients()
    .filter((patient) => service.fhirStore.listForPatient('Observation', patient.id!).length > 0)
    .slice(0, 2)
    .map((patient) => patient.id!);
});
afterAll(() => service.stop());

function expectOAuthError(response: { status: number; headers: Headers; body: any }, status: number, error: string, description?: RegExp) {
  expect(response.body).toEqual({ error, error_description: description ? expect.stringMatching(description) : expect.any(String) });
  expect(response.status).toBe(status);
  expect(response.headers.get('cache-control')).toBe('no-store');
}

/** A backend services client of a new tenant with one key, registered inline. */
async function inlineClient(alg: ClientKey['alg'] = 'ES384', metadata: Record<string, unknown> = {}) {
  const tenant = await service.newTenant();
  const key = await newClientKey(alg);
  const client = await registerBackendClient(service, tenant.key, { jwks: { keys: [key.publicJwk] }, ...metadata });
  return { clientId: client.client_id, key, tenant, client };
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('SMART Backend Services: client_credentials with a private_key_jwt assertion', () => {
  it('registers a client with public keys and gives it a system token that reads any patient of the world', async () => {
    const { clientId, key, client } = await inlineClient('ES384');
    expect(client).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      jwks: { keys: [key.publicJwk] },
    });
    expect(client).not.toHaveProperty('client_secret');

    const response = await clientCredentials(service, await signAssertion(service, clientId, key), 'system/Patient.read system/Observation.rs');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: service.config.SMART_ACCESS_TOKEN_SECONDS,
      scope: 'system/Patient.read system/Observation.rs',
    });
    const token = bearer(response.body.access_token);

    const [first, second] = patientIds as [string, string];
    for (const id of [first, second]) {
      const read = await service.call(`/fhir/R4/Patient/${id}`, { headers: token });
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ resourceType: 'Patient', id });
    }
    const observations = await service.call(`/fhir/R4/Observation?patient=${second}&_count=500`, { headers: token });
    expect(observations.status).toBe(200);
    expect(observations.body.total).toBe(service.fhirStore.listForPatient('Observation', second).length);
    expect(observations.body.entry.every((entry: any) => entry.resource.subject.reference === `Patient/${second}`)).toBe(true);
    const everyPatient = await service.call('/fhir/R4/Patient?_summary=count', { headers: token });
    expect(everyPatient.body.total).toBe(service.fhirStore.patients().length);
    const totalOf = async (query: string) => (await service.call(`/fhir/R4/${query}`, { headers: token })).body.total;
    const observationsOf = (id: string) => service.fhirStore.listForPatient('Observation', id).length;
    expect(await totalOf(`Observation?patient=${first},Patient/${second}&_summary=count`)).toBe(observationsOf(first) + observationsOf(second));
    expect(await totalOf(`Observation?patient=${first}&subject=Patient/${second}&_summary=count`)).toBe(0);
    expect(await totalOf(`Patient?_id=${first},${second}&_summary=count`)).toBe(2);

    const outOfScope = await service.call(`/fhir/R4/Condition?patient=${first}`, { headers: token });
    expect(outOfScope.status).toBe(403);
    expect(outOfScope.body.issue[0].diagnostics).toContain('system/Condition.s');
    // $match takes the same system scope (api/fhir/patient-match.ts).
    const match = await service.call('/fhir/R4/Patient/$match', {
      method: 'POST',
      headers: { ...token, 'content-type': 'application/fhir+json' },
      body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: service.fhirStore.read('Patient', first) }] },
    });
    expect(match.status).toBe(200);
  });

  it('accepts RS384 (and the v2 scope syntax, writes left out) and binds the token to the client’s organization', async () => {
    const { clientId, key, tenant } = await inlineClient('RS384');
    const response = await clientCredentials(service, await signAssertion(service, clientId, key), 'system/*.cruds');
    expect(response.status).toBe(200);
    expect(response.body.scope).toBe('system/*.rs');

    const other = await service.newTenant();
    const seenBy = async (apiKey: string) =>
      (await postForm(service, '/oauth/introspect', { token: response.body.access_token }, { authorization: `Bearer ${apiKey}` })).body;
    expect(await seenBy(tenant.key)).toMatchObject({ active: true, client_id: clientId, sub: clientId, scope: 'system/*.rs' });
    expect(await seenBy(other.key)).toEqual({ active: false });
  });

  it('lets the client revoke its token, authenticating with a new assertion (RFC 7009)', async () => {
    const { clientId, key } = await inlineClient('ES256');
    const issued = await clientCredentials(service, await signAssertion(service, clientId, key), 'system/Patient.rs');
    const token = bearer(issued.body.access_token);
    expect((await service.call(`/fhir/R4/Patient/${patientIds[0]}`, { headers: token })).status).toBe(200);
    const revoked = await postForm(service, '/oauth/revoke', {
      token: issued.body.access_token,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await signAssertion(service, clientId, key),
    });
    expect(revoked.status).toBe(200);
    expect((await service.call(`/fhir/R4/Patient/${patientIds[0]}`, { headers: token })).status).toBe(401);
  });

  it('holds the set from the client’s jwks_uri, fetches it again for a rotated key, and cannot be made to fetch it at will', async () => {
    let served = await newClientKey('ES384');
    let fetches = 0;
    const keyServer: Server = createServer((_req, res) => {
      fetches += 1;
      res.setHeader('content-type', 'application/jwk-set+json');
      res.end(JSON.stringify({ keys: [served.publicJwk] }));
    });
    await new Promise<void>((resolve) => keyServer.listen(0, '127.0.0.1', resolve));
    try {
      const tenant = await service.newTenant();
      const jwksUri = `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}/.well-known/jwks.json`;
      const client = await registerBackendClient(service, tenant.key, { jwks_uri: jwksUri });
      expect(client).toMatchObject({ jwks_uri: jwksUri });
      expect(fetches).toBe(0);

      const tokenWith = async (key: ClientKey) =>
        clientCredentials(service, await signAssertion(service, client.client_id, key), 'system/Patient.rs');
      expect((await tokenWith(served)).status).toBe(200);
      expect(fetches).toBe(1);
      expect((await tokenWith(served)).status).toBe(200);
      expect(fetches).toBe(1);

      const retired = served;
      served = await newClientKey('RS384');
      expect((await tokenWith(served)).status).toBe(200);
      expect(fetches).toBe(2);
      expectOAuthError(await tokenWith(retired), 401, 'invalid_client', /no key with kid/);
      expect(fetches).toBe(3);

      // A stranger naming the client with kids it does not have: one fetch for the lot, not one each.
      const strangers = await Promise.all(
        Array.from({ length: 10 }, async (_, index) =>
          clientCredentials(
            service,
            await signAssertion(service, client.client_id, served, { header: { kid: `no-such-key-${index}` } }),
            'system/Patient.rs',
          ),
        ),
      );
      for (const answer of strangers) expectOAuthError(answer, 401, 'invalid_client', /no key with kid/);
      expect(fetches).toBe(4);
    } finally {
      await new Promise((resolve) => keyServer.close(resolve));
    }
  });

  it('refuses a jwks_uri that answers no usable JWK Set, too much, too late or elsewhere', async () => {
    const key = await newClientKey();
    const keyServer: Server = createServer((req, res) => {
      if (req.url === '/private') {
        res.end(JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-384', kid: 'k', x: 'AA', y: 'AA', d: 'AA' }] }));
      } else if (req.url === '/huge') {
        // A valid set padded past the limit, sent in pieces without a Content-Length.
        res.write(`{ "keys": [${JSON.stringify(key.publicJwk)}], "padding": "`);
        for (let piece = 0; piece < 100; piece += 1) res.write('x'.repeat(1024));
        res.end('" }');
      } else if (req.url === '/redirect') {
        res.writeHead(302, { location: '/private' }).end();
      } else if (req.url === '/silent') {
        // Never answers: the fetch gives up on its own deadline.
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => keyServer.listen(0, '127.0.0.1', resolve));
    try {
      const tenant = await service.newTenant();
      const origin = `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}`;
      for (const [path, why] of [
        ['/missing', /answered 404/],
        ['/private', /private key material/],
        ['/huge', /more than 65536 bytes/],
        ['/redirect', /answered 302/],
        ['/silent', /did not answer within 5000 ms/],
      ] as const) {
        const client = await registerBackendClient(service, tenant.key, { jwks_uri: `${origin}${path}` });
        expectOAuthError(
          await clientCredentials(service, await signAssertion(service, client.client_id, key), 'system/Patient.rs'),
          401,
          'invalid_client',
          why,
        );
      }
    } finally {
      keyServer.closeAllConnections();
      await new Promise((resolve) => keyServer.close(resolve));
    }
  });

  describe('accepts assertions signed as common clients sign them, with their clocks off', () => {
    /** Claims as a client whose clock is `offsetSeconds` off ours signs them, its seconds taken with `toSeconds`. */
    const signedAt = (offsetSeconds: number, toSeconds: (seconds: number) => number) => {
      const clientNow = toSeconds(Date.now() / 1000 + offsetSeconds);
      return { iat: clientNow, nbf: clientNow, exp: clientNow + 300 };
    };
    const ways = [
      ['exp = round(now) + 300 (the SMART maximum)', signedAt(0, Math.round)],
      ['exp = ceil(now) + 300', signedAt(0, Math.ceil)],
      ['a clock 2 s fast, exp = ceil(now) + 300', signedAt(2, Math.ceil)],
      ['a clock 30 s fast (iat, nbf and exp 30 s ahead)', signedAt(30, Math.floor)],
      ['a clock 30 s slow', signedAt(-30, Math.floor)],
    ] as const;
    it.each(ways)('%s', async (_way, claims) => {
      const { clientId, key } = await inlineClient('ES384');
      const response = await clientCredentials(service, await signAssertion(service, clientId, key, { claims }), 'system/Patient.rs');
      expect(response.status, JSON.stringify(response.body)).toBe(200);
    });
  });

  describe('refuses an assertion that does not authenticate the client (invalid_client, 401)', () => {
    let clientId: string;
    let key: ClientKey;
    beforeAll(async () => {
      ({ clientId, key } = await inlineClient('RS384'));
    });
    const attempt = async (assertion: string) => clientCredentials(service, assertion, 'system/Patient.rs');

    it('with another aud than the token endpoint', async () => {
      const assertion = await signAssertion(service, clientId, key, { claims: { aud: `${service.baseUrl}/fhir/R4` } });
      expectOAuthError(await attempt(assertion), 401, 'invalid_client', /aud must be the token endpoint/);
    });

    it('expired, or expiring more than five minutes ahead, beyond the clock skew allowed', async () => {
      const skew = ASSERTION_CLOCK_SKEW_SECONDS;
      expectOAuthError(await attempt(await signAssertion(service, clientId, key, { expiresInSeconds: -skew - 5 })), 401, 'invalid_client', /expired/);
      expectOAuthError(await attempt(await signAssertion(service, clientId, key, { expiresInSeconds: 600 })), 401, 'invalid_client', /300 seconds/);
      const beyond = await signAssertion(service, clientId, key, { expiresInSeconds: 300 + skew + 5 });
      expectOAuthError(await attempt(beyond), 401, 'invalid_client', /exp is more than 300 seconds ahead/);
      const issuedAhead = Math.floor(Date.now() / 1000) + skew + 30;
      expectOAuthError(
        await attempt(await signAssertion(service, clientId, key, { claims: { iat: issuedAhead, exp: issuedAhead + 60 } })),
        401,
        'invalid_client',
        /iat is more than 60 seconds in the future/,
      );
      expectOAuthError(
        await attempt(await signAssertion(service, clientId, key, { claims: { nbf: issuedAhead, exp: issuedAhead + 60 } })),
        401,
        'invalid_client',
        /nbf/,
      );
    });

    it('an assertion accepted within the skew allowance after its exp cannot be replayed meanwhile', async () => {
      const assertion = await signAssertion(service, clientId, key, { expiresInSeconds: -30 });
      expect((await attempt(assertion)).status).toBe(200);
      expectOAuthError(await attempt(assertion), 401, 'invalid_client', /used already/);
    });

    it('used a second time (its jti is spent), while a fresh jti works', async () => {
      const assertion = await signAssertion(service, clientId, key);
      expect((await attempt(assertion)).status).toBe(200);
      expectOAuthError(await attempt(assertion), 401, 'invalid_client', /used already/);
      const sameJti = await signAssertion(service, clientId, key, { claims: { jti: 'fixed-jti' } });
      expect((await attempt(sameJti)).status).toBe(200);
      expectOAuthError(
        await attempt(await signAssertion(service, clientId, key, { claims: { jti: 'fixed-jti' } })),
        401,
        'invalid_client',
        /used already/,
      );
      expect((await attempt(await signAssertion(service, clientId, key))).status).toBe(200);
    });

    it('naming a kid the client never registered, or none', async () => {
      expectOAuthError(
        await attempt(await signAssertion(service, clientId, key, { header: { kid: 'unknown-key' } })),
        401,
        'invalid_client',
        /no key with kid/,
      );
      const withoutKid = await new SignJWT({ jti: 'no-kid' })
        .setProtectedHeader({ alg: 'RS384' })
        .setIssuer(clientId)
        .setSubject(clientId)
        .setAudience(`${service.baseUrl}/oauth/token`)
        .setExpirationTime('2m')
        .sign(key.privateKey);
      expectOAuthError(await attempt(withoutKid), 401, 'invalid_client', /kid/);
    });

    it('signed by another key under the registered kid', async () => {
      const impostor = await newClientKey('RS384');
      const assertion = await signAssertion(service, clientId, { ...impostor, kid: key.kid });
      expectOAuthError(await attempt(assertion), 401, 'invalid_client', /signature does not verify/);
    });

    it('unsigned (alg none)', async () => {
      const now = Math.floor(Date.now() / 1000);
      const unsigned = `${base64url({ alg: 'none', kid: key.kid })}.${base64url({ iss: clientId, sub: clientId, aud: `${service.baseUrl}/oauth/token`, exp: now + 120, jti: 'none-alg' })}.`;
      expectOAuthError(await attempt(unsigned), 401, 'invalid_client', /signed with none/);
    });

    it('signed HS256 with the registered public key as the HMAC secret', async () => {
      const publicKeyPem = await exportSPKI((await generateKeyPair('RS384', { extractable: true })).publicKey);
      for (const secret of [publicKeyPem, JSON.stringify(key.publicJwk)]) {
        const forged = await new SignJWT({ jti: `hs-${secret.length}` })
          .setProtectedHeader({ alg: 'HS256', kid: key.kid })
          .setIssuer(clientId)
          .setSubject(clientId)
          .setAudience(`${service.baseUrl}/oauth/token`)
          .setExpirationTime('2m')
          .sign(new TextEncoder().encode(secret));
        expectOAuthError(await attempt(forged), 401, 'invalid_client', /signed with HS256/);
      }
    });

    it('from a client registered without private_key_jwt, and any assertion for an unknown client', async () => {
      const tenant = await service.newTenant();
      const app = await registerSmartClient(service, tenant.key, { token_endpoint_auth_method: 'client_secret_basic' });
      expectOAuthError(await attempt(await signAssertion(service, app.client_id, key)), 401, 'invalid_client', /not private_key_jwt/);
      expectOAuthError(await attempt(await signAssertion(service, 'cli_01jd8x3m0ae8v9q2w1f4k7t5zr', key)), 401, 'invalid_client', /No client/);
      expectOAuthError(await attempt('not-a-jwt'), 401, 'invalid_client', /not a signed JWT/);
    });
  });

  it('answers RFC 6749 errors for the grant itself: unauthorized_client, invalid_scope, unsupported_grant_type', async () => {
    const tenant = await service.newTenant();
    const app = await registerSmartClient(service, tenant.key, { token_endpoint_auth_method: 'client_secret_basic' });
    const withSecret = await postForm(
      service,
      '/oauth/token',
      { grant_type: 'client_credentials', scope: 'system/Patient.rs' },
      basicAuth(app.client_id, app.client_secret!),
    );
    expectOAuthError(withSecret, 400, 'unauthorized_client', /private_key_jwt/);

    const { clientId, key } = await inlineClient('ES384', { scope: 'system/Patient.rs system/Observation.rs' });
    const ask = async (scope: string) => clientCredentials(service, await signAssertion(service, clientId, key), scope);
    expectOAuthError(
      await ask('system/Patient.rs patient/Observation.rs'),
      400,
      'invalid_scope',
      /patient\/Observation\.rs cannot be granted: client_credentials grants system-level/,
    );
    expectOAuthError(await ask('launch/patient'), 400, 'invalid_scope', /system-level/);
    expectOAuthError(await ask('system/Condition.rs'), 400, 'invalid_scope', /outside the scope registered/);
    // No scope: the one registered (RFC 6749 §3.3's default); with none registered, refused.
    expect((await ask('')).body.scope).toBe('system/Patient.rs system/Observation.rs');
    const unscoped = await inlineClient('ES384');
    expectOAuthError(
      await clientCredentials(service, await signAssertion(service, unscoped.clientId, unscoped.key), ''),
      400,
      'invalid_scope',
      /scope is required/,
    );
    expect((await ask('system/Observation.read')).body.scope).toBe('system/Observation.read');

    expectOAuthError(await postForm(service, '/oauth/token', { grant_type: 'password' }), 400, 'unsupported_grant_type');
    // A backend services client has no code to exchange.
    const codeGrant = await postForm(service, '/oauth/token', {
      grant_type: 'authorization_code',
      code: 'x',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await signAssertion(service, clientId, key),
    });
    expectOAuthError(codeGrant, 400, 'unauthorized_client');
  });

  it('refuses at registration a JWK Set with private key material, symmetric keys, or keys without kid', async () => {
    const tenant = await service.newTenant();
    const pair = await generateKeyPair('ES384', { extractable: true });
    const { exportJWK } = await import('jose');
    const privateJwk = { ...(await exportJWK(pair.privateKey)), kid: 'leaked' };
    const register = (jwks: unknown, extra: Record<string, unknown> = {}) =>
      service.call('/v1/smart/clients', {
        key: tenant.key,
        method: 'POST',
        body: { client_name: 'Backend', token_endpoint_auth_method: 'private_key_jwt', grant_types: ['client_credentials'], jwks, ...extra },
      });
    const leaked = await register({ keys: [privateJwk] });
    expect(leaked.status).toBe(422);
    expect(leaked.body.errors).toEqual([{ path: 'body.jwks.keys.0', message: expect.stringContaining('private key material (d)') }]);
    expect(JSON.stringify(leaked.body)).not.toContain(privateJwk.d);

    const symmetric = await register({ keys: [{ kty: 'oct', kid: 'k', k: 'c2VjcmV0' }] });
    expect(symmetric.status).toBe(422);
    const { kid: _kid, ...withoutKid } = (await newClientKey()).publicJwk;
    expect((await register({ keys: [withoutKid] })).status).toBe(422);
    expect((await register({ keys: [] })).status).toBe(422);
    const both = await register({ keys: [(await newClientKey()).publicJwk] }, { jwks_uri: 'http://127.0.0.1:9/jwks.json' });
    expect(both.status).toBe(422);
    const patientScope = await register({ keys: [(await newClientKey()).publicJwk] }, { scope: 'patient/*.rs' });
    expect(patientScope.body.errors).toEqual([{ path: 'body.scope', message: expect.stringContaining('not a system scope') }]);
    const codeClient = await register(undefined, { token_endpoint_auth_method: 'client_secret_basic', redirect_uris: ['https://app.example/cb'] });
    expect(codeClient.body.errors).toEqual([{ path: 'body.grant_types', message: expect.stringContaining('private_key_jwt') }]);
  });

  it('a system token reads only the types its scopes name', async () => {
    const { accessToken } = await systemToken(service, 'system/Observation.rs');
    const patientRead = await service.call(`/fhir/R4/Patient/${patientIds[0]}`, { headers: bearer(accessToken) });
    expect(patientRead.status).toBe(403);
    expect(patientRead.body.issue[0].diagnostics).toContain('system/Patient.r');
  });
});

describe('across API processes, and with private targets refused', () => {
  // A second API process behind the same PUBLIC_BASE_URL (so the same token endpoint, the assertion's aud), sharing only the database, that refuses private addresses as production does.
  let sibling: TestService;
  beforeAll(async () => {
    sibling = await startTestService({ PUBLIC_BASE_URL: service.baseUrl, ALLOW_PRIVATE_TARGETS: 'false' });
  });
  afterAll(() => sibling.stop());

  it('spends a jti for every process: an assertion used at one is refused at another, and of two at once only one wins', async () => {
    const { clientId, key } = await inlineClient('ES384');
    const assertion = await signAssertion(service, clientId, key);
    expect((await clientCredentials(service, assertion, 'system/Patient.rs')).status).toBe(200);
    expectOAuthError(await clientCredentials(sibling, assertion, 'system/Patient.rs'), 401, 'invalid_client', /used already/);

    const raced = await signAssertion(service, clientId, key);
    const answers = await Promise.all([service, sibling, service, sibling].map((process) => clientCredentials(process, raced, 'system/Patient.rs')));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 401, 401, 401]);
  });

  it('refuses a jwks_uri on a private address at registration, and again when fetching it', async () => {
    const tenant = await sibling.newTenant();
    const refused = await sibling.call('/v1/smart/clients', {
      key: tenant.key,
      method: 'POST',
      body: { client_name: 'Backend', token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://127.0.0.1:9/jwks.json' },
    });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'jwks_uri_not_allowed',
      errors: [{ path: 'body.jwks_uri', message: expect.stringContaining('private address') }],
    });

    // Registered where private targets are allowed (a developer's machine), then asserted where they are not.
    const key = await newClientKey();
    const client = await registerBackendClient(service, (await service.newTenant()).key, { jwks_uri: 'http://127.0.0.1:9/jwks.json' });
    const assertion = await signAssertion(service, client.client_id, key);
    expectOAuthError(await clientCredentials(sibling, assertion, 'system/Patient.rs'), 401, 'invalid_client', /private address/);
  });
});

describe('discovery', () => {
  it('lists client_credentials, private_key_jwt and the assertion algorithms, and the CapabilityStatement says so', async () => {
    const configuration = (await service.call('/.well-known/smart-configuration')).body;
    expect(configuration.grant_types_supported).toContain('client_credentials');
    expect(configuration.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(configuration.token_endpoint_auth_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS384', 'ES384']));
    expect(configuration.token_endpoint_auth_signing_alg_values_supported).not.toContain('none');
    expect(configuration.capabilities).toEqual(expect.arrayContaining(['client-confidential-asymmetric', 'permission-v1', 'permission-v2']));
    expect(configuration.scopes_supported).toContain('system/*.rs');
    const metadata = (await service.call('/fhir/R4/metadata')).body;
    expect(metadata.rest[0].security.description).toContain('client_credentials');
  });
});
