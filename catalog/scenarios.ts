import { eventCatalog } from './events';
import { appointmentRescheduled } from './scenarios/appointment-rescheduled';
import { claimDeniedMissingAuth } from './scenarios/claim-denied-missing-auth';
import { acceptedOutcomes, DAY, HOUR, MINUTE, type ScenarioDefinition, type ScenarioOutcome } from './scenarios/definition';
import { inpatientStay } from './scenarios/inpatient-stay';
import { labOrderToResult } from './scenarios/lab-order-to-result';
import { outpatientVisitToPayment } from './scenarios/outpatient-visit-to-payment';
import { practitionerCredentialing } from './scenarios/practitioner-credentialing';
import { priorAuthApprovedAfterPend } from './scenarios/prior-auth-approved-after-pend';
import { priorAuthDenied } from './scenarios/prior-auth-denied';
import { webhookRetriesExhausted } from './scenarios/webhook-retries-exhausted';

export type { ScenarioDefinition, ScenarioStep } from './scenarios/definition';

/**
 * The scenarios a partner can run against the sandbox, in the catalog's order: multi-step workflows,
 * each step naming the catalog events it emits and how long after the previous step it typically
 * happens. Each is one typed definition (catalog/scenarios/, one file each, shaped by
 * ./scenarios/definition.ts): scenarios/ plans and builds a run of it, workflows/scenario/ runs it.
 */
export const scenarios: readonly ScenarioDefinition[] = [
  priorAuthApprovedAfterPend,
  priorAuthDenied,
  claimDeniedMissingAuth,
  outpatientVisitToPayment,
  inpatientStay,
  labOrderToResult,
  appointmentRescheduled,
  practitionerCredentialing,
  webhookRetriesExhausted,
];

// A step naming an event the catalog does not have is a typo: fail at start, not when the scenario runs.
for (const scenario of scenarios) {
  for (const name of scenario.steps.flatMap((step) => step.emits)) {
    if (!eventCatalog.has(name)) throw new Error(`Scenario ${scenario.id} emits ${name}, which is not in the event catalog`);
  }
}

export function findScenario(id: string): ScenarioDefinition | undefined {
  return scenarios.find((scenario) => scenario.id === id);
}

/** The outcomes a scenario accepts (empty when it does not branch, or is not in the catalog). */
export function outcomesOf(scenarioId: string): readonly ScenarioOutcome[] {
  const scenario = findScenario(scenarioId);
  return scenario ? acceptedOutcomes(scenario) : [];
}

/** The domains a scenario touches: those of the events it emits, in order of first appearance. */
export function scenarioDomains(scenario: ScenarioDefinition): string[] {
  const domainsTouched = scenario.steps.flatMap((step) => step.emits.map((name) => eventCatalog.get(name)!.domain));
  return [...new Set(domainsTouched)];
}

export function typicalDurationSeconds(scenario: ScenarioDefinition): number {
  return scenario.steps.reduce((total, step) => total + step.typicalDelaySeconds, 0);
}

/** Seconds as an ISO 8601 duration (`P3DT2H10M`), the form the API answers. */
export function isoDuration(seconds: number): string {
  const days = Math.floor(seconds / DAY);
  const hours = Math.floor((seconds % DAY) / HOUR);
  const minutes = Math.floor((seconds % HOUR) / MINUTE);
  const rest = seconds % MINUTE;
  const time = `${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${rest ? `${rest}S` : ''}`;
  const duration = `P${days ? `${days}D` : ''}${time ? `T${time}` : ''}`;
  return duration === 'P' ? 'PT0S' : duration;
}
