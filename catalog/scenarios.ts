import { DEFAULT_RETRY_SCHEDULE_MS } from '../platform/retry-schedule';
import { eventCatalog } from './events';

/**
 * Scenario definitions: multi-step workflows a partner can run against the sandbox, each step
 * naming the catalog events it emits and how long after the previous step it typically happens.
 * A scenario touches the domains of the events it emits. Their ids, steps and timings are fixed
 * here; scenarios/ plans a run of them and workflows/scenario/ runs it.
 */
export interface ScenarioStep {
  id: string;
  description: string;
  /** Catalog event names this step emits, in order. */
  emits: readonly string[];
  /** Typical time after the previous step (or the start, for the first), in seconds. */
  typicalDelaySeconds: number;
}

export interface ScenarioDefinition {
  id: string;
  name: string;
  description: string;
  steps: readonly ScenarioStep[];
}

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const scenarios: readonly ScenarioDefinition[] = [
  {
    id: 'prior_auth_approved_after_pend',
    name: 'Prior authorization approved after a pend',
    description:
      'A knee MRI is ordered; the payer pends the request for radiograph results, then approves it within the standard time frame, and the scan is booked.',
    steps: [
      {
        id: 'order_placed',
        description: 'The orthopaedic surgeon orders an MRI of the knee.',
        emits: ['orders.service_request.placed'],
        typicalDelaySeconds: 0,
      },
      {
        id: 'eligibility_checked',
        description: 'The practice confirms coverage and benefits.',
        emits: ['eligibility.check.completed'],
        typicalDelaySeconds: 10 * MINUTE,
      },
      {
        id: 'request_submitted',
        description: 'The practice submits the prior authorization with the consultation note.',
        emits: ['prior_auth.request.submitted'],
        typicalDelaySeconds: 2 * HOUR,
      },
      {
        id: 'request_pended',
        description: 'The payer asks for the radiograph report.',
        emits: ['prior_auth.request.pended'],
        typicalDelaySeconds: 1 * DAY,
      },
      { id: 'documentation_sent', description: 'The practice sends the requested documentation.', emits: [], typicalDelaySeconds: 4 * HOUR },
      {
        id: 'request_approved',
        description: 'The payer approves, well inside the 7-day standard time frame.',
        emits: ['prior_auth.request.approved'],
        typicalDelaySeconds: 2 * DAY,
      },
      {
        id: 'scan_booked',
        description: 'The imaging center books the scan.',
        emits: ['scheduling.appointment.booked'],
        typicalDelaySeconds: 3 * HOUR,
      },
    ],
  },
  {
    id: 'prior_auth_denied',
    name: 'Prior authorization denied for medical necessity',
    description: 'A lumbar MRI is requested without documented conservative therapy; the payer denies it (X12 278 A3, not certified).',
    steps: [
      {
        id: 'order_placed',
        description: 'The surgeon orders an MRI of the lumbar spine.',
        emits: ['orders.service_request.placed'],
        typicalDelaySeconds: 0,
      },
      {
        id: 'request_submitted',
        description: 'The practice submits the prior authorization.',
        emits: ['prior_auth.request.submitted'],
        typicalDelaySeconds: 3 * HOUR,
      },
      {
        id: 'request_denied',
        description: 'The payer denies: the documentation does not meet the policy criteria.',
        emits: ['prior_auth.request.denied'],
        typicalDelaySeconds: 3 * DAY,
      },
    ],
  },
  {
    id: 'claim_denied_missing_auth',
    name: 'Claim denied: authorization absent',
    description:
      'A service on the payer’s prior-authorization list is billed without an authorization; the line is denied (CARC 197) and the remittance pays nothing for it.',
    steps: [
      { id: 'claim_submitted', description: 'The hospital bills the MRI.', emits: ['claims.claim.submitted'], typicalDelaySeconds: 0 },
      {
        id: 'claim_acknowledged',
        description: 'The payer acknowledges the claim (277CA) and accepts it for adjudication.',
        emits: ['claims.claim.acknowledged'],
        typicalDelaySeconds: 1 * HOUR,
      },
      {
        id: 'claim_adjudicated',
        description: 'The payer denies the line: precertification absent.',
        emits: ['claims.claim.adjudicated'],
        typicalDelaySeconds: 9 * DAY,
      },
      {
        id: 'remittance_issued',
        description: 'The weekly remittance lists the denial with a zero payment.',
        emits: ['remittance.payment.issued'],
        typicalDelaySeconds: 3 * DAY,
      },
    ],
  },
  {
    id: 'outpatient_visit_to_payment',
    name: 'Outpatient visit from registration to payment',
    description: 'A diabetic patient’s follow-up: registration, HbA1c result, prescription renewal, claim, adjudication and payment.',
    steps: [
      { id: 'patient_registered', description: 'The patient checks in at the clinic.', emits: ['adt.patient.registered'], typicalDelaySeconds: 0 },
      {
        id: 'eligibility_checked',
        description: 'The front desk confirms coverage and the copay.',
        emits: ['eligibility.check.completed'],
        typicalDelaySeconds: 2 * MINUTE,
      },
      {
        id: 'result_final',
        description: 'The point-of-care HbA1c result is final.',
        emits: ['results.observation.final', 'results.report.final'],
        typicalDelaySeconds: 30 * MINUTE,
      },
      {
        id: 'prescription_created',
        description: 'The clinician renews metformin.',
        emits: ['medications.prescription.created'],
        typicalDelaySeconds: 15 * MINUTE,
      },
      { id: 'claim_submitted', description: 'The practice bills the visit.', emits: ['claims.claim.submitted'], typicalDelaySeconds: 1 * DAY },
      {
        id: 'claim_acknowledged',
        description: 'The payer acknowledges the claim (277CA) and accepts it for adjudication.',
        emits: ['claims.claim.acknowledged'],
        typicalDelaySeconds: 1 * HOUR,
      },
      {
        id: 'claim_adjudicated',
        description: 'The payer adjudicates the claim.',
        emits: ['claims.claim.adjudicated'],
        typicalDelaySeconds: 10 * DAY,
      },
      {
        id: 'payment_issued',
        description: 'The weekly remittance pays the claim.',
        emits: ['remittance.payment.issued'],
        typicalDelaySeconds: 3 * DAY,
      },
    ],
  },
  {
    id: 'inpatient_stay',
    name: 'Inpatient stay from admission to discharge summary',
    description:
      'Community-acquired pneumonia: admitted through the emergency department, moved to the ward, treated, discharged home, summary filed and the stay billed.',
    steps: [
      {
        id: 'admitted',
        description: 'The patient is admitted from the emergency department.',
        emits: ['adt.patient.admitted'],
        typicalDelaySeconds: 0,
      },
      { id: 'transferred', description: 'The patient moves to the medical ward.', emits: ['adt.patient.transferred'], typicalDelaySeconds: 3 * HOUR },
      {
        id: 'labs_final',
        description: 'Admission labs are final.',
        emits: ['results.observation.final', 'results.report.final'],
        typicalDelaySeconds: 1 * HOUR,
      },
      {
        id: 'discharged',
        description: 'The patient goes home on oral antibiotics.',
        emits: ['adt.patient.discharged'],
        typicalDelaySeconds: 3 * DAY,
      },
      {
        id: 'summary_available',
        description: 'The discharge summary is signed.',
        emits: ['documents.document.available'],
        typicalDelaySeconds: 6 * HOUR,
      },
      {
        id: 'claim_submitted',
        description: 'The hospitalist’s services are billed.',
        emits: ['claims.claim.submitted'],
        typicalDelaySeconds: 2 * DAY,
      },
    ],
  },
  {
    id: 'lab_order_to_result',
    name: 'Lab order to result',
    description: 'A lipid panel is ordered, drawn and resulted.',
    steps: [
      { id: 'order_placed', description: 'The clinician orders a lipid panel.', emits: ['orders.service_request.placed'], typicalDelaySeconds: 0 },
      {
        id: 'results_final',
        description: 'The laboratory finalises the results and the report.',
        emits: ['results.observation.final', 'results.report.final'],
        typicalDelaySeconds: 6 * HOUR,
      },
    ],
  },
  {
    id: 'appointment_rescheduled',
    name: 'Appointment cancelled and rebooked',
    description: 'A follow-up is booked, cancelled by the patient and booked again.',
    steps: [
      { id: 'booked', description: 'The follow-up is booked.', emits: ['scheduling.appointment.booked'], typicalDelaySeconds: 0 },
      { id: 'cancelled', description: 'The patient cancels.', emits: ['scheduling.appointment.cancelled'], typicalDelaySeconds: 2 * DAY },
      { id: 'rebooked', description: 'The patient books another slot.', emits: ['scheduling.appointment.booked'], typicalDelaySeconds: 10 * MINUTE },
    ],
  },
  {
    id: 'practitioner_credentialing',
    name: 'Practitioner credentialing',
    description: 'A new clinician’s NPI, licence and taxonomy are verified at the primary sources.',
    steps: [
      { id: 'application_received', description: 'The credentialing application arrives.', emits: [], typicalDelaySeconds: 0 },
      {
        id: 'verified',
        description: 'Primary-source verification completes.',
        emits: ['credentialing.practitioner.verified'],
        typicalDelaySeconds: 10 * DAY,
      },
    ],
  },
  {
    id: 'webhook_retries_exhausted',
    name: 'Webhook retries exhausted',
    description: 'Your receiver fails every attempt: the delivery is retried after 30 s, 2 min, 10 min and 30 min, then reported as exhausted.',
    steps: [
      {
        id: 'event_emitted',
        description: 'An admission event is sent and your receiver fails it.',
        emits: ['adt.patient.admitted'],
        typicalDelaySeconds: 0,
      },
      {
        id: 'retries_failed',
        description: 'Four retries on the backoff schedule fail too.',
        emits: [],
        typicalDelaySeconds: DEFAULT_RETRY_SCHEDULE_MS.reduce((total, delayMs) => total + delayMs, 0) / 1000,
      },
      {
        id: 'exhausted',
        description: 'The sandbox reports the delivery as exhausted.',
        emits: ['webhook.delivery.exhausted'],
        typicalDelaySeconds: 1,
      },
    ],
  },
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
