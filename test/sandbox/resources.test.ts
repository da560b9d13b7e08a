import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fhirErrors } from '../support/fhir-validator';
import { pageThrough } from '../support/paging';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let key: string;
beforeAll(async () => {
  service = await startTestService();
  ({ key } = await service.newTenant());
});
afterAll(() => service.stop());

describe('GET /v1/sandbox/resources/{type}', () => {
  it('serves every resource of every type, each valid FHIR R4', async () => {
    const catalogTypes = service.fhirStore.supportedTypes;
    let total = 0;
    for (const type of catalogTypes) {
      const { items } = await pageThrough(service, key, `/v1/sandbox/resources/${type}?limit=200`);
      expect(items.length, type).toBe(service.fhirStore.list(type).length);
      const invalid = items.map((resource) => ({ id: resource.id, errors: fhirErrors(resource) })).filter((result) => result.errors.length > 0);
      expect(invalid, type).toEqual([]);
      expect(items.every((resource) => resource.resourceType === type)).toBe(true);
      total += items.length;
    }
    expect(total).toBeGreaterThan(3_000);
  });

  it('filters by patient, with or without the Patient/ prefix, and reads one resource', async () => {
    const observations = await pageThrough(service, key, '/v1/sandbox/resources/Observation?patient=syn-pat-0001');
    expect(observations.items.length).toBeGreaterThan(5);
    expect(observations.items.every((observation) => (observation.subject as { reference: string }).reference === 'Patient/syn-pat-0001')).toBe(true);
    const prefixed = await pageThrough(service, key, '/v1/sandbox/resources/Observation?patient=Patient/syn-pat-0001');
    expect(prefixed.items).toEqual(observations.items);
    const coverage = await service.call('/v1/sandbox/resources/Coverage?patient=syn-pat-0001', { key });
    expect(coverage.body.data).toHaveLength(1);

    const first = observations.items[0]!;
    const read = await service.call(`/v1/sandbox/resources/Observation/${first.id}`, { key });
    expect(read.body).toEqual(first);
  });

  it('answers 404 naming the supported types for an unknown type, and 404 for an unknown id or patient', async () => {
    const unknownType = await service.call('/v1/sandbox/resources/Spaceship', { key });
    expect(unknownType.status).toBe(404);
    expect(unknownType.body.code).toBe('unknown_resource_type');
    for (const type of ['Patient', 'Observation', 'Claim', 'ExplanationOfBenefit']) expect(unknownType.body.detail).toContain(type);
    const wrongCase = await service.call('/v1/sandbox/resources/observation', { key });
    expect(wrongCase.body.detail).toContain('Did you mean Observation?');
    expect((await service.call('/v1/sandbox/resources/Spaceship/x', { key })).body.code).toBe('unknown_resource_type');

    const unknownId = await service.call('/v1/sandbox/resources/Claim/syn-clm-9999-001', { key });
    expect(unknownId.status).toBe(404);
    expect(unknownId.body.detail).toContain('syn-clm-9999-001');
    const unknownPatient = await service.call('/v1/sandbox/resources/Observation?patient=syn-pat-9999', { key });
    expect(unknownPatient.status).toBe(404);
  });

  it('refuses a patient filter on shared resources with a clear 422', async () => {
    const response = await service.call('/v1/sandbox/resources/Practitioner?patient=syn-pat-0001', { key });
    expect(response.status).toBe(422);
    expect(response.body.errors).toEqual([
      { path: 'query.patient', message: 'Practitioner resources are shared by all patients; drop the patient filter' },
    ]);
  });
});
