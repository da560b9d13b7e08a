import { describe, expect, it } from 'vitest';
import { eventCatalog } from '../../catalog/events';
import { outcomesOf, scenarios } from '../../catalog/scenarios';
import type { ScenarioOutcome } from '../../catalog/scenarios/definition';
import { findPayerRules, type PayerRules, requiresPriorAuth } from '../../claims/payer-rules';
import { PAS_PROFILE, reviewActionOf } from '../../claims/prior-authorization';
import { loadFhirStore } from '../../fixtures/store';
import { isId } from '../../platform/ids';
import { buildStepResources, canBuild } from '../../scenarios/content';
import { resourceStamp, stepDeliveryId, stepEventId } from '../../scenarios/ids';
import { planRun, type RunPlan } from '../../scenarios/plan';
import { fhirErrors } from '../support/fhir-validator';

const store = loadFhirStore();
const runId = 'run_01jd8x3m0ae8v9q2w1f4k7t5zr';

function planFor(scenarioId: string, outcome?: ScenarioOutcome, patientId = 'syn-pat-0001'): RunPlan {
  const result = planRun({ scenario: scenarios.find((scenario) => scenario.id === scenarioId)!, patientId, outcome, store });
  if (!('plan' in result)) throw new Error(JSON.stringify(result));
  return result.plan;
}

function resourcesOf(plan: RunPlan, seed: string | null = null) {
  const content = {
    store,
    plan,
    stamp: resourceStamp({ runId, scenarioId: plan.scenario_id, patientId: plan.patient_id, seed }),
    simulatedStart: new Date('2026-03-02T09:00:00Z'),
  };
  return plan.steps
    .filter((step) => !step.skipped)
    .flatMap((step) => buildStepResources(content, step).map((built) => ({ step: step.id, ...built })));
}

/** Every resource a resource holds: itself, a Bundle's entries, contained resources. */
function allResources(resource: any): any[] {
  return [resource, ...(resource.entry ?? []).flatMap((entry: any) => allResources(entry.resource)), ...(resource.contained ?? [])];
}

/** Every scenario with every outcome it takes. */
const cases: [string, ScenarioOutcome | undefined][] = scenarios.flatMap((scenario) => {
  const outcomes = outcomesOf(scenario.id);
  return outcomes.length ? outcomes.map((outcome): [string, ScenarioOutcome | undefined] => [scenario.id, outcome]) : [[scenario.id, undefined]];
});

describe('per-run FHIR content', () => {
  it('has a builder for every event a scenario emits (in any outcome), and every one is in the catalog', () => {
    const emitted = new Set([
      'prior_auth.request.approved',
      'prior_auth.request.denied',
      ...scenarios.flatMap((scenario) => scenario.steps.flatMap((step) => step.emits)),
    ]);
    for (const event of emitted) {
      expect(canBuild(event), event).toBe(true);
      expect(eventCatalog.has(event), event).toBe(true);
    }
  });

  it.each(cases)(
    '%s (%s): every resource is valid R4 and its claimed profiles, tagged synthetic, stamped with the run and resolves to the world',
    (scenarioId, outcome) => {
      const plan = planFor(scenarioId, outcome);
      const built = resourcesOf(plan);
      expect(built.length).toBeGreaterThan(0);
      for (const { event, resource } of built) {
        expect(fhirErrors(resource), `${event}`).toEqual([]);
        for (const inner of allResources(resource)) {
          expect(inner.meta.tag, `${event} ${inner.resourceType}`).toContainEqual(expect.objectContaining({ code: 'synthetic' }));
          // A contained resource is named inside its container only (`#more-information`).
          if (!((resource as any).contained ?? []).includes(inner))
            expect(inner.id, `${event} ${inner.resourceType}`).toMatch(/^run-01jd8x3m0ae8v9q2w1f4k7t5zr-[a-z0-9-]+$/);
        }
        // Every reference into the world resolves; references to the run's own resources carry its stamp.
        const references = [...JSON.stringify(resource).matchAll(/"reference":"([A-Za-z]+)\/([^"]+)"/g)];
        for (const [, type, id] of references) {
          if (id!.startsWith('run-')) continue;
          expect(store.read(type!, id!), `${event} → ${type}/${id}`).toBeDefined();
        }
      }
    },
  );

  it('the same seed gives the same resources; no seed stamps them with the run', () => {
    const plan = planFor('prior_auth_approved_after_pend');
    const first = resourcesOf(plan, 'demo-42');
    const again = resourcesOf(plan, 'demo-42');
    expect(again).toEqual(first);
    expect(first[0]!.resource.id).toMatch(/^seed-[0-9a-f]{16}-order$/);
    expect(resourcesOf(plan)[0]!.resource.id).toBe('run-01jd8x3m0ae8v9q2w1f4k7t5zr-order');
  });

  it('prior auth follows PAS 2.2.1: the request and every decision claim the PAS profiles; a pend is outcome complete with A4', () => {
    const byEvent = new Map(
      resourcesOf(planFor('prior_auth_approved_after_pend', 'pended_then_approved')).map((built) => [built.event, built.resource as any]),
    );
    const submitted = byEvent.get('prior_auth.request.submitted');
    expect(submitted).toMatchObject({
      resourceType: 'Claim',
      meta: { profile: [PAS_PROFILE.claim] },
      use: 'preauthorization',
      insurance: [{ coverage: { reference: 'Coverage/syn-cov-0001-001' } }],
      careTeam: [
        {
          extension: [{ url: expect.stringMatching(/extension-careTeamClaimScope$/), valueBoolean: true }],
          provider: { reference: 'PractitionerRole/syn-role-009' },
        },
      ],
      item: [
        {
          category: { coding: [{ system: 'https://codesystem.x12.org/005010/1365', code: '62' }] },
          locationCodeableConcept: { coding: [{ code: '22' }] },
        },
      ],
    });
    expect(submitted.item[0].extension.map((extension: any) => extension.url.split('/').at(-1))).toEqual([
      'extension-serviceItemRequestType',
      'extension-certificationType',
    ]);

    const pended = byEvent.get('prior_auth.request.pended');
    expect(pended).toMatchObject({
      resourceType: 'ClaimResponse',
      meta: { profile: [PAS_PROFILE.claimResponse] },
      outcome: 'complete',
      communicationRequest: [{ reference: '#more-information' }],
    });
    expect(reviewActionOf(pended)).toBe('A4');
    expect(pended.preAuthRef).toBeUndefined();
    // The payer asks (requester), the provider sends, the category is an X12 PWK01 attachment report type.
    expect(pended.contained[0]).toMatchObject({
      resourceType: 'CommunicationRequest',
      meta: { profile: [PAS_PROFILE.communicationRequest] },
      identifier: [{ system: expect.any(String), value: expect.any(String) }],
      category: [{ coding: [{ system: 'https://codesystem.x12.org/005010/755', code: 'RR' }] }],
      requester: { reference: 'Organization/syn-payer-silverharbor' },
      sender: { reference: 'Organization/syn-prov-northgate' },
    });

    const approved = byEvent.get('prior_auth.request.approved');
    expect(approved).toMatchObject({
      outcome: 'complete',
      preAuthRef: expect.any(String),
      preAuthPeriod: { start: expect.any(String), end: expect.any(String) },
    });
    expect(reviewActionOf(approved)).toBe('A1');
    expect(new Set([submitted, pended, approved].map((resource) => resource.identifier[0].value)).size).toBe(3);
  });

  it.each([
    ['denied', 'prior_auth.request.denied', 'A3'],
    ['pended_then_denied', 'prior_auth.request.denied', 'A3'],
    ['approved', 'prior_auth.request.approved', 'A1'],
    ['modified', 'prior_auth.request.approved', 'A6'],
  ] as const)('prior auth %s: %s carries review action %s', (outcome, event, action) => {
    const decision = resourcesOf(planFor('prior_auth_approved_after_pend', outcome)).find((built) => built.event === event)!.resource as any;
    expect(decision).toMatchObject({ outcome: 'complete', meta: { profile: [PAS_PROFILE.claimResponse] } });
    expect(reviewActionOf(decision)).toBe(action);
    const review = decision.item[0].adjudication[0];
    const reason = review.extension[0].extension.find((extension: any) => extension.url === 'reasonCode');
    if (action === 'A3') {
      // An X12 278 review decision reason (code source 886) in the review action, never a claim payment reason (CARC).
      expect(reason.valueCodeableConcept.coding[0].system).toBe('https://codesystem.x12.org/external/886');
      expect(review.reason).toBeUndefined();
      expect(decision.preAuthRef).toBeUndefined();
    } else {
      expect(reason).toBeUndefined();
      expect(decision.preAuthRef).toEqual(expect.any(String));
    }
  });
});

/** The member's share the payer's cost-sharing rules give for one paid line (formulas from claims/payer-rules.ts). */
function expectedShare(rules: PayerRules, code: string, charge: number, visit: 'primary_care' | 'specialist') {
  const costSharing = rules.eligibility.cost_sharing;
  const allowed = Math.round(charge * rules.claims.allowed_percent_of_charges) / 100;
  const preventiveOrLab = /^8\d{4}$/.test(code) && costSharing.preventive_covered_in_full;
  if (preventiveOrLab) return { allowed, share: 0, coinsurance: 0 };
  if (/^992[01]\d$/.test(code)) {
    const copay = visit === 'primary_care' ? costSharing.primary_care_copay : costSharing.specialist_copay;
    return { allowed, share: Math.min(allowed, copay), coinsurance: 0 };
  }
  const deductible = Math.min(allowed, costSharing.annual_deductible);
  const coinsurance = Math.round((allowed - deductible) * costSharing.coinsurance_percent) / 100;
  return { allowed, share: Math.round((deductible + coinsurance) * 100) / 100, coinsurance };
}

const amountOf = (adjudications: any[], code: string) => adjudications.find((entry) => entry.category.coding[0].code === code)?.amount?.value ?? 0;

/** One patient of each payer that has one in the world. */
const patientOfEachPayer = [
  ...new Map(
    store
      .list('Coverage')
      .filter((coverage: any) => coverage.status === 'active')
      .map((coverage: any) => [coverage.payor[0].reference.replace('Organization/', ''), coverage.beneficiary.reference.replace('Patient/', '')]),
  ),
];

describe('claims and eligibility in scenario runs (one adjudication engine, ces-1, distinct identifiers)', () => {
  it.each(patientOfEachPayer)(
    '%s: an office visit pays the primary-care copay and a lab in full; the eligibility response quotes that copay (ces-1 shape)',
    (payerId, patientId) => {
      const rules = findPayerRules(payerId)!;
      const built = resourcesOf(planFor('outpatient_visit_to_payment', 'paid', patientId));
      const eligibility = built.find((entry) => entry.event === 'eligibility.check.completed')!.resource as any;
      const response = eligibility.entry.find((entry: any) => entry.resource.resourceType === 'CoverageEligibilityResponse').resource;
      for (const item of response.insurance[0].item)
        expect(Boolean(item.category) !== Boolean(item.productOrService), JSON.stringify(item)).toBe(true);
      const planItem = response.insurance[0].item.find((item: any) => item.category);
      expect(planItem.benefit.find((benefit: any) => benefit.type.coding[0].code === 'copay').allowedMoney.value).toBe(
        rules.eligibility.cost_sharing.primary_care_copay,
      );

      const adjudicated = built.find((entry) => entry.event === 'claims.claim.adjudicated')!.resource as any;
      const claimResponse = adjudicated.entry[0].resource;
      const [visit, lab] = claimResponse.item;
      const visitShare = expectedShare(rules, '99214', 210, 'primary_care');
      expect(amountOf(visit.adjudication, 'eligible')).toBe(visitShare.allowed);
      expect(amountOf(visit.adjudication, 'copay')).toBe(visitShare.share);
      expect(amountOf(visit.adjudication, 'benefit')).toBe(Math.round((visitShare.allowed - visitShare.share) * 100) / 100);
      expect(amountOf(lab.adjudication, 'memberliability')).toBe(0);
    },
  );

  it.each(patientOfEachPayer.filter(([payerId]) => requiresPriorAuth(findPayerRules(payerId)!, '73721')))(
    '%s: missing authorization, partially paid: the MRI that needed it is denied (CARC 197), the injection paid with deductible and coinsurance',
    (payerId, patientId) => {
      const rules = findPayerRules(payerId)!;
      const built = resourcesOf(planFor('claim_denied_missing_auth', 'partially_paid', patientId));
      const claimResponse = (built.find((entry) => entry.event === 'claims.claim.adjudicated')!.resource as any).entry[0].resource;
      const [mri, injection] = claimResponse.item;
      expect(mri.adjudication.find((entry: any) => entry.reason)?.reason.coding[0].code).toBe('197');
      expect(amountOf(mri.adjudication, 'benefit')).toBe(0);
      const expected = expectedShare(rules, '20610', 220, 'specialist');
      expect(injection.adjudication.some((entry: any) => entry.reason)).toBe(false);
      expect(amountOf(injection.adjudication, 'memberliability')).toBe(expected.share);
      // Coinsurance is filed as coinsurance (CARIN BB), never as a copay.
      expect(amountOf(injection.adjudication, 'coinsurance')).toBe(expected.coinsurance);
      expect(amountOf(injection.adjudication, 'copay')).toBe(0);
      expect(claimResponse.payment?.amount.value ?? 0).toBe(Math.round((expected.allowed - expected.share) * 100) / 100);

      const denied = resourcesOf(planFor('claim_denied_missing_auth', 'denied', patientId));
      const deniedResponse = (denied.find((entry) => entry.event === 'claims.claim.adjudicated')!.resource as any).entry[0].resource;
      expect(deniedResponse.item).toHaveLength(1);
      expect(deniedResponse.payment).toBeUndefined();
      const paid = resourcesOf(planFor('claim_denied_missing_auth', 'paid', patientId));
      const paidClaim = paid.find((entry) => entry.event === 'claims.claim.submitted')!.resource as any;
      expect(paidClaim.insurance[0].preAuthRef).toEqual([expect.any(String)]);
      const paidResponse = (paid.find((entry) => entry.event === 'claims.claim.adjudicated')!.resource as any).entry[0].resource;
      expect(paidResponse.item.every((item: any) => !item.adjudication.some((entry: any) => entry.reason))).toBe(true);
    },
  );

  it.each(cases.filter(([scenarioId]) => ['outpatient_visit_to_payment', 'claim_denied_missing_auth', 'inpatient_stay'].includes(scenarioId)))(
    '%s (%s): Claim, acknowledgement, ClaimResponse and EOB each have their own business identifier; the hospitalist bills professionally',
    (scenarioId, outcome) => {
      const resources = resourcesOf(planFor(scenarioId, outcome)).flatMap((built) => allResources(built.resource));
      const claims = resources.filter((resource) => ['Claim', 'ClaimResponse', 'ExplanationOfBenefit'].includes(resource.resourceType));
      expect(claims.length).toBeGreaterThan(0);
      const identifiers = claims.map((resource) => `${resource.identifier[0].system}|${resource.identifier[0].value}`);
      expect(new Set(identifiers).size).toBe(identifiers.length);
      for (const claim of claims) expect(claim.type.coding[0].code, claim.resourceType).toBe('professional');
    },
  );
});

describe('derived ids', () => {
  it('are valid delivery and event ids, the same for the same run, step and event, different otherwise, and sort with the run', () => {
    const id = stepDeliveryId(runId, 'request_pended', 0);
    expect(isId('dlv', id)).toBe(true);
    expect(isId('evt', stepEventId(runId, 'request_pended', 0))).toBe(true);
    expect(stepDeliveryId(runId, 'request_pended', 0)).toBe(id);
    expect(new Set([id, stepDeliveryId(runId, 'request_pended', 1), stepDeliveryId(runId, 'request_approved', 0)]).size).toBe(3);
    // The first 10 characters of a TypeID suffix are its timestamp: the run's.
    expect(id.slice(4, 14)).toBe(runId.slice(4, 14));
  });
});

describe('planning a run with the payer rules', () => {
  it('decides the prior-auth decision inside the payer turnaround and says which rule decided', () => {
    const plan = planFor('prior_auth_approved_after_pend');
    expect(plan.outcome).toBe('pended_then_approved');
    expect(plan.decided_by).toMatchObject({
      payer_id: 'syn-payer-silverharbor',
      rule: 'prior_authorization.services[code=73721]',
      decision_within_hours: 168,
      cms_0057_f_impacted: true,
      outcome_from: 'payer_rules',
    });
    expect(plan.steps.map((step) => step.skipped)).toEqual([false, false, false, false, false, false, false]);
    const approvedPlan = planFor('prior_auth_approved_after_pend', 'approved');
    expect(approvedPlan.steps.filter((step) => step.skipped).map((step) => step.id)).toEqual(['request_pended', 'documentation_sent']);
    const deniedPlan = planFor('prior_auth_approved_after_pend', 'denied');
    expect(deniedPlan.steps.filter((step) => step.skipped).map((step) => step.id)).toEqual(['request_pended', 'documentation_sent', 'scan_booked']);
    expect(deniedPlan.steps.find((step) => step.id === 'request_approved')!.emits).toEqual(['prior_auth.request.denied']);
  });

  it('refuses a patient whose payer does not list the service, and an outcome the scenario does not take', () => {
    const tidewater = store.list('Coverage').find((coverage: any) => coverage.payor[0].reference === 'Organization/syn-payer-tidewater') as any;
    const patientId = tidewater.beneficiary.reference.replace('Patient/', '');
    const scenario = scenarios.find((candidate) => candidate.id === 'prior_auth_approved_after_pend')!;
    expect(planRun({ scenario, patientId, outcome: undefined, store })).toEqual({
      unfit: expect.stringContaining('does not require prior authorization for 73721'),
    });
    expect(
      planRun({
        scenario: scenarios.find((candidate) => candidate.id === 'prior_auth_denied')!,
        patientId: 'syn-pat-0001',
        outcome: 'pended_then_approved',
        store,
      }),
    ).toEqual({
      invalidOutcome: expect.stringContaining('accepts the outcome approved, denied or modified'),
    });
    expect(
      planRun({
        scenario: scenarios.find((candidate) => candidate.id === 'lab_order_to_result')!,
        patientId: 'syn-pat-0001',
        outcome: 'paid',
        store,
      }),
    ).toEqual({
      invalidOutcome: expect.stringContaining('does not branch'),
    });
  });
});
