import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fhirErrors } from '../support/fhir-validator';
import { type FhirJson, pageThrough } from '../support/paging';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let key: string;
beforeAll(async () => {
  service = await startTestService();
  ({ key } = await service.newTenant());
});
afterAll(() => service.stop());

describe('GET /v1/patients', () => {
  it('pages through at least 100 synthetic patients by id, each tagged synthetic', async () => {
    const { items, pages } = await pageThrough(service, key, '/v1/patients?limit=30');
    expect(items.length).toBeGreaterThanOrEqual(100);
    expect(pages).toBe(Math.ceil(items.length / 30));
    const ids = items.map((patient) => patient.id);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(ids.length);
    expect(items[0]).toMatchObject({ resourceType: 'Patient', id: 'syn-pat-0001', meta: { tag: [{ code: 'synthetic' }] } });
  });

  it('answers the same patients to every organization', async () => {
    const other = await service.newTenant('Other Health (synthetic)');
    const mine = await service.call('/v1/patients?limit=200', { key });
    const theirs = await service.call('/v1/patients?limit=200', { key: other.key });
    expect(theirs.body).toEqual(mine.body);
  });

  it('searches by name, birth date, gender and identifier', async () => {
    const first = (await service.call('/v1/patients/syn-pat-0001', { key })).body;
    const { family, given } = first.name[0];
    const byName = await service.call(`/v1/patients?name=${encodeURIComponent(`${given[0].slice(0, 3).toUpperCase()} ${family}`)}`, { key });
    expect(byName.body.data.map((patient: FhirJson) => patient.id)).toContain('syn-pat-0001');
    expect(byName.body.data.every((patient: { name: { family: string }[] }) => patient.name[0]!.family === family)).toBe(true);

    const byBirthDate = await service.call(`/v1/patients?birthdate=${first.birthDate}`, { key });
    expect(byBirthDate.body.data.map((patient: FhirJson) => patient.id)).toContain('syn-pat-0001');
    expect(byBirthDate.body.data.every((patient: { birthDate: string }) => patient.birthDate === first.birthDate)).toBe(true);

    const seniors = (await pageThrough(service, key, '/v1/patients?birthdate=lt1961-01-01&gender=female')).items as unknown as {
      birthDate: string;
      gender: string;
    }[];
    expect(seniors.length).toBeGreaterThan(0);
    expect(seniors.every((patient) => patient.birthDate < '1961-01-01' && patient.gender === 'female')).toBe(true);
    const bornIn1958 = (await pageThrough(service, key, '/v1/patients?birthdate=1958')).items as unknown as { id: string; birthDate: string }[];
    expect(bornIn1958.map((patient) => patient.id)).toContain('syn-pat-0001');
    expect(bornIn1958.every((patient) => patient.birthDate.startsWith('1958'))).toBe(true);

    const mrn = first.identifier[0];
    for (const identifier of [mrn.value, `${mrn.system}|${mrn.value}`]) {
      const found = await service.call(`/v1/patients?identifier=${encodeURIComponent(identifier)}`, { key });
      expect(found.body.data.map((patient: FhirJson) => patient.id)).toEqual(['syn-pat-0001']);
    }
    expect((await service.call('/v1/patients?identifier=MRN0000000', { key })).body).toEqual({ data: [], next_cursor: null });
  });

  it('finds by name exactly the patients every word of which starts one of their names, in id order', async () => {
    const everyone = (await pageThrough(service, key, '/v1/patients?limit=200')).items as unknown as {
      id: string;
      gender: string;
      name: { given?: string[]; family?: string }[];
    }[];
    const nameWords = (text: string) =>
      text
        .normalize('NFD')
        .replace(/[\u0300-\u036f]/g, '')
        .toLowerCase()
        .split(/[\s\-']+/)
        .filter(Boolean);
    const expected = (search: string, gender?: string) =>
      everyone
        .filter((patient) => gender === undefined || patient.gender === gender)
        .filter((patient) => {
          const words = patient.name.flatMap((name) => [...(name.given ?? []), name.family ?? '']).flatMap(nameWords);
          return nameWords(search).every((wanted) => words.some((word) => word.startsWith(wanted)));
        })
        .map((patient) => patient.id);
    const first = everyone[0]!.name[0]!;
    const searches = ['ru', 'a', 'ZZZ', `${first.given![0]!.slice(0, 2)} ${first.family!.slice(0, 1)}`, `${first.family}-${first.given![0]}`, "o'"];
    for (const search of searches) {
      for (const gender of [undefined, 'female']) {
        const query = new URLSearchParams({ name: search, limit: '200', ...(gender ? { gender } : {}) });
        const found = (await service.call(`/v1/patients?${query}`, { key })).body.data.map((patient: FhirJson) => patient.id);
        expect(found, `${query}`).toEqual(expected(search, gender));
      }
    }
    expect(expected('ru', 'female').length).toBeGreaterThan(0);
  });

  it('says what is wrong with a bad search', async () => {
    const response = await service.call('/v1/patients?birthdate=1958-13&gender=f&nam=x', { key });
    expect(response.status).toBe(422);
    expect(response.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['query.birthdate', 'query.gender', 'query.nam']);
    expect((await service.call('/v1/patients?cursor=nope', { key })).body.code).toBe('invalid_cursor');
  });

  it('reads one patient; an unknown id is a 404 problem; no key is a 401', async () => {
    const patient = await service.call('/v1/patients/syn-pat-0042', { key });
    expect(patient.status).toBe(200);
    expect(fhirErrors(patient.body)).toEqual([]);
    const missing = await service.call('/v1/patients/syn-pat-9999', { key });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(missing.body).toMatchObject({ code: 'not_found', detail: expect.stringContaining('syn-pat-9999') });
    expect((await service.call('/v1/patients')).status).toBe(401);
  });
});

describe('the README walkthrough', () => {
  it('shows what the README says: Petra Ruecker, MRN1007919, HbA1c falling on metformin, an authorized knee MRI', async () => {
    const patient = (await service.call('/v1/patients?limit=2', { key })).body;
    expect(patient.next_cursor).toBe('eyJhZnRlciI6InN5bi1wYXQtMDAwMiJ9');
    expect(patient.data[0]).toMatchObject({
      id: 'syn-pat-0001',
      name: [{ family: 'Ruecker', given: ['Petra', 'Jaden'] }],
      gender: 'female',
      birthDate: '1958-12-12',
    });
    expect(patient.data[0].identifier[0].value).toBe('MRN1007919');
    expect((await service.call('/v1/patients?name=pet%20rue', { key })).body.data.map((found: FhirJson) => found.id)).toEqual(['syn-pat-0001']);

    const observations = (await pageThrough(service, key, '/v1/sandbox/resources/Observation?patient=syn-pat-0001')).items as unknown as {
      code: { coding: { code: string }[] };
      effectiveDateTime: string;
      valueQuantity: { value: number };
      interpretation: { coding: { code: string }[] }[];
    }[];
    const a1c = observations
      .filter((observation) => observation.code.coding[0]!.code === '4548-4')
      .sort((a, b) => (a.effectiveDateTime < b.effectiveDateTime ? -1 : 1));
    expect(
      a1c.map((observation) => [
        observation.effectiveDateTime.slice(5, 7),
        observation.valueQuantity.value,
        observation.interpretation[0]!.coding[0]!.code,
      ]),
    ).toEqual([
      ['02', 9.1, 'H'],
      ['05', 8.6, 'H'],
      ['08', 8.1, 'H'],
    ]);
    const authorization = (await service.call('/v1/sandbox/resources/ClaimResponse?patient=syn-pat-0001', { key })).body.data.find(
      (response: { use: string }) => response.use === 'preauthorization',
    );
    expect(authorization).toMatchObject({ disposition: 'Approved', insurer: { reference: 'Organization/syn-payer-silverharbor' } });
  });
});
