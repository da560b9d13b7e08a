import { get } from 'node:http';
import { eq } from 'drizzle-orm';
import type { Bundle, Observation } from 'fhir/r4';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smartAuthorizations, smartTokens } from '../../drizzle/schema';
import { canEvaluate } from '../../fhir/search-parameters';
import { smartUrls } from '../../smart/endpoints';
import { createTokenService } from '../../smart/tokens';
import { fhirErrors } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';
import { bearer, postForm, standaloneTokens } from '../support/smart';

let service: TestService;
let fhirBase: string;
/** A patient with Observations in at least two categories, and another patient with Observations. */
let patientId: string;
let otherPatientId: string;
let observations: Observation[];
let token: string;

const CATEGORY_SYSTEM = 'http://terminology.hl7.org/CodeSystem/observation-category';
const categoriesOf = (observation: Observation) =>
  (observation.category ?? [])
    .flatMap((concept) => concept.coding ?? [])
    .filter((coding) => coding.system === CATEGORY_SYSTEM)
    .map((coding) => coding.code!);

beforeAll(async () => {
  service = await startTestService();
  fhirBase = `${service.baseUrl}/fhir/R4`;
  const store = service.fhirStore;
  const withObservations = store.patients().filter((patient) => store.listForPatient('Observation', patient.id!).length > 0);
  const varied = withObservations.find(
    (patient) => new Set((store.listForPatient('Observation', patient.id!) as Observation[]).flatMap(categoriesOf)).size >= 2,
  );
  if (!varied || withObservations.length < 2) throw new Error('the synthetic world needs two patients with Observations, one in two categories');
  patientId = varied.id!;
  otherPatientId = withObservations.find((patient) => patient.id !== patientId)!.id!;
  observations = store.listForPatient('Observation', patientId) as Observation[];
  token = (await standaloneTokens(service, patientId, 'launch/patient patient/*.rs')).tokens.access_token;
});
afterAll(() => service.stop());

const read = (path: string, headers: Record<string, string> = bearer(token)) => service.call(`/fhir/R4/${path}`, { headers });

/** Every page of a search, following `next` links as a client does. */
async function searchAll(path: string, accessToken = token): Promise<{ first: Bundle; entries: Observation[] }> {
  let response = await read(path, bearer(accessToken));
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  const first = response.body as Bundle;
  const entries: Observation[] = [];
  for (;;) {
    const bundle = response.body as Bundle;
    entries.push(...(bundle.entry ?? []).map((entry) => entry.resource as Observation));
    const next = bundle.link?.find((link) => link.relation === 'next')?.url;
    if (!next) break;
    expect(next.startsWith(`${fhirBase}/Observation?`)).toBe(true);
    response = await service.call(next.slice(service.baseUrl.length), { headers: bearer(accessToken) });
  }
  return { first, entries };
}

function expectOutcome(response: { status: number; headers: Headers; body: any }, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
  expect(response.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code, diagnostics: expect.any(String) }] });
  expect(fhirErrors(response.body)).toEqual([]);
}

describe('/fhir/R4/metadata', () => {
  it('is open, with CORS, and lists the SMART oauth-uris and exactly the types served', async () => {
    const response = await service.call('/fhir/R4/metadata', { headers: { origin: 'https://app.example' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const statement = response.body;
    expect(fhirErrors(statement)).toEqual([]);
    expect(statement).toMatchObject({
      resourceType: 'CapabilityStatement',
      fhirVersion: '4.0.1',
      kind: 'instance',
      format: expect.arrayContaining(['json']),
    });
    const rest = statement.rest[0];
    expect(rest.security.service[0].coding[0]).toMatchObject({
      system: 'http://terminology.hl7.org/CodeSystem/restful-security-service',
      code: 'SMART-on-FHIR',
    });
    const oauthUris = rest.security.extension.find(
      (extension: { url: string }) => extension.url === 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
    );
    expect(oauthUris.extension).toEqual(
      expect.arrayContaining([
        { url: 'authorize', valueUri: `${service.baseUrl}/oauth/authorize` },
        { url: 'token', valueUri: `${service.baseUrl}/oauth/token` },
      ]),
    );
    // The synthetic world's types, and each organization's own Subscriptions.
    expect(rest.resource.map((resource: { type: string }) => resource.type).sort()).toEqual(
      [...service.fhirStore.supportedTypes, 'Subscription'].sort(),
    );
    const observation = rest.resource.find((resource: { type: string }) => resource.type === 'Observation');
    expect(observation.searchParam.map((param: { name: string }) => param.name)).toEqual(
      expect.arrayContaining(['patient', 'category', 'code', 'date', '_count']),
    );
  });
});

describe('reads', () => {
  it("reads the token's patient as application/fhir+json with ETag and Last-Modified, and honours If-None-Match", async () => {
    const response = await read(`Patient/${patientId}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(response.body).toEqual(service.fhirStore.read('Patient', patientId));
    const etag = response.headers.get('etag');
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    const lastUpdated = service.fhirStore.read('Patient', patientId)!.meta!.lastUpdated!;
    expect(response.headers.get('last-modified')).toBe(new Date(lastUpdated).toUTCString());
    // node:http, since fetch adds Cache-Control: no-cache to conditional requests.
    const conditional = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        get(`${fhirBase}/Patient/${patientId}`, { headers: { ...bearer(token), ...headers } }, (reply) => {
          reply.resume();
          resolve(reply.statusCode!);
        }).on('error', reject);
      });
    expect(await conditional({ 'if-none-match': etag! })).toBe(304);
    expect(await conditional({ 'if-none-match': 'W/"another-version"' })).toBe(200);
  });

  it('answers JSON only: _format=json is fine, XML is 406', async () => {
    expect((await read(`Patient/${patientId}?_format=json`)).status).toBe(200);
    expect((await read(`Patient/${patientId}?_format=application/fhir%2Bjson`)).status).toBe(200);
    expectOutcome(await read(`Patient/${patientId}?_format=xml`), 406, 'not-supported');
    expectOutcome(await read(`Patient/${patientId}`, { ...bearer(token), accept: 'application/fhir+xml' }), 406, 'not-supported');
  });

  it('answers OperationOutcome 404s for an unknown id and an unserved type', async () => {
    expectOutcome(await read('Patient/does-not-exist'), 404, 'not-found');
    expectOutcome(await read('Spaceship/1'), 404, 'not-supported');
    expectOutcome(await service.call('/fhir/R4/Patient', { method: 'PUT', headers: bearer(token) }), 405, 'not-supported');
  });
});

describe('Observation search', () => {
  it('answers a searchset Bundle with total, entries of that patient only, and next links through every page', async () => {
    const { first, entries } = await searchAll(`Observation?patient=${patientId}&_count=2`);
    expect(first).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: observations.length });
    expect(fhirErrors(first)).toEqual([]);
    expect(first.link?.find((link) => link.relation === 'self')?.url).toBe(`${fhirBase}/Observation?patient=${patientId}&_count=2`);
    expect(first.entry?.[0]).toMatchObject({ fullUrl: `${fhirBase}/Observation/${first.entry?.[0]?.resource?.id}`, search: { mode: 'match' } });
    expect(entries.map((entry) => entry.id).sort()).toEqual(observations.map((observation) => observation.id).sort());
  });

  it('filters by category, code and date', async () => {
    const category = categoriesOf(observations[0]!)[0]!;
    const inCategory = observations.filter((observation) => categoriesOf(observation).includes(category));
    for (const value of [category, `${CATEGORY_SYSTEM}|${category}`]) {
      const { first, entries } = await searchAll(`Observation?patient=${patientId}&category=${encodeURIComponent(value)}`);
      expect(first.total).toBe(inCategory.length);
      expect(entries.map((entry) => entry.id).sort()).toEqual(inCategory.map((observation) => observation.id).sort());
    }

    const coding = observations[0]!.code.coding![0]!;
    const withCode = observations.filter((observation) =>
      observation.code.coding?.some((candidate) => candidate.system === coding.system && candidate.code === coding.code),
    );
    expect((await searchAll(`Observation?patient=${patientId}&code=${encodeURIComponent(`${coding.system}|${coding.code}`)}`)).first.total).toBe(
      withCode.length,
    );

    const dated = observations
      .filter((observation) => observation.effectiveDateTime)
      .sort((a, b) => Date.parse(a.effectiveDateTime!) - Date.parse(b.effectiveDateTime!));
    const threshold = dated[Math.floor(dated.length / 2)]!.effectiveDateTime!.slice(0, 10);
    const onOrAfter = await searchAll(`Observation?patient=${patientId}&date=ge${threshold}`);
    const before = await searchAll(`Observation?patient=${patientId}&date=lt${threshold}`);
    expect(onOrAfter.entries.length).toBeGreaterThan(0);
    for (const entry of onOrAfter.entries.filter((observation) => observation.effectiveDateTime))
      expect(entry.effectiveDateTime!.slice(0, 10) >= threshold).toBe(true);
    for (const entry of before.entries.filter((observation) => observation.effectiveDateTime))
      expect(entry.effectiveDateTime!.slice(0, 10) < threshold).toBe(true);
    expect(onOrAfter.entries.length + before.entries.length).toBeGreaterThanOrEqual(dated.length);
  });

  it('searches by POST _search, defaults to the token patient, and refuses unknown parameters only when strict', async () => {
    const posted = await service.call('/fhir/R4/Observation/_search', {
      method: 'POST',
      body: new URLSearchParams({ patient: patientId, _count: '1' }).toString(),
      headers: { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(posted.body).toMatchObject({ type: 'searchset', total: observations.length });
    expect((await read('Observation')).body.total).toBe(observations.length);
    const lenient = await read(`Observation?patient=${patientId}&unknown-param=1`);
    expect(lenient.body.link[0].url).not.toContain('unknown-param');
    // Ignored, and said so: an OperationOutcome entry (search mode `outcome`) warns about it, beside the matches.
    expect(lenient.body.total).toBe(observations.length);
    expect(lenient.body.entry.filter((entry: any) => entry.search.mode === 'outcome')).toEqual([
      {
        resource: {
          resourceType: 'OperationOutcome',
          issue: [{ severity: 'warning', code: 'not-supported', diagnostics: expect.stringContaining('unknown-param') }],
        },
        search: { mode: 'outcome' },
      },
    ]);
    expect(fhirErrors(lenient.body)).toEqual([]);
    expect((await read(`Observation?patient=${patientId}`)).body.entry.every((entry: any) => entry.search.mode === 'match')).toBe(true);
    expectOutcome(
      await read(`Observation?patient=${patientId}&unknown-param=1`, { ...bearer(token), prefer: 'handling=strict' }),
      400,
      'not-supported',
    );
    expectOutcome(await read(`Observation?patient=${patientId}&date=yesterday`), 400, 'invalid');
    expectOutcome(await read(`Observation?patient=${patientId}&_count=-1`), 400, 'invalid');
  });
});

describe('_id', () => {
  it('finds a resource by its id on every type the server serves, and nothing for an id it does not have', async () => {
    const store = service.fhirStore;
    const checked: string[] = [];
    for (const type of store.supportedTypes) {
      const own = type === 'Patient' ? [store.read('Patient', patientId)!] : store.listForPatient(type, patientId);
      if (own.length === 0) continue;
      const wanted = own[own.length - 1]!;
      const found = await read(`${type}?_id=${wanted.id}`);
      expect(found.status, type).toBe(200);
      expect(found.body.total, type).toBe(1);
      expect(found.body.entry[0].resource.id, type).toBe(wanted.id);
      expect(found.body.link[0].url, type).toContain(`_id=${wanted.id}`);
      if (type !== 'Patient') expect((await read(`${type}?_id=not-an-id-here`)).body.total, type).toBe(0);
      checked.push(type);
    }
    expect(checked).toEqual(expect.arrayContaining(['Patient', 'Observation', 'Condition', 'Encounter']));
  });
});

describe('access rules', () => {
  it('needs a token: none, malformed, unknown or expired is 401 with a Bearer challenge', async () => {
    const none = await read(`Patient/${patientId}`, {});
    expectOutcome(none, 401, 'login');
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="${fhirBase}"`);
    expect(none.headers.get('access-control-allow-origin')).toBe('*');

    expect((await read(`Patient/${patientId}`, { authorization: 'Basic abc' })).headers.get('www-authenticate')).toContain('error="invalid_request"');
    const forged = await read(`Patient/${patientId}`, bearer(`${token.slice(0, -4)}AAAA`));
    expectOutcome(forged, 401, 'login');
    expect(forged.headers.get('www-authenticate')).toContain('error="invalid_token"');

    // A token this server signed, whose hour has passed.
    const tokens = createTokenService({
      db: service.database.db,
      lifetimes: service.config,
      urls: smartUrls(service.config.PUBLIC_BASE_URL),
      listen: service.database.listen,
      canFilter: canEvaluate,
    });
    const [row] = await service.database.db
      .select()
      .from(smartTokens)
      .where(eq(smartTokens.id, decodeJwt(token).jti!));
    const [authorization] = await service.database.db.select().from(smartAuthorizations).where(eq(smartAuthorizations.id, row!.authorizationId));
    const expired = await tokens.signAccessToken(
      authorization!,
      row!.scope,
      new Date(Date.now() - 2 * service.config.SMART_ACCESS_TOKEN_SECONDS * 1000),
    );
    const response = await read(`Patient/${patientId}`, bearer(expired.token));
    expectOutcome(response, 401, 'expired');
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it("refuses another patient's Patient and Observations with 403", async () => {
    expectOutcome(await read(`Patient/${otherPatientId}`), 403, 'forbidden');
    expectOutcome(await read(`Observation?patient=${otherPatientId}`), 403, 'forbidden');
    expectOutcome(await read(`Observation?subject=Patient/${otherPatientId}`), 403, 'forbidden');
    expectOutcome(await read(`Patient?_id=${otherPatientId}`), 403, 'forbidden');
    const theirs = service.fhirStore.listForPatient('Observation', otherPatientId)[0]!;
    expectOutcome(await read(`Observation/${theirs.id}`), 403, 'forbidden');
  });

  it('refuses a type or an interaction the scopes do not cover with 403 insufficient_scope', async () => {
    const patientOnly = (await standaloneTokens(service, patientId, 'launch/patient patient/Patient.rs')).tokens.access_token;
    const refused = await read(`Observation?patient=${patientId}`, bearer(patientOnly));
    expectOutcome(refused, 403, 'forbidden');
    expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expectOutcome(await read(`Observation/${observations[0]!.id}`, bearer(patientOnly)), 403, 'forbidden');

    const readOnly = (await standaloneTokens(service, patientId, 'launch/patient patient/Observation.r')).tokens.access_token;
    expect((await read(`Observation/${observations[0]!.id}`, bearer(readOnly))).status).toBe(200);
    expectOutcome(await read(`Observation?patient=${patientId}`, bearer(readOnly)), 403, 'forbidden');
  });

  it('honours a granular v2 scope: only Observations of the granted category', async () => {
    const category = categoriesOf(observations[0]!)[0]!;
    const scope = `launch/patient patient/Observation.rs?category=${CATEGORY_SYSTEM}|${category}`;
    const { tokens } = await standaloneTokens(service, patientId, scope);
    expect(tokens.scope).toBe(`launch/patient patient/Observation.rs?category=${encodeURIComponent(`${CATEGORY_SYSTEM}|${category}`)}`);
    const { entries } = await searchAll(`Observation?patient=${patientId}`, tokens.access_token);
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) expect(categoriesOf(entry)).toContain(category);
    const outside = observations.find((observation) => !categoriesOf(observation).includes(category))!;
    expectOutcome(await read(`Observation/${outside.id}`, bearer(tokens.access_token)), 403, 'forbidden');
  });

  it('stops honouring a token once it is revoked', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs');
    expect((await read(`Patient/${patientId}`, bearer(tokens.access_token))).status).toBe(200);
    await postForm(service, '/oauth/revoke', { token: tokens.access_token, client_id: client.client_id });
    const response = await read(`Patient/${patientId}`, bearer(tokens.access_token));
    expectOutcome(response, 401, 'login');
  });
});
