import type { CarcKey, ConditionKey, ServiceKey } from '../../fhir/terminology';

/**
 * The shape of one scenario: everything that differs between scenarios is written in its definition
 * (a file of its own beside this one), and the catalog entry, the run's plan (scenarios/plan.ts) and
 * its FHIR content (scenarios/content.ts) are derived from it; nothing else asks which scenario it is.
 */

export const PRIOR_AUTH_OUTCOMES = ['approved', 'denied', 'pended_then_approved', 'pended_then_denied', 'modified'] as const;
export const CLAIM_OUTCOMES = ['paid', 'denied', 'partially_paid'] as const;
export type PriorAuthOutcome = (typeof PRIOR_AUTH_OUTCOMES)[number];
export type ClaimOutcome = (typeof CLAIM_OUTCOMES)[number];
export type ScenarioOutcome = PriorAuthOutcome | ClaimOutcome;
export const SCENARIO_OUTCOMES = [...new Set<ScenarioOutcome>([...PRIOR_AUTH_OUTCOMES, ...CLAIM_OUTCOMES])] as [
  ScenarioOutcome,
  ...ScenarioOutcome[],
];

export interface ScenarioStep<StepId extends string = string> {
  id: StepId;
  description: string;
  /** Catalog event names this step emits, in order. */
  emits: readonly string[];
  /** Typical time after the previous step (or the start, for the first), in seconds. */
  typicalDelaySeconds: number;
}

/** A prior-authorization scenario: the payer's decision, and the steps it moves. */
export interface PriorAuthPlan<StepId extends string = string> {
  kind: 'prior_auth';
  service: ServiceKey;
  outcomes: readonly PriorAuthOutcome[];
  /** What happens when the request names no outcome. */
  natural: PriorAuthOutcome;
  submitStep: StepId;
  /** Steps that only happen when the payer pends. */
  pendSteps: readonly StepId[];
  /** The step that carries the decision (approved or denied, whatever its catalog entry says). */
  decisionStep: StepId;
  /** Steps that only happen once the service is authorized. */
  afterApproval: readonly StepId[];
}

/** A claim scenario: the adjudication and the remittance that follows it. */
export interface ClaimPlan<StepId extends string = string> {
  kind: 'claim';
  service: ServiceKey;
  /** A second billed line (a partially paid claim denies it). */
  secondLine: ServiceKey;
  natural: ClaimOutcome;
  /** The payer denial reason a denied line carries. */
  denial: CarcKey;
  /** Whether the payer must list the service for prior authorization for the scenario to make sense. */
  needsPriorAuthListing: boolean;
  adjudicationStep: StepId;
  paymentStep: StepId;
}

/** A scenario that does not branch. */
export interface PlainPlan {
  kind: 'plain';
  service: ServiceKey | null;
}

export type ScenarioPlanProfile<StepId extends string = string> = PriorAuthPlan<StepId> | ClaimPlan<StepId> | PlainPlan;

/**
 * Where the scenario happens, which names its clinician, organization and location and the kind of
 * visit its copay follows: an orthopaedic practice, the hospital's imaging department or ward, or
 * the patient's own family practice.
 */
export const CARE_SETTINGS = ['orthopaedics', 'imaging', 'ward', 'family_practice'] as const;
export type CareSetting = (typeof CARE_SETTINGS)[number];

/** The clinical story the run's FHIR content tells. */
export interface ScenarioStory {
  setting: CareSetting;
  /** The problem that orders, requests and bills carry (fhir/terminology.ts). */
  diagnosis: ConditionKey | null;
  /** What the scenario orders: a scan (booked as the imaging appointment) or a lab panel its results answer. */
  order: 'imaging' | 'lab' | null;
  /** The lab result its results events report, out of range as the story says. */
  result: 'hba1c' | 'ldl' | 'wbc' | null;
}

export interface ScenarioDefinition<StepId extends string = string> {
  id: string;
  name: string;
  description: string;
  steps: readonly ScenarioStep<StepId>[];
  plan: ScenarioPlanProfile<StepId>;
  story: ScenarioStory;
}

/**
 * A scenario's definition, its step ids inferred from its steps: a plan that names a step the
 * scenario does not have does not compile.
 */
export function defineScenario<const StepId extends string>(definition: {
  id: string;
  name: string;
  description: string;
  steps: readonly ScenarioStep<StepId>[];
  plan: ScenarioPlanProfile<NoInfer<StepId>>;
  story: ScenarioStory;
}): ScenarioDefinition<StepId> {
  return definition;
}

/** The outcomes a scenario accepts (empty when it does not branch). */
export function acceptedOutcomes(scenario: ScenarioDefinition): readonly ScenarioOutcome[] {
  if (scenario.plan.kind === 'prior_auth') return scenario.plan.outcomes;
  if (scenario.plan.kind === 'claim') return CLAIM_OUTCOMES;
  return [];
}

export const MINUTE = 60;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
