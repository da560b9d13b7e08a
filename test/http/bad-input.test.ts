import { TypeID } from 'typeid-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../api/http/pagination';
import { ID_PREFIXES, isId, newId } from '../../platform/ids';
import { mountedRoutes } from '../support/mounted-routes';
import { type CallResult, startTestService, type TestService } from '../support/service';
import { bearer, standaloneTokens } from '../support/smart';

let service: TestService;
let tenant: { key: string };
let accessToken: string;

beforeAll(async () => {
  service = await startTestService();
  tenant = await service.newTenant();
  const patientId = service.fhirStore.patients()[0]!.id!;
  accessToken = (await standaloneTokens(service, patientId, 'launch/patient patient/*.rs')).tokens.access_token;
});
afterAll(() => service.stop());

/** Every route the app answers. */
const appRoutes = () => mountedRoutes(service.app);

/** `/v1/x/:id/y` with one parameter replaced by `bad`, the others by a harmless value. */
function withParameter(path: string, target: number, bad: string): string {
  let index = -1;
  return path.replace(/:\w+|\{\/?\*\w+\}|\*\w+/g, () => {
    index += 1;
    return index === target ? (path.includes(`{/*`) ? `/${bad}` : bad) : 'x';
  });
}

function parameterCount(path: string): number {
  return path.match(/:\w+|\{\/?\*\w+\}|\*\w+/g)?.length ?? 0;
}

/** Whatever answered, the error has the shape of the surface it is on. */
function expectErrorShape(path: string, response: CallResult, label: string): string {
  const type = response.headers.get('content-type') ?? '';
  if (path.startsWith('/oauth')) {
    expect(type, label).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control'), label).toBe('no-store');
    expect(response.body, label).toEqual({ error: expect.any(String), error_description: expect.any(String) });
    return response.body.error_description;
  }
  if (path.startsWith('/fhir/R4')) {
    expect(type, label).toMatch(/^application\/fhir\+json/);
    expect(response.body, label).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: expect.any(String) }] });
    return response.body.issue[0].diagnostics;
  }
  expect(type, label).toMatch(/^application\/problem\+json/);
  expect(response.body, label).toMatchObject({ status: response.status, code: expect.any(String), detail: expect.any(String) });
  return response.body.detail;
}

describe('every route with a path parameter', () => {
  it('answers malformed percent-encoding and a NUL byte with a 4xx in its error shape, never a 5xx', async () => {
    const routes = appRoutes().filter((route) => parameterCount(route.path) > 0);
    // The walk sees the routes of every kind of router: defineRoute features, FHIR, dashboard-owned paths.
    expect(routes.map((route) => `${route.method} ${route.path}`)).toEqual(
      expect.arrayContaining([
        'get /v1/connections/:connection_id',
        'patch /v1/connections/:connection_id',
        'post /v1/webhooks/deliveries/:id/cancel',
        'post /v1/webhooks/deliveries/:id/replay',
        'get /v1/patients/:id',
        'get /fhir/R4/:type/:id',
      ]),
    );
    const checked: string[] = [];
    for (const route of routes) {
      for (let target = 0; target < parameterCount(route.path); target += 1) {
        for (const bad of ['%ZZ', '%E0%A4%A', '%', '%00', 'conn_%00']) {
          const path = withParameter(route.path, target, bad);
          const label = `${route.method.toUpperCase()} ${path}`;
          const response = await service.call(path, {
            method: route.method.toUpperCase(),
            headers: path.startsWith('/fhir') ? bearer(accessToken) : { authorization: `Bearer ${tenant.key}` },
            ...(['post', 'patch', 'put'].includes(route.method) && !path.startsWith('/oauth') ? { body: {} } : {}),
          });
          expect(response.status, label).toBeGreaterThanOrEqual(400);
          const detail = expectErrorShape(path, response, label);
          // The dashboard's paths answer 501 to every request that reaches them, by design (CONVENTIONS.md, HTTP).
          if (response.body.code !== 'owned_by_dashboard') expect(response.status, label).toBeLessThan(500);
          if (!bad.includes('%00')) {
            expect(response.status, label).toBe(400);
            expect(detail, label).toContain('percent-encoding');
          }
          checked.push(label);
        }
      }
    }
    expect(checked.length).toBeGreaterThan(50);
  });
});

describe('ids are checked by their format before any query', () => {
  it('answers a malformed or NUL id in a path with 404, never a database error', async () => {
    for (const [method, path] of [
      ['GET', '/v1/connections/%00'],
      ['PATCH', '/v1/connections/%00'],
      ['GET', '/v1/connections/conn_nope'],
      ['GET', '/v1/webhooks/deliveries/%00'],
      ['POST', '/v1/webhooks/deliveries/%00/cancel'],
      ['POST', '/v1/webhooks/deliveries/%00/replay'],
      ['GET', `/v1/webhooks/deliveries/${newId('conn')}`],
      ['GET', '/v1/patients/%00'],
    ] as const) {
      const response = await service.call(path, { key: tenant.key, method, ...(method === 'PATCH' ? { body: { name: 'x' } } : {}) });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.code, `${method} ${path}`).toBe('not_found');
    }
    // A well-formed id that names nothing is the same 404.
    const unknown = await service.call(`/v1/connections/${newId('conn')}`, { key: tenant.key });
    expect(unknown.status).toBe(404);
  });

  it('answers a malformed id in a body or query string with 404 naming the field', async () => {
    const inBody = await service.call('/v1/webhooks/trigger-mock-event', { key: tenant.key, method: 'POST', body: { connection_id: 'conn_\u0000' } });
    expect(inBody.status).toBe(404);
    expect(inBody.body).toMatchObject({ code: 'not_found', errors: [{ path: 'body.connection_id', message: expect.stringContaining('conn_') }] });

    const inQuery = await service.call('/v1/webhooks/deliveries?connection_id=%00', { key: tenant.key });
    expect(inQuery.status).toBe(404);
    expect(inQuery.body.errors).toEqual([{ path: 'query.connection_id', message: expect.stringContaining('conn_') }]);

    const triggerQuery = await service.call('/v1/webhooks/trigger-mock-event?connection_id=dlv_01jd8x3m0ae8v9q2w1f4k7t5zr', {
      key: tenant.key,
      method: 'POST',
    });
    expect(triggerQuery.status).toBe(404);

    const launch = await service.call('/v1/smart/launch', { key: tenant.key, method: 'POST', body: { client_id: 'cli_\u0000', patient: 'x' } });
    expect(launch.status).toBe(404);
    expect(launch.body.errors).toEqual([{ path: 'body.client_id', message: expect.any(String) }]);
  });

  it('answers a NUL in any other body or query field with 422, and a cursor that carries one with 400', async () => {
    const named = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'EHR\u0000 feed' } });
    expect(named.status).toBe(422);
    expect(named.body.errors).toEqual([{ path: 'body.name', message: expect.stringContaining('NUL') }]);

    const filtered = await service.call('/v1/webhooks/deliveries?event=adt%00', { key: tenant.key });
    expect(filtered.status).toBe(422);
    expect(filtered.body.errors).toEqual([{ path: 'query.event', message: expect.stringContaining('NUL') }]);

    for (const path of ['/v1/connections', '/v1/webhooks/deliveries', '/v1/patients']) {
      const paged = await service.call(`${path}?cursor=${encodeCursor('conn_\u0000')}`, { key: tenant.key });
      expect(paged.status, path).toBe(400);
      expect(paged.body.code, path).toBe('invalid_cursor');
    }
  });

  it('refuses NUL in OAuth parameters as invalid_request, and unknown-format client ids as unknown clients', async () => {
    const token = await service.call('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&client_id=cli_%00&code=x',
    });
    expect(token.status).toBe(400);
    expect(token.body).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('NUL') });

    const picker = await fetch(`${service.baseUrl}/oauth/authorize/patient?request=%00`, { redirect: 'manual' });
    expect(picker.status).toBe(400);

    const unknownClient = await service.call('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&client_id=cli_nope&code=x',
    });
    expect(unknownClient.status).toBe(401);
    expect(unknownClient.body.error).toBe('invalid_client');
  });

  it('agrees with the TypeID library about which strings are ids', () => {
    for (const prefix of ID_PREFIXES) {
      for (let i = 0; i < 200; i += 1) expect(isId(prefix, newId(prefix))).toBe(true);
      const valid = newId(prefix);
      const suffix = valid.slice(prefix.length + 1);
      const variants = [
        valid.toUpperCase(),
        `${prefix}_${suffix.slice(1)}`,
        `${prefix}_8${suffix.slice(1)}`,
        `${prefix}_${suffix.slice(0, -1)}u`,
        `${prefix}_${suffix.slice(0, -1)}\u0000`,
        `x${valid}`,
        `${valid}\n`,
        suffix,
      ];
      for (const variant of variants) {
        let parses: boolean;
        try {
          parses = TypeID.fromString(variant, prefix).toString() === variant;
        } catch {
          parses = false;
        }
        expect(isId(prefix, variant), JSON.stringify(variant)).toBe(parses);
        expect(parses, JSON.stringify(variant)).toBe(false);
      }
    }
  });
});

const OAUTH_CLIENT_ENDPOINTS = ['/oauth/token', '/oauth/introspect', '/oauth/revoke'];
const OVERSIZED_JSON = JSON.stringify({ grant_type: 'x'.repeat(1024 * 1024 + 10) });
const OVERSIZED_FORM = `grant_type=${'x'.repeat(70 * 1024)}`;

describe('errors on /oauth/* have the RFC 6749 shape, whichever layer raises them', () => {
  const cases: [string, string, string][] = [
    ['malformed JSON', 'application/json', '{"grant_type":'],
    ['JSON instead of a form', 'application/json', '{"grant_type":"authorization_code"}'],
    ['plain text', 'text/plain', 'grant_type=authorization_code'],
    ['an oversized JSON body', 'application/json', OVERSIZED_JSON],
    ['an oversized form', 'application/x-www-form-urlencoded', OVERSIZED_FORM],
    ['a form in an unsupported charset', 'application/x-www-form-urlencoded; charset=koi8-r', 'grant_type=x'],
  ];
  for (const path of OAUTH_CLIENT_ENDPOINTS) {
    it(`${path}: ${cases.map(([what]) => what).join(', ')}`, async () => {
      for (const [what, contentType, body] of cases) {
        const response = await service.call(path, { method: 'POST', headers: { 'content-type': contentType, origin: 'https://app.example' }, body });
        const label = `${path} with ${what}`;
        expect(response.status, label).toBeGreaterThanOrEqual(400);
        expect(response.status, label).toBeLessThan(500);
        expect(response.headers.get('content-type'), label).toMatch(/^application\/json/);
        expect(response.headers.get('cache-control'), label).toBe('no-store');
        expect(response.headers.get('access-control-allow-origin'), label).toBe('*');
        expect(response.body, label).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      }
    });
  }

  it('answers an unknown /oauth path and a malformed one in the same shape', async () => {
    for (const path of ['/oauth/nothing-here', '/oauth/%ZZ']) {
      const response = await service.call(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(response.status, path).toBeLessThan(500);
      expect(response.headers.get('cache-control'), path).toBe('no-store');
      expect(response.body, path).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    }
  });
});

describe('errors on /fhir/R4/* are OperationOutcomes, whichever layer raises them', () => {
  it('answers malformed JSON, a wrong content type and oversized bodies on a FHIR search', async () => {
    const cases: [string, string, string, number][] = [
      ['malformed JSON', 'application/json', '{"name":', 400],
      ['JSON instead of a form', 'application/json', '{"name":"x"}', 415],
      ['plain text', 'text/plain', 'name=x', 415],
      ['an oversized JSON body', 'application/json', OVERSIZED_JSON, 413],
      ['an oversized form', 'application/x-www-form-urlencoded', OVERSIZED_FORM, 413],
    ];
    for (const [what, contentType, body, status] of cases) {
      for (const headers of [bearer(accessToken), {}]) {
        const response = await service.call('/fhir/R4/Patient/_search', {
          method: 'POST',
          headers: { ...headers, 'content-type': contentType },
          body,
        });
        const label = `FHIR search with ${what}${headers.authorization ? '' : ', no token'}`;
        expect(response.status, label).toBe(status);
        expect(response.headers.get('content-type'), label).toMatch(/^application\/fhir\+json/);
        expect(response.body, label).toMatchObject({
          resourceType: 'OperationOutcome',
          issue: [{ severity: 'error', diagnostics: expect.any(String) }],
        });
      }
    }
  });

  it('answers malformed paths and JSON sent to reads as OperationOutcomes', async () => {
    for (const path of ['/fhir/R4/Patient/%ZZ', '/fhir/R4/%ZZ', '/fhir/R4/Patient/%00', '/fhir/R4/metadata/%']) {
      const response = await service.call(path, { headers: bearer(accessToken) });
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(response.status, path).toBeLessThan(500);
      expect(response.body.resourceType, path).toBe('OperationOutcome');
    }
    const posted = await service.call('/fhir/R4/Patient', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(posted.status).toBe(400);
    expect(posted.body.resourceType).toBe('OperationOutcome');
  });
});

describe('the API keeps a 4xx that any layer raised', () => {
  it('answers an unsupported body charset with 415 and an unknown route with malformed encoding with 400', async () => {
    const charset = await service.call('/v1/connections', {
      key: tenant.key,
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=koi8-r' },
      body: '{"name":"x"}',
    });
    expect(charset.status).toBe(415);
    expect(charset.body.code).toBe('unsupported_encoding');
    const malformed = await service.call('/v1/connections/%ZZ/anything', { key: tenant.key });
    expect(malformed.status).toBeLessThan(500);
  });
});

/** A JSON body nested 5,000 levels deep: about 10 KB, well under the size limit. */
const DEEP_JSON = `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`;
const DEEP_ARRAY = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
const HUGE_FORM = Array.from({ length: 5_000 }, (_, index) => `f${index}=${'x'.repeat(200)}`).join('&');
const DEEP_FORM = `a${'[b]'.repeat(2_000)}=1`;

describe('every route with every body', () => {
  it('answers deep JSON, text, no content type and huge or deep forms with a 4xx or its success, never a 5xx', { timeout: 300_000 }, async () => {
    const bodies: [string, string | undefined, string][] = [
      ['deep JSON', 'application/json', DEEP_JSON],
      ['a deep JSON array', 'application/json', DEEP_ARRAY],
      ['deep FHIR JSON', 'application/fhir+json', DEEP_JSON],
      ['plain text', 'text/plain', 'hello'],
      ['no content type', undefined, 'hello'],
      ['a huge form', 'application/x-www-form-urlencoded', HUGE_FORM],
      ['a deep form', 'application/x-www-form-urlencoded', DEEP_FORM],
      ['HL7 text', 'x-application/hl7-v2+er7', 'MSH|^~\\&|'],
    ];
    const routes = appRoutes();
    expect(routes.map((route) => `${route.method} ${route.path}`)).toEqual(
      expect.arrayContaining([
        'post /oauth/token',
        'post /oauth/authorize/patient',
        'post /v1/webhooks/trigger-mock-event',
        'post /fhir/R4/:type/_search',
      ]),
    );
    const serverErrors: string[] = [];
    for (const route of routes) {
      const path = route.path.replace(/:type/g, 'Patient').replace(/:\w+|\{\/?\*\w+\}|\*\w+/g, 'x');
      for (const [what, contentType, body] of bodies) {
        for (const idempotencyKey of [undefined, 'bad-input-walk']) {
          const headers: Record<string, string> = {
            ...(path.startsWith('/fhir') ? bearer(accessToken) : { authorization: `Bearer ${tenant.key}` }),
            ...(idempotencyKey ? { 'idempotency-key': `${idempotencyKey}-${serverErrors.length}-${Math.random()}` } : {}),
          };
          if (contentType) headers['content-type'] = contentType;
          // fetch sends no body with GET; a GET with one is the same request as far as the parsers go.
          const method = route.method === 'get' ? 'POST' : route.method.toUpperCase();
          const response = await fetch(`${service.baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
          const text = await response.text();
          const dashboardOwned = response.status === 501 && text.includes('owned_by_dashboard');
          if (response.status >= 500 && !dashboardOwned)
            serverErrors.push(`${route.method.toUpperCase()} ${path} with ${what}: ${response.status} ${text.slice(0, 200)}`);
        }
      }
    }
    expect(serverErrors).toEqual([]);
  });

  it('says what was wrong with a deep JSON body, in the shape of each surface', async () => {
    const api = await service.call('/v1/webhooks/trigger-mock-event', {
      key: tenant.key,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'deep-json' },
      body: DEEP_JSON,
    });
    expect(api.status).toBe(400);
    expect(api.body).toMatchObject({ code: 'body_too_deep', detail: expect.stringContaining('64 levels') });
    const oauth = await service.call('/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: DEEP_JSON });
    expect(oauth.status).toBe(400);
    expect(oauth.body).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('64 levels') });
    // Depth, not size: a body as deep as any request needs is read.
    const shallow = await service.call('/v1/connections', {
      key: tenant.key,
      method: 'POST',
      body: { name: 'Shallow feed (synthetic)', extra: { a: { b: { c: [1] } } } },
    });
    expect(shallow.status).toBeLessThan(500);
    expect(shallow.body.code).not.toBe('body_too_deep');
  });
});
