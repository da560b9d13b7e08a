import type { Bundle, PractitionerRole, VerificationResult } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { scenarios } from '../../catalog/scenarios';
import { isValidNpi } from '../../fixtures/npi';
import { loadFhirStore } from '../../fixtures/store';
import { type CredentialingFile, credentialingFiles, isValidDeaNumber, VARIATIONS } from '../../interop/credentialing/file';
import { buildStepResources } from '../../scenarios/content';
import { resourceStamp } from '../../scenarios/ids';
import { planRun } from '../../scenarios/plan';
import { fhirErrors } from '../support/fhir-validator';

/** The credentialing files as built; credentialing.test.ts checks the API serves exactly these. */
const fhirStore = loadFhirStore();
const files: CredentialingFile[] = credentialingFiles(fhirStore);

const file = (id: string) => files.find((candidate) => candidate.practitioner_id === id)!;
const check = (candidate: CredentialingFile, id: string) => candidate.verifications.find((verification) => verification.id === id)!;

/** R4's failure-action code system: the only codes failureAction may carry. */
const FAILURE_ACTIONS = ['fatal', 'warn', 'rec-only', 'none'];

/**
 * What HL7 NDH's Verification profile (ndh-Verification) requires beyond R4: target, need, status
 * date, validation type and process, failure action from its code system, the primary source as a
 * reference to an Organization, the attestation (who, on behalf of, how, when) and the validator.
 */
function expectNdhElements(verification: VerificationResult, practitionerId: string): void {
  const where = verification.id;
  expect(verification.target, where).toEqual([{ reference: `Practitioner/${practitionerId}` }]);
  for (const element of ['need', 'statusDate', 'validationType', 'validationProcess', 'failureAction', 'attestation', 'validator'] as const) {
    expect(verification[element], `${where} ${element}`).toBeDefined();
  }
  expect(verification.failureAction!.coding![0]!.system, where).toBe('http://terminology.hl7.org/CodeSystem/failure-action');
  expect(FAILURE_ACTIONS, where).toContain(verification.failureAction!.coding![0]!.code);
  const contained = new Map((verification.contained ?? []).map((resource) => [`#${resource.id}`, resource]));
  const organization = (reference: string | undefined) => contained.get(reference ?? '');
  for (const source of verification.primarySource!) {
    expect(organization(source.who?.reference), `${where} primarySource.who`).toMatchObject({
      resourceType: 'Organization',
      name: expect.any(String),
    });
    expect(source.type?.[0]?.coding?.[0]?.system, where).toBe('http://terminology.hl7.org/CodeSystem/primary-source-type');
    expect(source.validationStatus, where).toBeDefined();
  }
  expect(verification.attestation).toMatchObject({
    who: { reference: `Practitioner/${practitionerId}` },
    onBehalfOf: { reference: expect.stringMatching(/^Organization\//) },
    communicationMethod: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/verificationresult-communication-method' }] },
    date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
  });
  expect(organization(verification.validator![0]!.organization.reference), `${where} validator`).toMatchObject({ resourceType: 'Organization' });
}

describe('the credentialing files of the synthetic world', () => {
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
        expect(fhirErrors(verification), verification.id).toEqual([]);
        expect(verification).toMatchObject({
          target: [{ reference: `Practitioner/${candidate.practitioner_id}` }],
          validationType: { coding: [{ code: 'primary' }] },
          frequency: { repeat: { period: 36, periodUnit: 'mo' } },
          meta: { tag: [{ code: 'synthetic' }] },
        });
        expect(verification.nextScheduled).toBe(candidate.recredential_due_on);
        expectNdhElements(verification, candidate.practitioner_id);
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
    expect(check(lapsed, 'syn-vr-009-license-or')).toMatchObject({
      status: 'val-fail',
      failureAction: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/failure-action', code: 'fatal' }] },
      primarySource: [{ validationStatus: { coding: [{ code: 'failed' }] } }],
    });

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
    const bundle = findEvent('credentialing.practitioner.verified')!.sampleResource(fhirStore) as Bundle;
    expect(fhirErrors(bundle)).toEqual([]);
    expect(bundle.type).toBe('collection');
    const resources = bundle.entry!.map((entry) => entry.resource!);
    expect(resources.slice(0, 2).map((resource) => `${resource.resourceType}/${resource.id}`)).toEqual([
      'Practitioner/syn-prac-001',
      'PractitionerRole/syn-role-001',
    ]);
    expect((resources.slice(2) as VerificationResult[]).map((resource) => resource.id)).toEqual(
      file('syn-prac-001').verifications.map((verification) => verification.id),
    );
    for (const verification of resources.slice(2) as VerificationResult[]) {
      const organization = (resources[1] as PractitionerRole).organization!.reference!;
      expect(verification.attestation!.onBehalfOf!.reference).toBe(organization);
      expect(fhirStore.read('Organization', organization.split('/')[1]!)).toBeDefined();
    }
  });

  it('gives the practitioner_credentialing scenario the same event: practitioner, role and NDH VerificationResults, all validated', () => {
    const scenario = scenarios.find((candidate) => candidate.id === 'practitioner_credentialing')!;
    const planned = planRun({ scenario, patientId: 'syn-pat-0001', outcome: undefined, store: fhirStore });
    if (!('plan' in planned)) throw new Error(JSON.stringify(planned));
    const content = {
      store: fhirStore,
      plan: planned.plan,
      stamp: resourceStamp({ runId: 'run_01jd8x3m0ae8v9q2w1f4k7t5zr', scenarioId: scenario.id, patientId: 'syn-pat-0001', seed: null }),
      simulatedStart: new Date('2026-03-02T09:00:00Z'),
    };
    const [built] = buildStepResources(content, planned.plan.steps.find((step) => step.id === 'verified')!);
    expect(built!.event).toBe('credentialing.practitioner.verified');
    const bundle = built!.resource as Bundle;
    expect(fhirErrors(bundle)).toEqual([]);
    const resources = bundle.entry!.map((entry) => entry.resource!);
    expect(resources.slice(0, 2).map((resource) => resource.resourceType)).toEqual(['Practitioner', 'PractitionerRole']);
    const verifications = resources.slice(2) as VerificationResult[];
    expect(verifications.map((verification) => verification.status)).toEqual(Array(6).fill('validated'));
    for (const verification of verifications) expectNdhElements(verification, resources[0]!.id!);
  });
});
