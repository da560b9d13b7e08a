import type {
  AuditEvent,
  Bundle,
  ChargeItem,
  Claim,
  ClaimResponse,
  CoverageEligibilityResponse,
  Encounter,
  ExplanationOfBenefit,
  FhirResource,
  PaymentReconciliation,
  Reference,
} from 'fhir/r4';
import { moreInformationRequest, priorAuthDecision, reviewActionOf } from '../claims/prior-authorization';
import { addHours } from '../fixtures/calendar';
import { type FhirStore, patientOf } from '../fixtures/store';
import { SANDBOX_SYSTEM, SYNTHETIC_META, WORLD_AS_OF } from '../fixtures/synthetic';
import { processHl7 } from '../hl7/process';
import { renderTemplate } from '../hl7/templates';
import { GENERIC_HL7_EVENT, HL7_TRIGGERS } from '../hl7/triggers';
import { queryCompletedTask } from '../interop/aggregator/completed-event';
import { credentialingBundle } from '../interop/credentialing/file';
import { exhaustedReport } from '../webhooks/exhausted-report';

/**
 * The event catalog: the one list of webhook event names (CONVENTIONS.md: `<domain>.<entity>.<action>`).
 * Every mock event, HL7 mapping and scenario step names its event from here, and each event carries
 * a sample FHIR R4 resource for its envelope, taken from the synthetic world so its references resolve.
 * The sample is the event's shape: every emitter of an event sends the same resource type (for a
 * Bundle, the same Bundle type and entry types), checked by test/sandbox/event-shapes.test.ts.
 */
export interface EventDefinition {
  name: string;
  domain: string;
  description: string;
  /** A fresh synthetic FHIR R4 resource for this event's envelope, drawn from `store`. */
  sampleResource(store: FhirStore): FhirResource;
}

/** The walkthrough patient: samples come from her record where it has one. */
const SHOWCASE_PATIENT = 'syn-pat-0001';

type ResourceOf<T extends FhirResource['resourceType']> = Extract<FhirResource, { resourceType: T }>;

/**
 * A sample drawn from the world: a copy of the first resource of `type` that `matches`, changed by
 * `adjust` to the state the event describes (an admission is still in progress). The search runs
 * once per store; every call copies what it found, since mock triggers ask on every request.
 */
function fromWorld<T extends FhirResource['resourceType']>(
  type: T,
  matches: (resource: ResourceOf<T>, store: FhirStore) => boolean,
  adjust?: (resource: ResourceOf<T>, store: FhirStore) => void,
): (store: FhirStore) => FhirResource {
  const found = new WeakMap<FhirStore, ResourceOf<T>>();
  return (store) => {
    let match = found.get(store);
    if (!match) {
      match = store.list(type).find((resource) => matches(resource as ResourceOf<T>, store)) as ResourceOf<T> | undefined;
      if (!match) throw new Error(`The fixtures hold no ${type} for this event's sample; regenerate them with npm run fixtures`);
      found.set(store, match);
    }
    const sample = structuredClone(match);
    adjust?.(sample, store);
    return sample;
  };
}

const ofShowcase = (resource: FhirResource) => patientOf(resource) === SHOWCASE_PATIENT;
const codeOf = (concept: { coding?: { code?: string }[] } | undefined) => concept?.coding?.[0]?.code;

const showcaseInpatientStay = (encounter: Encounter) => ofShowcase(encounter) && encounter.class.code === 'IMP';

/** An inpatient stay as it looks while the patient is still in the hospital. */
function stillAdmitted(encounter: Encounter): void {
  const start = encounter.period!.start!;
  encounter.status = 'in-progress';
  encounter.period = { start };
  for (const participant of encounter.participant ?? []) participant.period = { start };
  if (encounter.hospitalization) delete encounter.hospitalization.dischargeDisposition;
  for (const location of encounter.location ?? []) {
    location.status = 'active';
    location.period = { start };
  }
}

/** Moved from the emergency department to the ward three hours after arrival. */
function transferredFromEmergency(encounter: Encounter, store: FhirStore): void {
  stillAdmitted(encounter);
  const start = encounter.period!.start!;
  const moved = addHours(start, 3);
  const emergency = store.read('Location', 'syn-loc-lakeside-ed') as { id: string; name: string };
  encounter.location = [
    { location: { reference: `Location/${emergency.id}`, display: emergency.name }, status: 'completed', period: { start, end: moved } },
    ...(encounter.location ?? []).map((location) => ({ ...location, period: { start: moved } })),
  ];
}

/** The same request while pended (PAS: outcome `complete`, review action A4), with the payer's request for the radiograph report. */
function pendedForDocumentation(response: ClaimResponse): void {
  const missing = 'Report of plain radiographs of the same site taken within the last 6 months';
  const identifier = response.identifier![0]!;
  const pended = priorAuthDecision({
    id: response.id!,
    meta: SYNTHETIC_META,
    identifier: { system: identifier.system!, value: `${identifier.value}-P` },
    created: response.created,
    patient: response.patient,
    insurer: response.insurer,
    requestor: response.requestor!,
    request: response.request!,
    unitCharge: response.item![0]!.adjudication[0]!.amount!.value!,
    action: 'A4',
    disposition: 'Pended: additional documentation requested',
    note: `Send: ${missing}`,
    moreInformation: moreInformationRequest({
      identifier: { system: SANDBOX_SYSTEM.attachmentRequest, value: `${identifier.value}-RFI` },
      meta: SYNTHETIC_META,
      authoredOn: response.created,
      patient: response.patient,
      request: response.request!,
      payer: response.insurer,
      provider: response.requestor!,
      missing,
      imagingReport: true,
    }),
  });
  for (const field of Object.keys(response) as (keyof ClaimResponse)[]) delete response[field];
  Object.assign(response, pended);
}

/** The claim acknowledgement (277CA) before adjudication: accepted, nothing decided yet, its own identifier. */
function acknowledgedOnly(response: ClaimResponse): void {
  response.outcome = 'queued';
  response.identifier = response.identifier?.map((identifier) => ({ ...identifier, value: identifier.value?.replace(/-R$/, '-ACK') }));
  response.disposition = 'Accepted for adjudication (277CA A2)';
  for (const field of ['item', 'total', 'payment', 'processNote', 'adjudication'] as const) delete response[field];
}

const isPriorAuth = (resource: Claim | ClaimResponse) => resource.use === 'preauthorization';
/** A remittance that settles one of the walkthrough patient's claims. */
function paysShowcase(payment: PaymentReconciliation, store: FhirStore): boolean {
  return (payment.detail ?? []).some((detail) => {
    const [type, id] = (detail.response?.reference ?? '').split('/');
    const response = type && id ? store.read(type, id) : undefined;
    return response !== undefined && ofShowcase(response);
  });
}

/** A sample report: a claim submission that failed every attempt of the default schedule. */
const deliveryExhausted = (): AuditEvent =>
  exhaustedReport({
    deliveryId: 'dlv_01kaxq5j2cf8rbv3h2a5w0t6ns',
    event: 'claims.claim.submitted',
    connectionId: null,
    lastStatus: 503,
    attemptCount: 5,
    failedAt: '2026-01-15T21:00:00Z',
  });

/**
 * A posted charge for the walkthrough patient's first visit, read off her first professional claim's
 * first line (the world keeps claims, not the charges behind them).
 */
function chargeOfFirstVisit(store: FhirStore): ChargeItem {
  const claim = store.listForPatient('Claim', SHOWCASE_PATIENT).find((candidate) => (candidate as Claim).use === 'claim') as Claim | undefined;
  const line = claim?.item?.[0];
  if (!claim || !line) throw new Error('The fixtures hold no claim for the walkthrough patient; regenerate them with npm run fixtures');
  return {
    resourceType: 'ChargeItem',
    id: 'syn-chg-0001-001',
    meta: SYNTHETIC_META,
    status: 'billable',
    code: line.productOrService,
    subject: claim.patient,
    ...(line.encounter?.[0] ? { context: line.encounter[0] } : {}),
    ...(line.servicedDate ? { occurrenceDateTime: line.servicedDate } : {}),
    ...(line.quantity ? { quantity: line.quantity } : {}),
    ...(line.net ? { priceOverride: line.net } : {}),
  };
}

/** Resources that travel together in one envelope (CONVENTIONS.md, Webhooks): a `collection` Bundle. */
function collection(id: string, timestamp: string | undefined, resources: FhirResource[]): Bundle {
  return {
    resourceType: 'Bundle',
    id,
    meta: SYNTHETIC_META,
    type: 'collection',
    ...(timestamp ? { timestamp } : {}),
    entry: resources.map((resource) => ({ fullUrl: `https://sandbox.example/fhir/${resource.resourceType}/${resource.id}`, resource })),
  };
}

/** The world resource a reference names, copied; the fixtures always hold it. */
function referenced(store: FhirStore, reference: Reference | undefined): FhirResource {
  const [type, id] = (reference?.reference ?? '').split('/');
  const resource = type && id ? store.read(type, id) : undefined;
  if (!resource) throw new Error(`The fixtures hold no ${reference?.reference}; regenerate them with npm run fixtures`);
  return structuredClone(resource);
}

const showcaseEligibilityResponse = fromWorld('CoverageEligibilityResponse', ofShowcase);

/** The 270/271 exchange: the CoverageEligibilityRequest and the payer's CoverageEligibilityResponse. */
function eligibilityExchange(store: FhirStore): Bundle {
  const response = showcaseEligibilityResponse(store) as CoverageEligibilityResponse;
  return collection(`syn-eligibility-${response.id}`, response.created, [referenced(store, response.request), response]);
}

const showcaseAdjudication = fromWorld('ClaimResponse', (response) => ofShowcase(response) && response.use === 'claim');

/** The adjudication of a claim: the payer's ClaimResponse and the member's ExplanationOfBenefit for it. */
function claimAdjudication(store: FhirStore): Bundle {
  const response = showcaseAdjudication(store) as ClaimResponse;
  const explanation = (store.listForPatient('ExplanationOfBenefit', SHOWCASE_PATIENT) as ExplanationOfBenefit[]).find(
    (candidate) => candidate.claimResponse?.reference === `ClaimResponse/${response.id}`,
  );
  if (!explanation)
    throw new Error(`The fixtures hold no ExplanationOfBenefit for ClaimResponse/${response.id}; regenerate them with npm run fixtures`);
  return collection(`syn-adjudication-${response.id}`, response.created, [response, structuredClone(explanation)]);
}

const showcasePatient = (store: FhirStore) => structuredClone(store.read('Patient', SHOWCASE_PATIENT)!);

/** Reports a delivery that failed for good (CONVENTIONS.md, Webhooks); never reported on itself. */
export const DELIVERY_EXHAUSTED_EVENT = 'webhook.delivery.exhausted';

/** A template of hl7/templates.ts for the walkthrough patient, as the inject maps it: a message Bundle. */
function hl7MessageBundle(templateId: string, change: (er7: string) => string = (er7) => er7) {
  return (store: FhirStore): FhirResource => {
    const template = renderTemplate(templateId, SHOWCASE_PATIENT, store)!;
    const outcome = processHl7(change(template.er7), { now: new Date(WORLD_AS_OF) });
    if (outcome.kind !== 'acknowledged' || !outcome.bundle) throw new Error(`The ${templateId} template no longer maps: ${outcome.ack.er7}`);
    return outcome.bundle;
  };
}

/**
 * HL7 v2 events (issue 21, one event name, one payload shape): every message the inject or the MLLP
 * listener accepts is delivered as a FHIR message Bundle, MessageHeader first, under an `hl7.*`
 * event: its trigger's own for the triggers with a template, `hl7.message.received` for any other.
 * The clinical events above (adt.patient.admitted …) carry single resources, from mocks and scenarios.
 */
const hl7Definitions: EventDefinition[] = [
  ...HL7_TRIGGERS.map((trigger) => ({
    name: trigger.event,
    domain: 'hl7',
    description: `An HL7 v2 ${trigger.type} message (${trigger.description.toLowerCase()}) was received, as a FHIR message Bundle.`,
    sampleResource: hl7MessageBundle(trigger.type.replace('^', '-').toLowerCase()),
  })),
  {
    name: GENERIC_HL7_EVENT,
    domain: 'hl7',
    description:
      'Any other HL7 v2 message (any message type, trigger and version 2.1–2.8), mapped segment by segment to a FHIR message Bundle; MessageHeader.eventCoding names its trigger (the example: ADT^A05, pre-admit).',
    sampleResource: hl7MessageBundle('adt-a01', (er7) => er7.replace('ADT^A01^ADT_A01', 'ADT^A05^ADT_A05').replace('\rEVN|A01|', '\rEVN|A05|')),
  },
];

const definitions: EventDefinition[] = [
  {
    name: 'adt.patient.admitted',
    domain: 'adt',
    description: 'A patient was admitted (HL7 v2 ADT^A01).',
    sampleResource: fromWorld('Encounter', showcaseInpatientStay, stillAdmitted),
  },
  {
    name: 'adt.patient.registered',
    domain: 'adt',
    description: 'An outpatient was registered (ADT^A04).',
    sampleResource: fromWorld(
      'Encounter',
      (encounter) => ofShowcase(encounter) && encounter.class.code === 'AMB',
      (encounter) => {
        stillAdmitted(encounter);
        encounter.status = 'arrived';
      },
    ),
  },
  {
    name: 'adt.patient.transferred',
    domain: 'adt',
    description: 'A patient moved to another location (ADT^A02).',
    sampleResource: fromWorld('Encounter', showcaseInpatientStay, transferredFromEmergency),
  },
  {
    name: 'adt.patient.discharged',
    domain: 'adt',
    description: 'A patient was discharged (ADT^A03).',
    sampleResource: fromWorld('Encounter', showcaseInpatientStay),
  },
  {
    name: 'results.observation.final',
    domain: 'results',
    description: 'A lab result was finalised (ORU^R01).',
    sampleResource: fromWorld('Observation', (observation) => ofShowcase(observation) && codeOf(observation.code) === '4548-4'),
  },
  {
    name: 'results.report.final',
    domain: 'results',
    description: 'A diagnostic report grouping results was finalised (ORU^R01).',
    sampleResource: fromWorld('DiagnosticReport', (report) => ofShowcase(report) && codeOf(report.code) === '4548-4'),
  },
  {
    name: 'orders.service_request.placed',
    domain: 'orders',
    description: 'An order was placed (ORM^O01).',
    sampleResource: fromWorld(
      'ServiceRequest',
      (order) => ofShowcase(order) && codeOf(order.category?.[0]) === '363679005',
      (order) => {
        order.status = 'active';
      },
    ),
  },
  {
    name: 'scheduling.appointment.booked',
    domain: 'scheduling',
    description: 'An appointment was booked (SIU^S12).',
    sampleResource: fromWorld('Appointment', (appointment) => ofShowcase(appointment) && appointment.status === 'booked'),
  },
  {
    name: 'scheduling.appointment.cancelled',
    domain: 'scheduling',
    description: 'An appointment was cancelled (SIU^S15).',
    sampleResource: fromWorld('Appointment', (appointment) => appointment.status === 'cancelled'),
  },
  {
    name: 'adt.patient.updated',
    domain: 'adt',
    description: "A patient's registration was updated (ADT^A08).",
    sampleResource: showcasePatient,
  },
  {
    name: 'adt.person.added',
    domain: 'adt',
    description: 'A person was added to the master patient index without a visit (ADT^A28).',
    sampleResource: showcasePatient,
  },
  {
    name: 'adt.person.updated',
    domain: 'adt',
    description: "A person's master patient index record was updated without a visit (ADT^A31).",
    sampleResource: showcasePatient,
  },
  {
    name: 'adt.patient.merged',
    domain: 'adt',
    description: 'Two records of one patient were merged; the surviving record is sent (ADT^A40).',
    sampleResource: showcasePatient,
  },
  {
    name: 'documents.document.available',
    domain: 'documents',
    description: 'A clinical document became available (MDM^T02).',
    sampleResource: fromWorld('DocumentReference', (document) => ofShowcase(document) && codeOf(document.type) === '18842-5'),
  },
  {
    name: 'medications.prescription.created',
    domain: 'medications',
    description: 'A prescription was written (RDE^O11).',
    sampleResource: fromWorld(
      'MedicationRequest',
      (prescription) => ofShowcase(prescription) && codeOf(prescription.medicationCodeableConcept) === '860975',
    ),
  },
  {
    name: 'medications.immunization.recorded',
    domain: 'medications',
    description: 'A vaccine administration was recorded (VXU^V04).',
    sampleResource: fromWorld('Immunization', ofShowcase),
  },
  {
    name: 'eligibility.check.completed',
    domain: 'eligibility',
    description:
      'An eligibility check (270/271) returned: a collection Bundle of the CoverageEligibilityRequest and its CoverageEligibilityResponse.',
    sampleResource: eligibilityExchange,
  },
  {
    name: 'prior_auth.request.submitted',
    domain: 'prior_auth',
    description: 'A prior authorization request was submitted.',
    sampleResource: fromWorld('Claim', (claim) => ofShowcase(claim) && isPriorAuth(claim)),
  },
  {
    name: 'prior_auth.request.pended',
    domain: 'prior_auth',
    description: 'The payer pended a prior authorization for more information.',
    sampleResource: fromWorld(
      'ClaimResponse',
      (response) => ofShowcase(response) && isPriorAuth(response) && reviewActionOf(response) === 'A1',
      pendedForDocumentation,
    ),
  },
  {
    name: 'prior_auth.request.approved',
    domain: 'prior_auth',
    description: 'The payer approved a prior authorization.',
    sampleResource: fromWorld('ClaimResponse', (response) => ofShowcase(response) && isPriorAuth(response) && reviewActionOf(response) === 'A1'),
  },
  {
    name: 'prior_auth.request.denied',
    domain: 'prior_auth',
    description: 'The payer denied a prior authorization.',
    sampleResource: fromWorld('ClaimResponse', (response) => isPriorAuth(response) && reviewActionOf(response) === 'A3'),
  },
  {
    name: 'claims.claim.submitted',
    domain: 'claims',
    description: 'A professional claim (837P) was submitted.',
    sampleResource: fromWorld('Claim', (claim) => ofShowcase(claim) && claim.use === 'claim'),
  },
  {
    name: 'claims.claim.acknowledged',
    domain: 'claims',
    description: 'The payer acknowledged a claim and accepted it for adjudication (277CA).',
    sampleResource: fromWorld('ClaimResponse', (response) => ofShowcase(response) && response.use === 'claim', acknowledgedOnly),
  },
  {
    name: 'claims.claim.adjudicated',
    domain: 'claims',
    description: 'The payer adjudicated a claim (835 line detail): a collection Bundle of the ClaimResponse and the ExplanationOfBenefit for it.',
    sampleResource: claimAdjudication,
  },
  {
    name: 'claims.charge.posted',
    domain: 'claims',
    description: 'A charge was posted to a patient account (DFT^P03).',
    sampleResource: chargeOfFirstVisit,
  },
  {
    name: 'remittance.payment.issued',
    domain: 'remittance',
    description: 'The payer issued a payment (835 remittance).',
    sampleResource: fromWorld('PaymentReconciliation', paysShowcase),
  },
  {
    name: 'credentialing.practitioner.verified',
    domain: 'credentialing',
    description: "A practitioner passed primary-source verification: the credentialing file's Practitioner, role and VerificationResults.",
    sampleResource: (store) => credentialingBundle(store, 'syn-prac-001')!,
  },
  {
    name: 'aggregator.query.completed',
    domain: 'documents',
    description: 'An aggregator query finished: a Task naming the query, where to read its answer and each source’s status.',
    sampleResource: () =>
      queryCompletedTask({
        queryId: 'aq_01jd8x3m0ae8v9q2w1f4k7t5zr',
        patientReference: `Patient/${SHOWCASE_PATIENT}`,
        answerPath: '/v1/sandbox/aggregator/queries/aq_01jd8x3m0ae8v9q2w1f4k7t5zr',
        completedAt: '2026-01-01T00:00:02Z',
        status: 'partial',
        records: 164,
        sources: [
          { source: 'hospital', status: 'ok' },
          { source: 'clinic', status: 'ok' },
          { source: 'lab', status: 'error' },
          { source: 'pharmacy', status: 'timeout' },
          { source: 'payer', status: 'ok' },
        ],
      }),
  },
  {
    name: DELIVERY_EXHAUSTED_EVENT,
    domain: 'webhook_reliability',
    description: 'A delivery used up its retries and failed (observability).',
    sampleResource: deliveryExhausted,
  },
  ...hl7Definitions,
];

export const eventCatalog: ReadonlyMap<string, EventDefinition> = new Map(definitions.map((definition) => [definition.name, definition]));

/** The event a mock trigger sends when none is named. */
export const DEFAULT_MOCK_EVENT = 'adt.patient.admitted';

export function findEvent(name: string): EventDefinition | undefined {
  return eventCatalog.get(name);
}
