import { describe, expect, it } from 'vitest';
import { eventCatalog } from '../../catalog/events';
import { scenarios } from '../../catalog/scenarios';
import { loadFhirStore } from '../../fixtures/store';
import { isId } from '../../platform/ids';
import { buildStepResources, canBuild } from '../../scenarios/content';
import { resourceStamp, stepDeliveryId, stepEventId } from '../../scenarios/ids';
import { outcomesOf, planRun, type RunPlan, type ScenarioOutcome } from '../../scenarios/plan';
import { fhirSchemaErrors } from '../support/fhir-schema';

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

  const cases: [string, ScenarioOutcome | undefined][] = scenarios.flatMap((scenario) => {
    const outcomes = outcomesOf(scenario.id);
    return outcomes.length ? outcomes.map((outcome): [string, ScenarioOutcome | undefined] => [scenario.id, outcome]) : [[scenario.id, undefined]];
  });

  it.each(cases)('%s (%s): every resource is valid R4, tagged synthetic, stamped with the run and resolves to the world', (scenarioId, outcome) => {
    const plan = planFor(scenarioId, outcome);
    const built = resourcesOf(plan);
    expect(built.length).toBeGreaterThan(0);
    for (const { event, resource } of built) {
      expect(fhirSchemaErrors(resource), `${event}`).toEqual([]);
      for (const inner of allResources(resource).filter((candidate) => candidate.resourceType !== 'CommunicationRequest')) {
        expect(inner.meta.tag, `${event} ${inner.resourceType}`).toContainEqual(expect.objectContaining({ code: 'synthetic' }));
        expect(inner.id, `${event} ${inner.resourceType}`).toMatch(/^run-01jd8x3m0ae8v9q2w1f4k7t5zr-[a-z0-9-]+$/);
      }
      // Every reference into the world resolves; references to the run's own resources carry its stamp.
      const references = [...JSON.stringify(resource).matchAll(/"reference":"([A-Za-z]+)\/([^"]+)"/g)];
      for (const [, type, id] of references) {
        if (id!.startsWith('run-')) continue;
        expect(store.read(type!, id!), `${event} → ${type}/${id}`).toBeDefined();
      }
    }
  });

  it('the same seed gives the same resources; no seed stamps them with the run', () => {
    const plan = planFor('prior_auth_approved_after_pend');
    const first = resourcesOf(plan, 'demo-42');
    const again = resourcesOf(plan, 'demo-42');
    expect(again).toEqual(first);
    expect(first[0]!.resource.id).toMatch(/^seed-[0-9a-f]{16}-order$/);
    expect(resourcesOf(plan)[0]!.resource.id).toBe('run-01jd8x3m0ae8v9q2w1f4k7t5zr-order');
  });

  it('prior auth: pended is queued with A4 and a request for information; approved is complete with A1, preAuthRef and preAuthPeriod', () => {
    const byEvent = new Map(
      resourcesOf(planFor('prior_auth_approved_after_pend', 'pended_then_approved')).map((built) => [built.event, built.resource as any]),
    );
    const submitted = byEvent.get('prior_auth.request.submitted');
    expect(submitted).toMatchObject({
      resourceType: 'Claim',
      use: 'preauthorization',
      insurance: [{ coverage: { reference: 'Coverage/syn-cov-0001-001' } }],
    });
    const reviewCode = (response: any) => response.item[0].adjudication[0].extension[0].extension[0].valueCodeableConcept.coding[0].code;
    const pended = byEvent.get('prior_auth.request.pended');
    expect(pended).toMatchObject({ resourceType: 'ClaimResponse', outcome: 'queued', communicationRequest: [{ reference: '#more-information' }] });
    expect(reviewCode(pended)).toBe('A4');
    expect(pended.preAuthRef).toBeUndefined();
    const approved = byEvent.get('prior_auth.request.approved');
    expect(approved).toMatchObject({
      outcome: 'complete',
      preAuthRef: expect.any(String),
      preAuthPeriod: { start: expect.any(String), end: expect.any(String) },
    });
    expect(reviewCode(approved)).toBe('A1');

    const denied = resourcesOf(planFor('prior_auth_approved_after_pend', 'denied')).find((built) => built.event === 'prior_auth.request.denied')!
      .resource as any;
    expect(reviewCode(denied)).toBe('A3');
    expect(denied.item[0].adjudication[0].reason.coding[0].code).toBe('50');
    const modified = resourcesOf(planFor('prior_auth_approved_after_pend', 'modified')).find(
      (built) => built.event === 'prior_auth.request.approved',
    )!.resource as any;
    expect(reviewCode(modified)).toBe('A6');
  });
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
