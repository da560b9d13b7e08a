import type { Bundle, VerificationResult } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { isValidNpi } from '../../fixtures/npi';
import { type CredentialingFile, isValidDeaNumber, VARIATIONS } from '../../interop/credentialing/file';
import { fhirSchemaErrors } from '../support/fhir-schema';
import { pageThrough } from '../support/paging';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let key: string;
let files: CredentialingFile[];
beforeAll(async () => {
  service = await startTestService();
  ({ key } = await service.newTenant());
  files = (await pageThrough(service, key, '/v1/sandbox/credentialing/practitioners?limit=4')).items as unknown as CredentialingFile[];
});
afterAll(() => service.stop());

const file = (id: string) => files.find((candidate) => candidate.practitioner_id === id)!;
const check = (candidate: CredentialingFile, id: string) => candidate.verifications.find((verification) => verification.id === id)!;

describe('GET /v1/sandbox/credentialing/practitioners', () => {
  it("lists every practitioner's file, and reads each one alone", async () => {
    expect(files.map((candidate) => candidate.practitioner_id)).toEqual(
      service.fhirStore.list('Practitioner').map((practitioner) => practitioner.id),
    );
    const one = await service.call('/v1/sandbox/credentialing/practitioners/syn-prac-001', { key });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(file('syn-prac-001'));
    const flagged = await service.call('/v1/sandbox/credentialing/practitioners?status=flagged', { key });
    expect(flagged.body.data.map((candidate: CredentialingFile) => candidate.practitioner_id)).toEqual(['syn-prac-009', 'syn-prac-012']);
  });

  it('gives each an NPPES-shaped NPI record: Luhn-valid, individual, NUCC taxonomies with one primary, addresses', () => {
    for (const candidate of files) {
      expect(isValidNpi(candidate.npi.number), candidate.practitioner_id).toBe(true);
      expect(candidate.npi).toMatchObject({ enumeration_type: 'NPI-1', basic: { status: 'A', sole_proprietor: 'NO' } });
      expect(candidate.npi.taxonomies.filter((taxonomy) => taxonomy.primary)).toHaveLength(1);
      for (const taxonomy of candidate.npi.taxonomies) expect(taxonomy.code).toMatch(/^[0-9]{3}[0-9A-Z]{6}X$/);
      expect(candidate.npi.addresses.map((address) => address.address_purpose)).toEqual(['LOCATION', 'MAILING']);
      if (candidate.dea) expect(isValidDeaNumber(candidate.dea.number), candidate.dea.number).toBe(true);
      expect(candidate.recredential_due_on.slice(0, 4)).toBe(String(Number(candidate.last_credentialed_on.slice(0, 4)) + 3));
    }
    expect(file('syn-prac-014').npi.taxonomies.map((taxonomy) => [taxonomy.code, taxonomy.primary])).toEqual([
      ['208M00000X', true],
      ['207R00000X', false],
    ]);
  });

  it('records every primary-source check as a valid FHIR R4 VerificationResult on the 36-month cycle', () => {
    for (const candidate of files) {
      for (const verification of candidate.verifications) {
        expect(fhirSchemaErrors(verification), verification.id).toEqual([]);
        expect(verification).toMatchObject({
          target: [{ reference: `Practitioner/${candidate.practitioner_id}` }],
          validationType: { coding: [{ code: 'primary' }] },
          frequency: { repeat: { period: 36, periodUnit: 'mo' } },
          meta: { tag: [{ code: 'synthetic' }] },
        });
        expect(verification.nextScheduled).toBe(candidate.recredential_due_on);
        expect(verification.primarySource![0]!.who!.display).toEqual(expect.any(String));
      }
      const kinds = new Set(
        candidate.verifications.map((verification) =>
          verification
            .id!.split('-')
            .slice(3)
            .join('-')
            .replace(/-(or|wa)$/, ''),
        ),
      );
      expect([...kinds].sort(), candidate.practitioner_id).toEqual(
        ['npi', 'license', ...(candidate.dea ? ['dea'] : []), 'board-certification', 'oig-exclusion', 'sam-exclusion', 'medicare-enrollment'].sort(),
      );
    }
  });

  it('varies as documented: an expired license flags, one practitioner is excluded, one file is still in progress', () => {
    expect(Object.keys(VARIATIONS).sort()).toEqual(['syn-prac-003', 'syn-prac-007', 'syn-prac-009', 'syn-prac-011', 'syn-prac-012']);
    const statuses = Object.fromEntries(files.map((candidate) => [candidate.practitioner_id, candidate.status]));
    expect(Object.entries(statuses).filter(([, status]) => status !== 'verified')).toEqual([
      ['syn-prac-007', 'in_progress'],
      ['syn-prac-009', 'flagged'],
      ['syn-prac-012', 'flagged'],
    ]);
    for (const candidate of files.filter((entry) => entry.status === 'verified')) expect(candidate.reasons).toEqual([]);

    const lapsed = file('syn-prac-009');
    expect(lapsed.licenses[0]).toMatchObject({ state: 'OR', status: 'expired', expires_on: '2025-11-30', practice_state: true });
    expect(lapsed.reasons).toEqual([expect.stringContaining('OR license')]);
    expect(check(lapsed, 'syn-vr-009-license-or')).toMatchObject({ status: 'val-fail', failureAction: { coding: [{ code: 'hld' }] } });

    const elsewhere = file('syn-prac-003');
    expect(elsewhere.status).toBe('verified');
    expect(elsewhere.licenses.map((license) => [license.state, license.status])).toEqual([
      ['OR', 'active'],
      ['WA', 'expired'],
    ]);
    expect(elsewhere.notes).toEqual([expect.stringContaining('no longer practises in WA')]);

    const excluded = file('syn-prac-012');
    expect(excluded.exclusions.oig_leie).toMatchObject({ excluded: true, exclusion_type: '1128(b)(4)' });
    expect(excluded.exclusions.sam.status).toBe('active_exclusion');
    expect(excluded.reasons).toHaveLength(2);
    expect(check(excluded, 'syn-vr-012-oig-exclusion').status).toBe('val-fail');

    const pending = file('syn-prac-007');
    expect(pending.reasons).toEqual([expect.stringContaining('Board certification'), expect.stringContaining('Medicare')]);
    expect(check(pending, 'syn-vr-007-board-certification')).toMatchObject({
      status: 'in-process',
      primarySource: [{ validationStatus: { coding: [{ code: 'unknown' }] } }],
    });
    expect(pending.medicare).toMatchObject({ status: 'pending', ptan: null });
    expect(file('syn-prac-011').dea).toBeNull();
  });

  it("carries the file in the credentialing.practitioner.verified event's sample", () => {
    const bundle = findEvent('credentialing.practitioner.verified')!.sampleResource(service.fhirStore) as Bundle;
    expect(fhirSchemaErrors(bundle)).toEqual([]);
    expect(bundle.type).toBe('collection');
    const resources = bundle.entry!.map((entry) => entry.resource!);
    expect(resources.slice(0, 2).map((resource) => `${resource.resourceType}/${resource.id}`)).toEqual([
      'Practitioner/syn-prac-001',
      'PractitionerRole/syn-role-001',
    ]);
    expect((resources.slice(2) as VerificationResult[]).map((resource) => resource.id)).toEqual(
      file('syn-prac-001').verifications.map((verification) => verification.id),
    );
  });

  it('answers an unknown practitioner with a 404 problem, and a bad filter with a 422', async () => {
    const unknown = await service.call('/v1/sandbox/credentialing/practitioners/syn-prac-999', { key });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'not_found', detail: expect.stringContaining('syn-prac-999') });
    const bad = await service.call('/v1/sandbox/credentialing/practitioners?status=lapsed&limit=0', { key });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['query.limit', 'query.status']);
  });
});
