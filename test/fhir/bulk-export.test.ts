import type { FhirResource, Group, OperationOutcome } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patientOf } from '../../fixtures/store';
import { type ClientKey, clientCredentials, signAssertion, systemToken } from '../support/backend-services';
import { ASYNC, get, kickOff, linesOf, manifestOf } from '../support/bulk-export';
import { fhirErrors } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';
import { bearer, standaloneTokens } from '../support/smart';

let service: TestService;
let token: string;
beforeAll(async () => {
  service = await startTestService();
  ({ accessToken: token } = await systemToken(service, 'system/*.rs'));
});
afterAll(() => service.stop());

const invalidIn = (resources: FhirResource[]) =>
  resources
    .map((resource) => ({ id: `${resource.resourceType}/${resource.id}`, errors: fhirErrors(resource) }))
    .filter((result) => result.errors.length > 0);

async function exported(path: string, accessToken = token): Promise<FhirResource[]> {
  const manifest = await manifestOf(await kickOff(service, path, accessToken), accessToken);
  expect(manifest.error).toEqual([]);
  return linesOf(manifest.output, accessToken);
}

describe('FHIR Bulk Data $export', () => {
  it('exports the whole world: NDJSON files per type, bounded in size, each line a valid R4 resource as the FHIR API serves it', async () => {
    const statusUrl = await kickOff(service, '/fhir/R4/$export', token);
    expect(statusUrl).toMatch(new RegExp(`^${service.baseUrl}/fhir/R4/bulk-export/exp_`));
    const manifest = await manifestOf(statusUrl, token);
    expect(manifest.requiresAccessToken).toBe(true);
    expect(manifest.request).toBe(`${service.baseUrl}/fhir/R4/$export`);
    expect(Date.parse(manifest.transactionTime)).not.toBeNaN();
    expect(manifest.error).toEqual([]);
    expect(new Set(manifest.output.map((file) => file.type))).toEqual(new Set(service.fhirStore.supportedTypes));
    // The largest type is cut into several files.
    expect(manifest.output.filter((file) => file.type === 'ExplanationOfBenefit').length).toBeGreaterThan(1);
    const resources = await linesOf(manifest.output, token);
    const total = service.fhirStore.supportedTypes.reduce((sum, type) => sum + service.fhirStore.list(type).length, 0);
    expect(resources).toHaveLength(total);
    expect(invalidIn(resources)).toEqual([]);
    for (const file of manifest.output) expect(file.url).toMatch(/\.ndjson$/);
    const patient = resources.find((resource) => resource.resourceType === 'Patient' && resource.id === 'syn-pat-0001')!;
    expect(patient).toEqual(service.fhirStore.read('Patient', 'syn-pat-0001'));
    expect(patient.meta?.tag).toContainEqual(expect.objectContaining({ code: 'synthetic' }));
  });

  it('exports every patient’s compartment at Patient level, only the types asked for with _type', async () => {
    const resources = await exported('/fhir/R4/Patient/$export?_type=Patient,Condition&_outputFormat=application%2Ffhir%2Bndjson');
    expect(new Set(resources.map((resource) => resource.resourceType))).toEqual(new Set(['Patient', 'Condition']));
    expect(resources).toHaveLength(service.fhirStore.list('Patient').length + service.fhirStore.list('Condition').length);
    expect(invalidIn(resources)).toEqual([]);
  });

  it('exports a Group’s members only: a payer’s members, readable as a Group with a system token', async () => {
    const group = service.fhirStore.read('Group', 'syn-group-payer-alderpeak') as Group;
    const members = new Set(group.member!.map((member) => member.entity.reference!.slice('Patient/'.length)));
    expect(members.size).toBeGreaterThan(5);
    const resources = await exported('/fhir/R4/Group/syn-group-payer-alderpeak/$export?_type=Patient,Coverage,Encounter&_outputFormat=ndjson');
    expect(resources.filter((resource) => resource.resourceType === 'Patient').map((patient) => patient.id)).toEqual([...members].sort());
    expect(resources.every((resource) => members.has(patientOf(resource)!))).toBe(true);
    expect(resources.filter((resource) => resource.resourceType === 'Coverage').length).toBeGreaterThanOrEqual(members.size);
    expect(invalidIn(resources)).toEqual([]);

    const read = await service.call('/fhir/R4/Group/syn-group-prov-lakeside', { headers: bearer(token) });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      resourceType: 'Group',
      type: 'person',
      actual: true,
      managingEntity: { reference: 'Organization/syn-prov-lakeside' },
    });
  });

  it('keeps Groups from patient-context tokens: 403 on read and search, as Groups list other patients', async () => {
    const { tokens } = await standaloneTokens(service, 'syn-pat-0001', 'launch/patient patient/*.rs');
    for (const path of ['/fhir/R4/Group/syn-group-prov-lakeside', '/fhir/R4/Group/syn-group-payer-alderpeak', '/fhir/R4/Group']) {
      const response = await service.call(path, { headers: bearer(tokens.access_token) });
      expect(response.status, path).toBe(403);
      expect((response.body as OperationOutcome).issue[0]!.diagnostics).toContain('outside the patient');
    }
  });

  it('narrows the output with _since and _typeFilter', async () => {
    // Every resource of the world was last updated at its as-of instant, 2026-01-01.
    expect(await exported('/fhir/R4/$export?_type=Patient&_since=2026-06-01T00:00:00Z')).toEqual([]);
    expect(await exported('/fhir/R4/$export?_type=Patient&_since=2025-06-01T00:00:00%2B02:00')).toHaveLength(100);
    const labs = await exported(`/fhir/R4/Patient/$export?_type=Observation&_typeFilter=${encodeURIComponent('Observation?category=laboratory')}`);
    expect(labs.length).toBeGreaterThan(10);
    expect(labs.length).toBeLessThan(service.fhirStore.list('Observation').length);
    for (const observation of labs) expect(JSON.stringify((observation as { category: unknown }).category)).toContain('"laboratory"');
  });

  it('refuses what it cannot do with an OperationOutcome saying why', async () => {
    const refusal = async (path: string, headers: Record<string, string> = { ...ASYNC, ...bearer(token) }) => {
      const response = await service.call(path, { headers });
      expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
      return { status: response.status, diagnostics: (response.body as OperationOutcome).issue[0]!.diagnostics };
    };
    expect(await refusal('/fhir/R4/$export', bearer(token))).toMatchObject({
      status: 400,
      diagnostics: expect.stringContaining('Prefer: respond-async'),
    });
    expect(await refusal('/fhir/R4/$export?_type=Spaceship')).toMatchObject({ status: 400, diagnostics: expect.stringContaining('Spaceship') });
    expect(await refusal('/fhir/R4/Patient/$export?_type=Practitioner')).toMatchObject({ status: 400 });
    expect(await refusal('/fhir/R4/$export?_outputFormat=text%2Fcsv')).toMatchObject({ status: 400 });
    expect(await refusal('/fhir/R4/$export?_since=yesterday')).toMatchObject({ status: 400 });
    expect(await refusal('/fhir/R4/$export?_elements=id')).toMatchObject({ status: 400, diagnostics: expect.stringContaining('_elements') });
    expect(await refusal(`/fhir/R4/$export?_type=Observation&_typeFilter=${encodeURIComponent('Observation?colour=red')}`)).toMatchObject({
      status: 400,
      diagnostics: expect.stringContaining('colour'),
    });
    expect(await refusal('/fhir/R4/Group/syn-group-nobody/$export')).toMatchObject({ status: 404 });
    expect(await refusal('/fhir/R4/$export', ASYNC)).toMatchObject({ status: 401 });

    // A patient-scoped SMART token is not a system token.
    const { tokens } = await standaloneTokens(service, 'syn-pat-0001', 'launch/patient patient/*.rs');
    expect(await refusal('/fhir/R4/Patient/$export', { ...ASYNC, ...bearer(tokens.access_token) })).toMatchObject({
      status: 403,
      diagnostics: expect.stringContaining('system-level'),
    });
    // System scopes decide the types.
    const { accessToken: narrow } = await systemToken(service, 'system/Patient.read');
    expect(await refusal('/fhir/R4/$export?_type=Observation', { ...ASYNC, ...bearer(narrow) })).toMatchObject({ status: 403 });
    const onlyPatients = await exported('/fhir/R4/$export', narrow);
    expect(new Set(onlyPatients.map((resource) => resource.resourceType))).toEqual(new Set(['Patient']));
  });

  it('lists the three export operations, by their Bulk Data 2.0 canonical URLs, in the CapabilityStatement', async () => {
    const { body } = await service.call('/fhir/R4/metadata');
    const rest = body.rest[0];
    const operations = (type: string) => rest.resource.find((resource: { type: string }) => resource.type === type).operation ?? [];
    expect(body.instantiates).toContain('http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data');
    expect(rest.operation).toEqual([
      expect.objectContaining({ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export' }),
    ]);
    expect(operations('Patient')).toContainEqual(
      expect.objectContaining({ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/patient-export' }),
    );
    expect(operations('Group')).toEqual([
      expect.objectContaining({ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/group-export' }),
    ]);
    expect(fhirErrors(body)).toEqual([]);
  });

  it('keeps each organization’s exports to itself: another organization’s token gets 404 for the status, the files and DELETE', async () => {
    const statusUrl = await kickOff(service, '/fhir/R4/$export?_type=Patient', token);
    const manifest = await manifestOf(statusUrl, token);
    const { accessToken: other } = await systemToken(service, 'system/*.rs');
    expect((await get(statusUrl, other)).status).toBe(404);
    expect((await get(manifest.output[0]!.url, other)).status).toBe(404);
    expect((await fetch(statusUrl, { method: 'DELETE', headers: bearer(other) })).status).toBe(404);
    expect((await get(manifest.output[0]!.url)).status).toBe(401);
    expect((await get(manifest.output[0]!.url, token)).status).toBe(200);
  });

  it('belongs to the client that started it: another client of the same organization gets 404 for the status, the files and DELETE', async () => {
    const started = await systemToken(service, 'system/*.rs');
    const statusUrl = await kickOff(service, '/fhir/R4/$export?_type=Patient,Observation', started.accessToken);
    const manifest = await manifestOf(statusUrl, started.accessToken);
    const { accessToken: sameOrganization } = await systemToken(service, 'system/*.rs', started.apiKey);
    expect((await get(statusUrl, sameOrganization)).status).toBe(404);
    for (const file of manifest.output) expect((await get(file.url, sameOrganization)).status).toBe(404);
    expect((await fetch(statusUrl, { method: 'DELETE', headers: bearer(sameOrganization) })).status).toBe(404);
    expect((await get(statusUrl, started.accessToken)).status).toBe(200);
  });

  it('serves a file only to a token whose scopes allow its type: a narrower token of the same client gets 403 for the others', async () => {
    const started = await systemToken(service, 'system/*.rs');
    const manifest = await manifestOf(await kickOff(service, '/fhir/R4/$export?_type=Patient,Observation', started.accessToken), started.accessToken);
    const narrow = await sameClientToken(started, 'system/Patient.rs');
    const patients = manifest.output.find((file) => file.type === 'Patient')!;
    const observations = manifest.output.find((file) => file.type === 'Observation')!;
    expect((await get(patients.url, narrow)).status).toBe(200);
    const refused = await get(observations.url, narrow);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(((await refused.json()) as OperationOutcome).issue[0]!.diagnostics).toContain('Observation');
  });

  it('serves its files whatever Accept a Bulk Data client sends, and its status and manifest in the spec’s content types', async () => {
    const statusUrl = await kickOff(service, '/fhir/R4/$export?_type=Patient', token);
    const polled = await fetch(statusUrl, { headers: { ...bearer(token), accept: 'application/json' } });
    expect([200, 202]).toContain(polled.status);
    const manifest = await manifestOf(statusUrl, token);
    const manifestResponse = await fetch(statusUrl, { headers: { ...bearer(token), accept: 'application/json' } });
    expect(manifestResponse.status).toBe(200);
    expect(manifestResponse.headers.get('content-type')).toMatch(/^application\/json/);
    const file = manifest.output[0]!.url;
    for (const accept of [undefined, 'application/fhir+ndjson', 'application/ndjson', 'application/json', '*/*']) {
      const response = await fetch(file, { headers: { ...bearer(token), ...(accept ? { accept } : {}) } });
      expect(response.status, `Accept: ${accept}`).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+ndjson/);
      expect((await response.text()).trim().split('\n')).toHaveLength(manifest.output[0]!.count);
    }
    const refused = await fetch(file, { headers: { ...bearer(token), accept: 'text/csv' } });
    expect(refused.status).toBe(406);
    expect(refused.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
  });
});

/** Another access token for the same backend services client, with other scopes. */
async function sameClientToken(started: { clientKey: ClientKey; clientId: string }, scope: string): Promise<string> {
  const response = await clientCredentials(service, await signAssertion(service, started.clientId, started.clientKey), scope);
  expect(response.status).toBe(200);
  return response.body.access_token;
}
