import type { Coverage } from 'fhir/r4';
import type { ScenarioDefinition } from '../catalog/scenarios';
import {
  acceptedOutcomes,
  type ClaimOutcome,
  type ClaimPlan,
  type PriorAuthOutcome,
  type PriorAuthPlan,
  type ScenarioOutcome,
} from '../catalog/scenarios/definition';
import { CMS_0057_F_EXPEDITED_HOURS, CMS_0057_F_STANDARD_HOURS, findPayerRules, type PayerRules, requiresPriorAuth } from '../claims/payer-rules';
import { CARC, type CarcKey, SERVICES, type ServiceKey } from '../fhir/terminology';
import type { FhirStore } from '../fixtures/store';

/**
 * A run's plan: the scenario's steps (its definition, catalog/scenarios/) for this patient and
 * outcome, with the payer rules applied.
 * The rules decide whether the service needs authorization (a patient whose payer does not ask for
 * it cannot run a prior-auth scenario), how long the payer may take to decide (the decision lands
 * inside the payer's turnaround, itself inside CMS-0057-F's 72 h / 7 days), and, when the request
 * names no outcome, which one happens. The plan says which rule decided.
 */

/** The patient every scenario runs for when the request names none: the walkthrough patient. */
export const DEFAULT_SCENARIO_PATIENT = 'syn-pat-0001';

export interface PlannedStep {
  id: string;
  description: string;
  emits: string[];
  typical_delay_seconds: number;
  /** The delay this run uses, in simulated seconds after the previous step that happens. */
  delay_seconds: number;
  skipped: boolean;
}

export interface DecidedBy {
  payer_id: string;
  payer_name: string;
  /** The rule, as a path into GET /v1/sandbox/payer-rules/{payer_id}. */
  rule: string;
  detail: string;
  decision_within_hours: number | null;
  cms_0057_f_impacted: boolean;
  outcome_from: 'request' | 'payer_rules' | null;
}

export interface RunPlan {
  scenario_id: string;
  patient_id: string;
  coverage_id: string;
  payer_id: string;
  service: { system: string; code: string; display: string; charge: number } | null;
  second_line: { system: string; code: string; display: string; charge: number } | null;
  outcome: ScenarioOutcome | null;
  /** The CARC a denied line carries, from the payer's denial reasons. */
  denial: { carc: string; group_code: string; description: string } | null;
  decided_by: DecidedBy | null;
  steps: PlannedStep[];
}

export type PlanResult = { plan: RunPlan } | { invalidOutcome: string } | { unfit: string };

function activeCoverage(store: FhirStore, patientId: string): Coverage | undefined {
  return (store.listForPatient('Coverage', patientId) as Coverage[]).find((coverage) => coverage.status === 'active');
}

function payerIdOf(coverage: Coverage): string | undefined {
  return coverage.payor[0]?.reference?.replace('Organization/', '');
}

function serviceOf(key: ServiceKey | null) {
  if (!key) return null;
  const { code, charge } = SERVICES[key];
  return { system: code.system, code: code.code, display: code.display, charge };
}

const orList = (values: readonly string[]) =>
  values.length <= 1 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;

/** The plan for running `scenario` for `patientId`; the patient is known to exist. */
export function planRun(input: {
  scenario: ScenarioDefinition;
  patientId: string;
  outcome: ScenarioOutcome | undefined;
  store: FhirStore;
}): PlanResult {
  const { scenario, patientId, store } = input;
  const profile = scenario.plan;
  const accepted = acceptedOutcomes(scenario);
  if (input.outcome !== undefined && !accepted.includes(input.outcome)) {
    return {
      invalidOutcome:
        accepted.length === 0
          ? `${scenario.id} does not branch, so it takes no outcome`
          : `${scenario.id} accepts the outcome ${orList(accepted)} (got "${input.outcome}")`,
    };
  }
  const coverage = activeCoverage(store, patientId);
  const payerId = coverage && payerIdOf(coverage);
  const rules = payerId ? findPayerRules(payerId) : undefined;
  if (!coverage || !rules) return { unfit: `${patientId} has no active coverage with a sandbox payer, which ${scenario.id} needs` };

  const service = serviceOf(profile.service);
  const base = {
    scenario_id: scenario.id,
    patient_id: patientId,
    coverage_id: coverage.id!,
    payer_id: rules.payer_id,
    service,
    second_line: null,
    denial: null,
  };
  const steps: PlannedStep[] = scenario.steps.map((step) => ({
    id: step.id,
    description: step.description,
    emits: [...step.emits],
    typical_delay_seconds: step.typicalDelaySeconds,
    delay_seconds: step.typicalDelaySeconds,
    skipped: false,
  }));

  if (profile.kind === 'prior_auth') return planPriorAuth(profile, rules, input.outcome as PriorAuthOutcome | undefined, base, steps);
  if (profile.kind === 'claim') return planClaim(profile, rules, input.outcome as ClaimOutcome | undefined, base, steps);
  return { plan: { ...base, outcome: null, decided_by: null, steps } };
}

type PlanBase = Omit<RunPlan, 'outcome' | 'decided_by' | 'steps'>;

function stepNamed(steps: PlannedStep[], id: string): PlannedStep {
  const step = steps.find((candidate) => candidate.id === id);
  if (!step) throw new Error(`The scenario has no step ${id}`);
  return step;
}

function planPriorAuth(
  profile: PriorAuthPlan,
  rules: PayerRules,
  requested: PriorAuthOutcome | undefined,
  base: PlanBase,
  steps: PlannedStep[],
): PlanResult {
  const service = SERVICES[profile.service].code;
  const listed = rules.prior_authorization.services.find((entry) => entry.code === service.code);
  if (!listed) {
    return {
      unfit:
        `${base.patient_id}'s payer, ${rules.name}, does not require prior authorization for ${service.code} (${service.display}), ` +
        `so ${base.service ? 'its prior-authorization scenarios' : 'this scenario'} cannot run for this patient; choose a patient whose payer lists it (GET /v1/sandbox/payer-rules/{payer_id})`,
    };
  }
  const documentation = listed.required_documentation.map((entry) => entry.code);
  const outcome = requested ?? profile.natural;
  const pended = outcome === 'pended_then_approved' || outcome === 'pended_then_denied';
  const approved = outcome === 'approved' || outcome === 'pended_then_approved' || outcome === 'modified';
  for (const id of profile.pendSteps) stepNamed(steps, id).skipped = !pended;
  for (const id of profile.afterApproval) stepNamed(steps, id).skipped = !approved;
  const decision = stepNamed(steps, profile.decisionStep);
  decision.emits = [approved ? 'prior_auth.request.approved' : 'prior_auth.request.denied'];
  decision.description = DECISIONS[outcome];

  // The decision lands inside the payer's standard turnaround, counted from the submission.
  const withinHours = rules.prior_authorization.standard_turnaround_hours;
  const submitted = steps.findIndex((step) => step.id === profile.submitStep);
  const decided = steps.indexOf(decision);
  const elapsed = (includeDecision: boolean) =>
    steps
      .slice(submitted + 1, includeDecision ? decided + 1 : decided)
      .filter((step) => !step.skipped)
      .reduce((total, step) => total + step.delay_seconds, 0);
  decision.delay_seconds = Math.max(60, Math.min(decision.delay_seconds, withinHours * 3600 - elapsed(false)));

  const detail =
    `${rules.name} lists ${service.code} (${service.display}) for prior authorization` +
    ` (policy: ${listed.criteria}; documentation: ${documentation.join(', ')}); it decides standard requests within ${withinHours} h` +
    ` and expedited ones within ${rules.prior_authorization.expedited_turnaround_hours} h` +
    ` (CMS-0057-F: ${CMS_0057_F_EXPEDITED_HOURS} h expedited, ${CMS_0057_F_STANDARD_HOURS / 24} calendar days standard), so this decision comes ` +
    `${hoursText(elapsed(true))} after the submission.` +
    (requested
      ? ''
      : pended
        ? ' No outcome was asked for: the policy requires documentation the submission lacks (the radiograph report), so the payer pends, then approves.'
        : ' No outcome was asked for: the submission does not meet the policy criteria, so the payer denies (A3, not certified).');
  return {
    plan: {
      ...base,
      outcome,
      // A prior-authorization denial is a review decision (X12 278 A3 and its reason), not a claim adjustment: no CARC.
      denial: null,
      decided_by: {
        payer_id: rules.payer_id,
        payer_name: rules.name,
        rule: `prior_authorization.services[code=${service.code}]`,
        detail,
        decision_within_hours: withinHours,
        cms_0057_f_impacted: rules.cms_0057_f_impacted,
        outcome_from: requested ? 'request' : 'payer_rules',
      },
      steps,
    },
  };
}

const DECISIONS: Record<PriorAuthOutcome, string> = {
  approved: 'The payer approves the request as submitted (X12 278 A1, certified in total).',
  pended_then_approved: 'The payer approves once the documentation arrives (A1, certified in total), inside its standard time frame.',
  modified: 'The payer approves a modified request (A6): fewer units and a shorter authorization period than asked.',
  denied: 'The payer denies: the documentation does not meet the policy criteria (X12 278 A3, not certified, with its review decision reason).',
  pended_then_denied:
    'The documentation sent does not meet the policy criteria; the payer denies (A3, not certified, with its review decision reason).',
};

function hoursText(seconds: number): string {
  const hours = seconds / 3600;
  return hours >= 24 ? `${Math.round((hours / 24) * 10) / 10} days` : `${Math.round(hours * 10) / 10} h`;
}

function denialOf(rules: PayerRules, key: CarcKey): RunPlan['denial'] {
  const reason = rules.denial_reasons.find((entry) => entry.carc === CARC[key].code);
  return reason
    ? { carc: reason.carc, group_code: reason.group_code, description: reason.description }
    : { carc: CARC[key].code, group_code: 'CO', description: CARC[key].description };
}

function planClaim(profile: ClaimPlan, rules: PayerRules, requested: ClaimOutcome | undefined, base: PlanBase, steps: PlannedStep[]): PlanResult {
  const service = SERVICES[profile.service].code;
  const listed = requiresPriorAuth(rules, service.code);
  if (profile.needsPriorAuthListing && !listed) {
    return {
      unfit: `${base.patient_id}'s payer, ${rules.name}, does not require prior authorization for ${service.code} (${service.display}), so a claim for it cannot be denied for a missing authorization; choose a patient whose payer lists it`,
    };
  }
  const outcome = requested ?? profile.natural;
  const denial = outcome === 'paid' ? null : denialOf(rules, profile.denial);
  stepNamed(steps, profile.adjudicationStep).description = CLAIM_DECISIONS[outcome](rules, denial);
  stepNamed(steps, profile.paymentStep).description =
    outcome === 'denied' ? 'The weekly remittance lists the denial with a zero payment.' : 'The weekly remittance pays the claim.';
  const rule = profile.needsPriorAuthListing ? `prior_authorization.services[code=${service.code}]` : 'claims.allowed_percent_of_charges';
  const detail = profile.needsPriorAuthListing
    ? `${rules.name} lists ${service.code} for prior authorization and no authorization is on file, so the line is denied with CARC ${CARC[profile.denial].code} unless the request asks otherwise; allowed amounts are ${rules.claims.allowed_percent_of_charges}% of charges, paid in ${rules.claims.payment_cycle_days}-day cycles.`
    : `${rules.name} allows ${rules.claims.allowed_percent_of_charges}% of charges and pays in ${rules.claims.payment_cycle_days}-day cycles; the member pays the plan's copay for the visit, and the deductible then coinsurance on other services.`;
  return {
    plan: {
      ...base,
      // A claim denied for the missing authorization bills the unauthorized service alone: the engine denies only what needed one.
      second_line: outcome === 'denied' && profile.needsPriorAuthListing ? null : serviceOf(profile.secondLine),
      outcome,
      denial,
      decided_by: {
        payer_id: rules.payer_id,
        payer_name: rules.name,
        rule,
        detail,
        decision_within_hours: null,
        cms_0057_f_impacted: rules.cms_0057_f_impacted,
        outcome_from: requested ? 'request' : 'payer_rules',
      },
      steps,
    },
  };
}

const CLAIM_DECISIONS: Record<ClaimOutcome, (rules: PayerRules, denial: RunPlan['denial']) => string> = {
  paid: (rules) => `The payer adjudicates the claim and pays ${rules.claims.allowed_percent_of_charges}% of charges less the member's share.`,
  partially_paid: (_rules, denial) =>
    denial!.carc === CARC.authorizationAbsent.code
      ? `The payer denies the line that needed an authorization (CARC ${denial!.carc}: ${denial!.description}) and pays the other.`
      : `The payer pays the first line and denies the second (CARC ${denial!.carc}: ${denial!.description}).`,
  denied: (_rules, denial) => `The payer denies the claim (CARC ${denial!.carc}: ${denial!.description}).`,
};
