import type { Claim, ClaimResponse, ExplanationOfBenefit } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { adjudicateClaim, type ClaimToAdjudicate, DeductibleTracker } from '../../claims/adjudication';
import { findPayerRules, requiresPriorAuth } from '../../claims/payer-rules';
import { SERVICES } from '../../fhir/terminology';
import { loadFhirStore } from '../../fixtures/store';

const alderpeak = findPayerRules('syn-payer-alderpeak')!; // deductible 1,500, coinsurance 20 %, copays 25 / 50 / 250, allows 68 %
const line = (key: keyof typeof SERVICES, quantity = 1) => ({ code: SERVICES[key].code, unitCharge: SERVICES[key].charge, quantity });
const claimOf = (overrides: Partial<ClaimToAdjudicate>): ClaimToAdjudicate => ({
  rules: alderpeak,
  kind: 'professional',
  visit: 'primary_care',
  serviceYear: '2025',
  lines: [],
  ...overrides,
});

describe('the adjudication engine (claims/adjudication.ts)', () => {
  it('charges the copay of the visit kind on an office visit and covers a lab in full', () => {
    const primary = adjudicateClaim(claimOf({ lines: [line('officeVisitModerate'), line('hba1c')] }), new DeductibleTracker());
    expect(primary.lines.map((adjudicated) => [adjudicated.copay, adjudicated.memberShare])).toEqual([
      [25, 25],
      [0, 0],
    ]);
    const specialist = adjudicateClaim(claimOf({ visit: 'specialist', lines: [line('officeVisitModerate')] }), new DeductibleTracker());
    expect(specialist.memberShare).toBe(50);
    const emergency = adjudicateClaim(claimOf({ visit: 'emergency', lines: [line('emergencyModerate')] }), new DeductibleTracker());
    expect(emergency.memberShare).toBe(250);
  });

  it('meets the deductible first, through the year, then files coinsurance as coinsurance', () => {
    const deductibles = new DeductibleTracker();
    // 4,200 × 68 % = 2,856 allowed: 1,500 deductible, then 20 % of 1,356 = 271.20.
    const first = adjudicateClaim(claimOf({ visit: 'specialist', lines: [line('mriLumbar', 3)], authorization: 'AUTH-1' }), deductibles);
    expect(first.lines[0]).toMatchObject({ allowed: 2856, deductible: 1500, coinsurance: 271.2, copay: 0, memberShare: 1771.2, paid: 1084.8 });
    const codes = first.lines[0]!.adjudication.map((entry) => entry.category.coding![0]!.code);
    expect(codes).toEqual(['submitted', 'eligible', 'deductible', 'coinsurance', 'memberliability', 'benefit']);
    expect(first.lines[0]!.adjudication.find((entry) => entry.category.coding![0]!.code === 'coinsurance')!.category.coding![0]!.system).toBe(
      'http://hl7.org/fhir/us/carin-bb/CodeSystem/C4BBAdjudication',
    );
    // The deductible is met for 2025: the next claim that year pays coinsurance only; the next year starts afresh.
    const second = adjudicateClaim(claimOf({ visit: 'specialist', lines: [line('kneeInjection')] }), deductibles);
    expect(second.lines[0]).toMatchObject({ allowed: 149.6, deductible: 0, coinsurance: 29.92 });
    const nextYear = adjudicateClaim(claimOf({ serviceYear: '2026', visit: 'specialist', lines: [line('kneeInjection')] }), deductibles);
    expect(nextYear.lines[0]!.deductible).toBe(149.6);
  });

  it('denies the line that needed an authorization, and only that line, when none is on file', () => {
    expect(requiresPriorAuth(alderpeak, SERVICES.mriLumbar.code.code)).toBe(true);
    const claim = claimOf({ visit: 'outpatient_hospital', lines: [line('mriLumbar'), line('kneeInjection')] });
    const missing = adjudicateClaim(claim, new DeductibleTracker());
    expect(missing.outcome).toBe('partially_paid');
    expect(missing.lines.map((adjudicated) => adjudicated.denial)).toEqual(['authorizationAbsent', undefined]);
    expect(missing.lines[0]!.adjudication.find((entry) => entry.reason)!.reason!.coding![0]!.code).toBe('197');
    expect(adjudicateClaim({ ...claim, authorization: 'AUTH-1' }, new DeductibleTracker()).outcome).toBe('paid');
    expect(adjudicateClaim({ ...claim, claimDenial: 'missingInformation' }, new DeductibleTracker()).outcome).toBe('denied');
  });

  it('keeps professional and institutional lines apart: no clinician E/M on an institutional claim, revenue codes only there', () => {
    const revenue = { system: 'https://www.nubc.org/CodeSystem/RevenueCodes', code: '0610', display: 'MRI - general' };
    expect(() =>
      adjudicateClaim(claimOf({ kind: 'institutional', visit: 'inpatient', lines: [line('hospitalInitial')] }), new DeductibleTracker()),
    ).toThrow(/professional claim/);
    expect(() => adjudicateClaim(claimOf({ kind: 'institutional', lines: [line('kneeInjection')] }), new DeductibleTracker())).toThrow(
      /revenue code/,
    );
    expect(() => adjudicateClaim(claimOf({ lines: [{ ...line('mriLumbar'), revenue }] }), new DeductibleTracker())).toThrow(/no revenue code/);
    const facility = adjudicateClaim(
      claimOf({ kind: 'institutional', visit: 'outpatient_hospital', lines: [{ ...line('mriLumbar'), revenue }], authorization: 'AUTH-1' }),
      new DeductibleTracker(),
    );
    expect(facility.outcome).toBe('paid');
  });
});

describe("the world's revenue cycle runs on the same engine", () => {
  const store = loadFhirStore();
  const responses = store.list('ClaimResponse').filter((response) => (response as ClaimResponse).use === 'claim') as ClaimResponse[];
  const amount = (entries: { category: { coding?: { code?: string }[] }; amount?: { value?: number } }[] | undefined, code: string) =>
    (entries ?? []).filter((entry) => entry.category.coding?.[0]?.code === code).reduce((sum, entry) => sum + (entry.amount?.value ?? 0), 0);

  it('never files coinsurance as a copay or a percentage, and every line balances: eligible = member liability + benefit', () => {
    expect(responses.length).toBeGreaterThan(100);
    for (const response of responses) {
      for (const item of response.item ?? []) {
        const codes = item.adjudication.map((entry) => entry.category.coding![0]!.code);
        expect(codes, response.id).not.toContain('eligpercent');
        const share = amount(item.adjudication, 'deductible') + amount(item.adjudication, 'coinsurance') + amount(item.adjudication, 'copay');
        expect(Math.round(share * 100) / 100, response.id).toBe(amount(item.adjudication, 'memberliability'));
        expect(Math.round((amount(item.adjudication, 'memberliability') + amount(item.adjudication, 'benefit')) * 100) / 100, response.id).toBe(
          amount(item.adjudication, 'eligible'),
        );
      }
    }
  });

  it("never takes more deductible from a member in a year than the payer's annual deductible", () => {
    const taken = new Map<string, number>();
    for (const response of responses) {
      const claim = store.read('Claim', response.request!.reference!.split('/')[1]!) as Claim;
      const key = `${response.patient.reference}|${response.insurer!.reference}|${claim.billablePeriod!.start!.slice(0, 4)}`;
      taken.set(key, (taken.get(key) ?? 0) + (response.item ?? []).reduce((sum, item) => sum + amount(item.adjudication, 'deductible'), 0));
    }
    for (const [key, total] of taken) {
      const rules = findPayerRules(key.split('|')[1]!.replace('Organization/', ''))!;
      expect(total, key).toBeLessThanOrEqual(rules.eligibility.cost_sharing.annual_deductible + 0.005);
    }
  });

  it('denies with CARC 197 exactly the listed services billed without an authorization', () => {
    let denials = 0;
    for (const response of responses) {
      const claim = store.read('Claim', response.request!.reference!.split('/')[1]!) as Claim;
      const rules = findPayerRules(claim.insurer!.reference!.replace('Organization/', ''))!;
      const authorized = (claim.insurance[0]!.preAuthRef ?? []).length > 0;
      response.item!.forEach((item, index) => {
        const denied = item.adjudication.some((entry) => entry.reason?.coding?.[0]?.code === '197');
        const code = claim.item![index]!.productOrService.coding![0]!.code!;
        expect(denied, `${claim.id} ${code}`).toBe(!authorized && requiresPriorAuth(rules, code));
        if (denied) denials += 1;
      });
    }
    // The world has an MRI scanned without asking (the "not requested" path), so the rule is exercised.
    expect(denials).toBeGreaterThan(0);
  });

  it('gives Claim, ClaimResponse and ExplanationOfBenefit their own business identifiers', () => {
    const identifiers = [...store.list('Claim'), ...store.list('ClaimResponse'), ...store.list('ExplanationOfBenefit')].map((resource) => {
      const identifier = (resource as Claim | ClaimResponse | ExplanationOfBenefit).identifier![0]!;
      return `${identifier.system}|${identifier.value}`;
    });
    expect(new Set(identifiers).size).toBe(identifiers.length);
  });
});
