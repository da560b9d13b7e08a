import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type {
  Claim,
  ClaimResponse,
  Condition,
  Coverage,
  ExplanationOfBenefit,
  FhirResource,
  Identifier,
  MedicationRequest,
  Observation,
  Organization,
  Practitioner,
  PractitionerRole,
} from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { findPayerRules, requiresPriorAuth } from '../catalog/payer-rules';
import { isValidNpi, npiFromBase } from '../fixtures/npi';
import { PAYERS } from '../fixtures/payers';
import { FIXTURE_DATA_DIR, loadFhirStore, patientOf } from '../fixtures/store';
import { SYNTHETIC_TAG } from '../fixtures/synthetic';
import { SYSTEM } from '../fixtures/terminology';
import { referencesIn } from './support/fhir-references';
import { fhirSchemaErrors } from './support/fhir-schema';

const store = loadFhirStore();
const all: FhirResource[] = store.supportedTypes.flatMap((type) => [...store.list(type)]);
const ofType = <T extends FhirResource>(type: T['resourceType']) => store.list(type) as readonly T[];
const codes = (concept: { coding?: { system?: string; code?: string }[] } | undefined) => (concept?.coding ?? []).map((coding) => `${coding.system}|${coding.code}`);
const byReference = (reference: string | undefined) => {
  const [type, id] = (reference ?? '').split('/');
  return type && id ? store.read(type, id) : undefined;
};

describe('the synthetic FHIR world', () => {
  it('validates, resource by resource, against the official FHIR R4 JSON schema', () => {
    const failures = all.map((resource) => ({ resource: `${resource.resourceType}/${resource.id}`, errors: fhirSchemaErrors(resource) })).filter((result) => result.errors.length > 0);
    expect(failures).toEqual([]);
    expect(all.length).toBeGreaterThan(3_000);
  });

  it('rejects what the schema forbids, so the validation above can fail', () => {
    expect(fhirSchemaErrors({ resourceType: 'Patient', id: 'x', birthDate: '1980-13-01' })).not.toEqual([]);
    expect(fhirSchemaErrors({ resourceType: 'Observation', id: 'x', status: 'final', code: {}, valueQuantity: { value: 'high' } })).not.toEqual([]);
    expect(fhirSchemaErrors({ resourceType: 'Patient', id: 'x', nickname: 'Al' })).toEqual(['/: must NOT have additional properties (nickname)']);
  });

  it('resolves every reference inside the set, and never across patients', () => {
    const unresolved: string[] = [];
    const crossPatient: string[] = [];
    for (const resource of all) {
      const owner = patientOf(resource);
      for (const reference of referencesIn(resource)) {
        const target = byReference(reference);
        if (!target) unresolved.push(`${resource.resourceType}/${resource.id} -> ${reference}`);
        else if (owner && patientOf(target) && patientOf(target) !== owner) crossPatient.push(`${resource.resourceType}/${resource.id} -> ${reference}`);
      }
    }
    expect(unresolved).toEqual([]);
    expect(crossPatient).toEqual([]);
  });

  it('never gives two resources of a type the same identifier, and tags every resource synthetic', () => {
    const seen = new Map<string, string>();
    const duplicates: string[] = [];
    for (const resource of all) {
      for (const identifier of ((resource as { identifier?: Identifier[] }).identifier ?? [])) {
        const key = `${resource.resourceType} ${identifier.system}|${identifier.value}`;
        if (seen.has(key)) duplicates.push(`${key}: ${seen.get(key)} and ${resource.id}`);
        seen.set(key, resource.id!);
      }
    }
    expect(duplicates).toEqual([]);
    expect(all.filter((resource) => !resource.meta?.tag?.some((tag) => tag.system === SYNTHETIC_TAG.system && tag.code === SYNTHETIC_TAG.code))).toEqual([]);
  });

  it('holds at least 100 patients across ages and both sexes, each with coverage and a visit', () => {
    const patients = store.patients();
    expect(patients.length).toBeGreaterThanOrEqual(100);
    const ages = patients.map((patient) => 2026 - Number(patient.birthDate!.slice(0, 4)));
    expect(ages.filter((age) => age < 18).length).toBeGreaterThan(10);
    expect(ages.filter((age) => age >= 65).length).toBeGreaterThan(10);
    expect(new Set(patients.map((patient) => patient.gender))).toEqual(new Set(['female', 'male']));
    for (const patient of patients) {
      expect(store.listForPatient('Coverage', patient.id!), patient.id).toHaveLength(1);
      expect(store.listForPatient('Encounter', patient.id!).length, patient.id).toBeGreaterThan(0);
      expect(patient.identifier?.[0]?.type?.coding?.[0]?.code).toBe('MR');
    }
  });

  it('gives every clinician a Luhn-valid NPI (80840 prefix) and a NUCC taxonomy', () => {
    expect(npiFromBase('123456789')).toBe('1234567893');
    expect(isValidNpi('1234567893')).toBe(true);
    expect(isValidNpi('1234567890')).toBe(false);
    const npis = [...ofType<Practitioner>('Practitioner'), ...ofType<Organization>('Organization')].flatMap((resource) =>
      (resource.identifier ?? []).filter((identifier) => identifier.system === SYSTEM.npi).map((identifier) => identifier.value!),
    );
    expect(npis.length).toBeGreaterThanOrEqual(15);
    expect(npis.filter((npi) => !isValidNpi(npi))).toEqual([]);
    for (const role of ofType<PractitionerRole>('PractitionerRole')) {
      expect(role.specialty?.[0]?.coding?.[0]).toMatchObject({ system: SYSTEM.nucc, code: expect.stringMatching(/^[0-9]{3}[0-9A-Z]{6}X$/) });
    }
  });

  it('has at least five payers, each with rules, covering patients', () => {
    const payers = ofType<Organization>('Organization').filter((organization) => codes(organization.type?.[0]).includes('http://terminology.hl7.org/CodeSystem/organization-type|pay'));
    expect(payers.length).toBeGreaterThanOrEqual(5);
    expect(payers.map((payer) => payer.id).sort()).toEqual(PAYERS.map((payer) => payer.id).sort());
    for (const payer of payers) expect(findPayerRules(payer.id!), payer.id).toBeDefined();
    const insured = new Set(ofType<Coverage>('Coverage').map((coverage) => coverage.payor[0]!.reference));
    expect(insured.size).toBe(payers.length);
  });

  it('gives a diabetic HbA1c results, metformin and claims that bill the diabetes', () => {
    const diabetics = ofType<Condition>('Condition').filter((condition) => codes(condition.code).includes(`${SYSTEM.icd10cm}|E11.9`)).map((condition) => patientOf(condition)!);
    expect(diabetics.length).toBeGreaterThan(5);
    for (const patientId of diabetics) {
      const a1c = (store.listForPatient('Observation', patientId) as Observation[]).filter((observation) => codes(observation.code).includes('http://loinc.org|4548-4'));
      expect(a1c.length, patientId).toBeGreaterThan(0);
      expect(a1c.every((observation) => observation.valueQuantity?.unit === '%' && observation.referenceRange?.length === 1), patientId).toBe(true);
      const metformin = (store.listForPatient('MedicationRequest', patientId) as MedicationRequest[]).filter((request) => codes(request.medicationCodeableConcept).includes(`${SYSTEM.rxnorm}|860975`));
      expect(metformin.some((request) => request.status === 'active'), patientId).toBe(true);
      const claims = store.listForPatient('Claim', patientId) as Claim[];
      expect(claims.some((claim) => claim.diagnosis?.some((diagnosis) => codes(diagnosis.diagnosisCodeableConcept).includes(`${SYSTEM.icd10cm}|E11.9`))), patientId).toBe(true);
    }
  });

  it('bills every encounter once, and adjudicates each claim with a response and an explanation of benefit', () => {
    const claims = ofType<Claim>('Claim').filter((claim) => claim.use === 'claim');
    const billed = claims.flatMap((claim) => [...new Set((claim.item ?? []).flatMap((item) => item.encounter ?? []).map((encounter) => encounter.reference))]);
    expect(billed.sort()).toEqual(store.list('Encounter').map((encounter) => `Encounter/${encounter.id}`).sort());

    const responses = ofType<ClaimResponse>('ClaimResponse').filter((response) => response.use === 'claim');
    const explanations = ofType<ExplanationOfBenefit>('ExplanationOfBenefit');
    expect(responses.length).toBeGreaterThan(claims.length * 0.9);
    for (const response of responses) {
      const claim = byReference(response.request!.reference) as Claim;
      expect(claim.insurer, response.id).toEqual(response.insurer);
      const explanation = explanations.find((candidate) => candidate.claimResponse?.reference === `ClaimResponse/${response.id}`);
      expect(explanation?.claim?.reference, response.id).toBe(`Claim/${claim.id}`);
      const paid = response.total!.find((total) => codes(total.category).includes(`${SYSTEM.adjudication}|benefit`))!.amount!.value!;
      expect(response.payment?.amount?.value, response.id).toBe(paid);
    }
  });

  it('follows each payer’s rules: listed services carry an authorization or are denied with CARC 197; decisions come within the turnaround', () => {
    let authorized = 0;
    let deniedForMissingAuth = 0;
    for (const response of ofType<ClaimResponse>('ClaimResponse').filter((candidate) => candidate.use === 'claim')) {
      const claim = byReference(response.request!.reference) as Claim;
      const rules = findPayerRules(claim.insurer!.reference!.split('/')[1]!)!;
      claim.item!.forEach((item, index) => {
        const code = item.productOrService.coding![0]!.code!;
        if (!requiresPriorAuth(rules, code)) return;
        const reasons = response.item![index]!.adjudication.flatMap((adjudication) => codes(adjudication.reason));
        if (claim.insurance[0]!.preAuthRef) authorized += 1;
        else {
          expect(reasons, `${claim.id} ${code}`).toContain(`${SYSTEM.carc}|197`);
          deniedForMissingAuth += 1;
        }
      });
    }
    expect(authorized).toBeGreaterThan(0);
    expect(deniedForMissingAuth).toBeGreaterThan(0);

    const PRIMARY_CARE = new Set(['207Q00000X', '207R00000X', '363LF0000X', '208000000X']);
    const specialistOfficeVisits = ofType<Claim>('Claim').filter(
      (claim) =>
        claim.use === 'claim' &&
        !PRIMARY_CARE.has(claim.careTeam![0]!.qualification!.coding![0]!.code!) &&
        claim.item!.some((item) => ['99204', '99213', '99214'].includes(item.productOrService.coding![0]!.code!)),
    );
    const needingReferral = specialistOfficeVisits.filter((claim) => findPayerRules(claim.insurer!.reference!.split('/')[1]!)!.eligibility.referral_required_for_specialist);
    expect(needingReferral.length).toBeGreaterThan(0);
    for (const claim of needingReferral) {
      const referral = byReference(claim.referral?.reference);
      expect(referral, claim.id).toMatchObject({ resourceType: 'ServiceRequest', category: [{ coding: [{ code: '3457005' }] }] });
    }

    const decisions = ofType<ClaimResponse>('ClaimResponse').filter((response) => response.use === 'preauthorization');
    expect(decisions.some((decision) => decision.preAuthRef)).toBe(true);
    expect(decisions.some((decision) => decision.disposition?.startsWith('Denied'))).toBe(true);
    for (const decision of decisions) {
      const request = byReference(decision.request!.reference) as Claim;
      const rules = findPayerRules(decision.insurer.reference!.split('/')[1]!)!;
      const hours = (Date.parse(decision.created) - Date.parse(request.created)) / 3_600_000;
      expect(hours, decision.id).toBeLessThanOrEqual(rules.prior_authorization.standard_turnaround_hours);
    }
  });

  it('regenerates byte-identical files with npm run fixtures', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'fixtures-'));
    try {
      await promisify(execFile)('npm', ['run', '--silent', 'fixtures', '--', directory], { cwd: join(FIXTURE_DATA_DIR, '..', '..') });
      const committed = readdirSync(FIXTURE_DATA_DIR).sort();
      expect(readdirSync(directory).sort()).toEqual(committed);
      for (const name of committed) {
        expect(readFileSync(join(directory, name)).equals(readFileSync(join(FIXTURE_DATA_DIR, name))), name).toBe(true);
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
