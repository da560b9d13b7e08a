import { eq } from 'drizzle-orm';
import type { Bundle, BundleEntry, CapabilityStatement, Extension, Patient } from 'fhir/r4';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchBundleSchema } from '../../api/interop/mpi';
import { smartAuthorizations, smartTokens } from '../../drizzle/schema';
import { canEvaluate } from '../../fhir/search-parameters';
import { loadNearDuplicates, NEAR_DUPLICATE_CASES } from '../../fixtures/near-duplicates';
import { loadFhirStore } from '../../fixtures/store';
import { demographicsOf } from '../../interop/mpi/demographics';
import { MATCH_BREAKDOWN_EXTENSION, MATCH_GRADE_EXTENSION } from '../../interop/mpi/fhir';
import { FIELD_LEVELS, levelWeight, MATCH_FIELDS } from '../../interop/mpi/model';
import { createMpiIndex } from '../../interop/mpi/mpi-index';
import { smartUrls } from '../../smart/endpoints';
import { createTokenService } from '../../smart/tokens';
import { fhirErrors } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';
import { bearer, standaloneTokens } from '../support/smart';

const store = loadFhirStore();
const nearDuplicates = loadNearDuplicates();
const patient = (id: string) => store.read('Patient', id) as Patient;
const record = (id: string) => nearDuplicates.find((candidate) => candidate.id === id)!;

const parameters = (resource: Patient, extra: object[] = []) => ({
  resourceType: 'Parameters',
  parameter: [{ name: 'resource', resource }, ...extra],
});

const gradeOf = (entry: BundleEntry) => entry.search!.extension!.find((extension) => extension.url === MATCH_GRADE_EXTENSION)!.valueCode;
const breakdownOf = (entry: BundleEntry) => entry.search!.extension!.find((extension) => extension.url === MATCH_BREAKDOWN_EXTENSION)!;
const sub = (extension: Extension, url: string) => extension.extension!.filter((inner) => inner.url === url);

let service: TestService;
let key: string;
beforeAll(async () => {
  service = await startTestService();
  ({ key } = await service.newTenant());
});
afterAll(() => service.stop());

const match = (body: unknown) => service.call('/v1/sandbox/mpi/match', { key, method: 'POST', body });

describe('the near-duplicates of the synthetic world', () => {
  it.each(NEAR_DUPLICATE_CASES.filter((testCase) => testCase.id !== 'syn-mpi-0007'))(
    '$case ($id): matching $of grades it $grade',
    async (testCase) => {
      const answer = await match(parameters(patient(testCase.of)));
      expect(answer.status).toBe(200);
      const bundle = answer.body as Bundle;
      expect(fhirErrors(bundle)).toEqual([]);
      expect(bundle.entry![0]!.resource!.id).toBe(testCase.of);
      expect(gradeOf(bundle.entry![0]!)).toBe('certain');
      const entry = bundle.entry!.find((candidate) => candidate.resource!.id === testCase.id);
      if (testCase.grade === 'certainly-not') expect(entry).toBeUndefined();
      else expect(entry && gradeOf(entry)).toBe(testCase.grade);
    },
  );

  it('answers a merged record (Patient.link replaced-by) with its surviving patient, certain', async () => {
    const answer = await match(parameters(record('syn-mpi-0007')));
    const bundle = answer.body as Bundle;
    expect(bundle.entry!.map((entry) => entry.resource!.id)).toEqual(['syn-pat-0005']);
    expect(gradeOf(bundle.entry![0]!)).toBe('certain');
    expect(sub(breakdownOf(bundle.entry![0]!), 'merged-record')[0]!.valueReference).toEqual({ reference: 'Patient/syn-mpi-0007' });
  });
});

describe('POST /v1/sandbox/mpi/match', () => {
  it('takes plain JSON demographics, and knows William is Bill', async () => {
    const index = createMpiIndex([
      { resourceType: 'Patient', id: 'w', name: [{ family: 'Okafor', given: ['William'] }], birthDate: '1970-03-04', gender: 'male' },
    ]);
    const bill = index.match(
      demographicsOf({ resourceType: 'Patient', name: [{ family: 'Okafor', given: ['Bill'] }], birthDate: '1970-03-04', gender: 'male' }),
    );
    expect(bill.candidates[0]!.fields.find((field) => field.field === 'given')).toMatchObject({ level: 'nickname' });
    expect(bill.candidates[0]!.grade).toBe('probable');

    const nate = record('syn-mpi-0003');
    const answer = await match({ given: 'Nate', family: 'Bradtke', birth_date: nate.birthDate, gender: 'male' });
    expect(answer.status).toBe(200);
    expect(answer.body.entry.map((entry: BundleEntry) => entry.resource!.id)).toEqual(['syn-mpi-0003', 'syn-pat-0036']);
    expect(answer.body.entry[0].fullUrl).toBe(`${service.baseUrl}/v1/sandbox/mpi/records/syn-mpi-0003`);
    expect(answer.body.entry[1].fullUrl).toBe(`${service.baseUrl}/fhir/R4/Patient/syn-pat-0036`);
    const read = await service.call('/v1/sandbox/mpi/records/syn-mpi-0003', { key });
    expect(read.body).toEqual(nate);
  });

  it('honours onlyCertainMatches and count', async () => {
    const query = patient('syn-pat-0052');
    const all = (await match(parameters(query))).body as Bundle;
    expect(all.entry!.map(gradeOf)).toEqual(['certain', 'possible']);
    const certain = (await match(parameters(query, [{ name: 'onlyCertainMatches', valueBoolean: true }]))).body as Bundle;
    expect(certain.entry!.map((entry) => entry.resource!.id)).toEqual(['syn-pat-0052']);
    const one = (await match(parameters(patient('syn-pat-0036'), [{ name: 'count', valueInteger: 1 }]))).body as Bundle;
    expect(one.entry!.map((entry) => entry.resource!.id)).toEqual(['syn-pat-0036']);
    expect(one.total).toBe(1);
    const plain = await match({ family: 'Bradtke', given: 'Nathaniel', birth_date: '1974-10-27', count: 1, only_certain_matches: false });
    expect(plain.body.entry).toHaveLength(1);
  });

  it('explains each score field by field: the weights add up to the total, each from the documented m and u', async () => {
    const bundle = (await match(parameters(patient('syn-pat-0065')))).body as Bundle;
    for (const entry of bundle.entry!) {
      const breakdown = breakdownOf(entry);
      const fields = sub(breakdown, 'field').map((field) =>
        Object.fromEntries(field.extension!.map((inner) => [inner.url, Object.values(inner)[1]])),
      );
      expect(fields.map((field) => field.name)).toEqual([...MATCH_FIELDS]);
      const total = fields.reduce((sum, field) => sum + (field.weight as number), 0);
      expect(sub(breakdown, 'weight')[0]!.valueDecimal).toBeCloseTo(total, 6);
      for (const field of fields) {
        expect(field.weight).toBe(levelWeight(field.name as (typeof MATCH_FIELDS)[number], field.level as string));
        expect(field.detail).toEqual(expect.any(String));
      }
    }
    const maiden = bundle.entry!.find((entry) => entry.resource!.id === 'syn-mpi-0006')!;
    const family = sub(breakdownOf(maiden), 'field').find((field) => field.extension![0]!.valueCode === 'family')!;
    expect(family.extension).toEqual(
      expect.arrayContaining([
        { url: 'level', valueCode: 'different' },
        { url: 'similarity', valueDecimal: expect.any(Number) },
        { url: 'phonetic', valueString: expect.stringMatching(/^\w+ \/ \w+$/) },
      ]),
    );
    expect(Object.keys(FIELD_LEVELS)).toEqual([...MATCH_FIELDS]);
  });

  it('refuses bad input with a 422 that lists every bad field', async () => {
    const plain = await match({ given: '', birth_date: '1980-02-30', gender: 'robot', count: 0, color: 'blue' });
    expect(plain.status).toBe(422);
    expect(plain.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(
      ['body.birth_date', 'body.color', 'body.count', 'body.gender', 'body.given'].sort(),
    );
    const parametersAnswer = await match({
      resourceType: 'Parameters',
      parameter: [
        { name: 'resource', resource: { resourceType: 'Patient', gender: 'female' } },
        { name: 'count', valueInteger: 500 },
        { name: 'onlyCertainMatches' },
      ],
    });
    expect(parametersAnswer.status).toBe(422);
    expect(parametersAnswer.body.errors.map((error: { path: string }) => error.path)).toEqual([
      'body.parameter.1.valueInteger',
      'body.parameter.0.resource',
      'body.parameter.2.valueBoolean',
    ]);
    const notEnough = await match(parameters({ resourceType: 'Patient', gender: 'female' }, [{ name: 'onlyCertainMatches' }]));
    expect(notEnough.body.errors).toEqual([
      { path: 'body.parameter.0.resource', message: expect.stringContaining('at least a birth date') },
      { path: 'body.parameter.1.valueBoolean', message: expect.any(String) },
    ]);
    expect((await match({ gender: 'female' })).body.errors).toEqual([{ path: 'body', message: expect.stringContaining('at least a birth date') }]);
    expect((await service.call('/v1/sandbox/mpi/records/syn-mpi-9999', { key })).status).toBe(404);
    expect((await service.call('/v1/sandbox/mpi/match', { method: 'POST', body: {} })).status).toBe(401);
  });
});

describe('POST /fhir/R4/Patient/$match (IHE PDQm ITI-119)', () => {
  const fhirMatch = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) =>
    fetch(`${service.baseUrl}/fhir/R4/Patient/$match`, {
      method: 'POST',
      headers: { 'content-type': 'application/fhir+json', accept: 'application/fhir+json', ...headers },
      body: JSON.stringify(body),
      // Tests read whatever the endpoint answered; assertions give it shape.
    }).then(async (response) => ({ status: response.status, type: response.headers.get('content-type'), body: (await response.json()) as any }));
  const ids = (bundle: Bundle) => bundle.entry!.filter((entry) => entry.search!.mode === 'match').map((entry) => entry.resource!.id);
  const twin = patient('syn-pat-0052');
  /** The twins' shared demographics without a given name: both records match with certainty. */
  const twinsWithoutGivenName: Patient = {
    resourceType: 'Patient',
    name: [{ family: twin.name![0]!.family }],
    birthDate: twin.birthDate,
    address: twin.address,
    telecom: twin.telecom,
  };

  it('certain: a Parameters resource naming a world patient answers that patient first, certain, as the /v1 match does', async () => {
    const answer = await fhirMatch(parameters(patient('syn-pat-0013')));
    expect(answer.status).toBe(200);
    expect(answer.type).toMatch(/^application\/fhir\+json/);
    const bundle = answer.body as Bundle;
    expect(fhirErrors(bundle)).toEqual([]);
    expect(matchBundleSchema.safeParse(bundle).error).toBeUndefined();
    expect(bundle).toMatchObject({
      resourceType: 'Bundle',
      type: 'searchset',
      link: [{ relation: 'self', url: `${service.baseUrl}/fhir/R4/Patient/$match` }],
    });
    expect(bundle.entry![0]!).toMatchObject({ fullUrl: `${service.baseUrl}/fhir/R4/Patient/syn-pat-0013`, search: { mode: 'match' } });
    expect(gradeOf(bundle.entry![0]!)).toBe('certain');
    const v1 = (await match(parameters(patient('syn-pat-0013')))).body as Bundle;
    expect(ids(bundle)).toEqual(ids(v1));
    expect(bundle.entry!.map(gradeOf)).toEqual(v1.entry!.map(gradeOf));
    expect(bundle.total).toBe(v1.total);
    const metadata = (await (await fetch(`${service.baseUrl}/fhir/R4/metadata`)).json()) as CapabilityStatement;
    // Patient also lists the Bulk Data export (test/fhir/bulk-export.test.ts); $match is listed once.
    const patientOperations = metadata.rest![0]!.resource!.find((resource) => resource.type === 'Patient')!.operation!;
    expect(patientOperations.filter((operation) => operation.name === 'match')).toEqual([
      expect.objectContaining({ name: 'match', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-match' }),
    ]);
  });

  it('probable: a bare Patient is accepted; candidates come best first with their grades and scores', async () => {
    const nate = record('syn-mpi-0003');
    const answer = await fhirMatch({ resourceType: 'Patient', name: nate.name, birthDate: nate.birthDate, gender: nate.gender });
    expect(answer.status).toBe(200);
    const bundle = answer.body as Bundle;
    expect(fhirErrors(bundle)).toEqual([]);
    // Name, birth date and gender alone are probable: certain needs an address, a phone or an identifier to agree too.
    expect(ids(bundle)).toEqual(['syn-mpi-0003', 'syn-pat-0036']);
    expect(bundle.entry!.map(gradeOf)).toEqual(['probable', 'probable']);
    const scores = bundle.entry!.map((entry) => entry.search!.score!);
    expect(scores[0]).toBeGreaterThan(scores[1]!);
  });

  it('none: demographics nobody has answer an empty searchset', async () => {
    const answer = await fhirMatch(
      parameters({ resourceType: 'Patient', name: [{ family: 'Zzyzxquonk', given: ['Ophelia'] }], birthDate: '1901-02-03', gender: 'female' }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 0, entry: [] });
    expect(fhirErrors(answer.body)).toEqual([]);
  });

  it('ambiguous: several certain records with onlyCertainMatches answer no Patient, and say why', async () => {
    const all = (await fhirMatch(parameters(twinsWithoutGivenName))).body as Bundle;
    expect(ids(all).slice(0, 2).sort()).toEqual(['syn-mpi-0004', 'syn-pat-0052']);
    expect(all.entry!.slice(0, 2).map(gradeOf)).toEqual(['certain', 'certain']);

    const answer = await fhirMatch(parameters(twinsWithoutGivenName, [{ name: 'onlyCertainMatches', valueBoolean: true }]));
    expect(answer.status).toBe(200);
    const bundle = answer.body as Bundle;
    expect(fhirErrors(bundle)).toEqual([]);
    expect(matchBundleSchema.safeParse(bundle).error).toBeUndefined();
    expect(bundle.total).toBe(0);
    expect(ids(bundle)).toEqual([]);
    expect(bundle.entry).toEqual([
      expect.objectContaining({
        search: { mode: 'outcome' },
        resource: expect.objectContaining({
          resourceType: 'OperationOutcome',
          issue: [expect.objectContaining({ severity: 'information', code: 'multiple-matches', diagnostics: expect.stringContaining('2 records') })],
        }),
      }),
    ]);
    // One certain record is answered alone (its twin is only possible).
    const one = (await fhirMatch(parameters(twin, [{ name: 'onlyCertainMatches', valueBoolean: true }]))).body as Bundle;
    expect(ids(one)).toEqual(['syn-pat-0052']);
    // A record with a certain near-duplicate (a typo in the family name) is ambiguous too.
    const typo = (await fhirMatch(parameters(patient('syn-pat-0013'), [{ name: 'onlyCertainMatches', valueBoolean: true }]))).body as Bundle;
    expect(typo.total).toBe(0);
    // The /v1 route follows ITI-119 too.
    expect(ids((await match(parameters(twinsWithoutGivenName, [{ name: 'onlyCertainMatches', valueBoolean: true }]))).body)).toEqual([]);
  });

  it('honours count, and answers bad input with an OperationOutcome naming each field', async () => {
    const one = (await fhirMatch(parameters(patient('syn-pat-0036'), [{ name: 'count', valueInteger: 1 }]))).body as Bundle;
    expect(ids(one)).toEqual(['syn-pat-0036']);

    const bad = await fhirMatch({ resourceType: 'Parameters', parameter: [{ name: 'count', valueInteger: 0 }] });
    expect(bad.status).toBe(400);
    expect(bad.body.resourceType).toBe('OperationOutcome');
    expect(bad.body.issue.map((issue: { expression: string[] }) => issue.expression[0]).sort()).toEqual([
      'Parameters.parameter',
      'Parameters.parameter[0].valueInteger',
    ]);
    const thin = await fhirMatch({ resourceType: 'Patient', gender: 'female' });
    expect(thin.status).toBe(400);
    expect(thin.body.issue[0]).toMatchObject({ expression: ['Patient'], diagnostics: expect.stringContaining('birth date') });
    const huge = await fhirMatch({ resourceType: 'Patient', name: [{ family: 'x'.repeat(10_000), given: ['Ann'] }], birthDate: '1970-01-01' });
    expect(huge.status).toBe(400);
    expect(huge.body.issue[0]).toMatchObject({ expression: ['Patient.name[0].family'], diagnostics: expect.stringContaining('at most 100') });
    const get = await fetch(`${service.baseUrl}/fhir/R4/Patient/$match`, { headers: { authorization: `Bearer ${key}` } });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    const other = await fhirMatch({ resourceType: 'Observation' });
    expect(other.status).toBe(400);
    const text = await fetch(`${service.baseUrl}/fhir/R4/Patient/$match`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
      body: 'Jane',
    });
    expect(text.status).toBe(415);
    expect(((await text.json()) as { resourceType: string }).resourceType).toBe('OperationOutcome');
  });

  it('is in the OpenAPI document with the schemas that check it', async () => {
    const document = (await service.call('/openapi.json')).body;
    const operation = document.paths['/fhir/R4/Patient/$match'].post;
    expect(operation.requestBody.content['application/fhir+json'].schema).toEqual({ $ref: '#/components/schemas/PatientMatchInput' });
    expect(operation.responses['200'].content['application/fhir+json'].schema).toEqual({ $ref: '#/components/schemas/MpiMatchBundle' });
    expect(operation.security).toEqual([{ smartAccessToken: [] }, { apiKey: [] }]);
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '403', '405', '406', '415', '429']);
    expect(document.components.schemas.PatientMatchInput.oneOf ?? document.components.schemas.PatientMatchInput.anyOf).toHaveLength(2);
  });

  it('takes an API key or a SMART token with a user- or system-level Patient search scope; a patient-level token is 403', async () => {
    const query = parameters(patient('syn-pat-0013'));
    const none = await fhirMatch(query, {});
    expect(none.status).toBe(401);
    expect(none.body.resourceType).toBe('OperationOutcome');
    expect((await fhirMatch(query, { authorization: 'Bearer sk_sandbox_not-a-key-at-all-not-a-key-at-all-0' })).status).toBe(401);

    const { tokens } = await standaloneTokens(service, 'syn-pat-0013', 'launch/patient patient/Patient.rs');
    const patientLevel = await fhirMatch(query, bearer(tokens.access_token));
    expect(patientLevel.status).toBe(403);
    expect(patientLevel.body.issue[0].diagnostics).toContain('user/Patient.rs');

    // A token of the same grant signed with each scope stands in for a user- or system-level grant
    // (the real flows are in test/smart/oauth.test.ts and test/smart/backend-services.test.ts).
    for (const scope of ['user/Patient.rs', 'system/Patient.rs', 'system/Patient.read', 'user/*.read']) {
      const token = await resignedWithScope(tokens.access_token, scope);
      const answer = await fhirMatch(query, bearer(token));
      expect(answer.status, scope).toBe(200);
      expect(ids(answer.body)[0], scope).toBe('syn-pat-0013');
    }
    for (const scope of ['user/Patient.r', 'user/Observation.rs', 'user/Patient.rs?gender=female']) {
      expect((await fhirMatch(query, bearer(await resignedWithScope(tokens.access_token, scope)))).status, scope).toBe(403);
    }
  });
});

/** Another access token of the grant `accessToken` belongs to, with `scope` (what a user or system grant would carry). */
async function resignedWithScope(accessToken: string, scope: string): Promise<string> {
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
  return (await tokens.signAccessToken(authorization!, scope)).token;
}
