import type { FhirResource } from 'fhir/r4';

/**
 * The event catalog: the one list of webhook event names (decisions.md: `<domain>.<entity>.<action>`).
 * Every mock event, HL7 mapping and scenario step names its event from here, and each event carries
 * a sample FHIR R4 resource for its envelope.
 */
export interface EventDefinition {
  name: string;
  domain: string;
  description: string;
  /** A fresh synthetic FHIR R4 resource for this event's envelope. */
  sampleResource(): FhirResource;
}

const SYNTHETIC_TAG = { system: 'https://sandbox.example/fhir/tags', code: 'synthetic', display: 'Synthetic test data' };
const patient = { reference: 'Patient/syn-pat-0001', display: 'Synthetic Patient 0001' };
const payer = { reference: 'Organization/syn-payer-aetna-like', display: 'Synthetic Payer One' };
const provider = { reference: 'Organization/syn-prov-riverside', display: 'Riverside Synthetic Clinic' };
const meta = { tag: [SYNTHETIC_TAG] };
const EXAMPLE_DAY = '2026-01-15';

const encounter = (status: 'in-progress' | 'finished' | 'planned', classCode: 'IMP' | 'AMB'): FhirResource => ({
  resourceType: 'Encounter',
  id: 'syn-enc-0001',
  meta,
  status,
  class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: classCode, display: classCode === 'IMP' ? 'inpatient encounter' : 'ambulatory' },
  subject: patient,
  period: { start: `${EXAMPLE_DAY}T09:00:00Z`, ...(status === 'finished' ? { end: `${EXAMPLE_DAY}T17:30:00Z` } : {}) },
  serviceProvider: provider,
});

const claimResponse = (outcome: 'queued' | 'complete' | 'error' | 'partial', disposition: string, preAuth: boolean): FhirResource => ({
  resourceType: 'ClaimResponse',
  id: preAuth ? 'syn-par-0001' : 'syn-clr-0001',
  meta,
  status: 'active',
  type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/claim-type', code: 'professional' }] },
  use: preAuth ? 'preauthorization' : 'claim',
  patient,
  created: `${EXAMPLE_DAY}T12:00:00Z`,
  insurer: payer,
  outcome,
  disposition,
  ...(preAuth && outcome === 'complete' ? { preAuthRef: 'SYN-PA-0001' } : {}),
});

const definitions: EventDefinition[] = [
  { name: 'adt.patient.admitted', domain: 'adt', description: 'A patient was admitted (HL7 v2 ADT^A01).', sampleResource: () => encounter('in-progress', 'IMP') },
  { name: 'adt.patient.registered', domain: 'adt', description: 'An outpatient was registered (ADT^A04).', sampleResource: () => encounter('in-progress', 'AMB') },
  { name: 'adt.patient.transferred', domain: 'adt', description: 'A patient moved to another location (ADT^A02).', sampleResource: () => encounter('in-progress', 'IMP') },
  { name: 'adt.patient.discharged', domain: 'adt', description: 'A patient was discharged (ADT^A03).', sampleResource: () => encounter('finished', 'IMP') },
  {
    name: 'results.observation.final',
    domain: 'results',
    description: 'A lab result was finalised (ORU^R01).',
    sampleResource: () => ({
      resourceType: 'Observation',
      id: 'syn-obs-0001',
      meta,
      status: 'final',
      category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' }] }],
      code: { coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c/Hemoglobin.total in Blood' }] },
      subject: patient,
      effectiveDateTime: `${EXAMPLE_DAY}T10:00:00Z`,
      valueQuantity: { value: 7.2, unit: '%', system: 'http://unitsofmeasure.org', code: '%' },
      referenceRange: [{ high: { value: 5.7, unit: '%', system: 'http://unitsofmeasure.org', code: '%' } }],
      interpretation: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: 'H' }] }],
    }),
  },
  {
    name: 'orders.service_request.placed',
    domain: 'orders',
    description: 'An order was placed (ORM^O01).',
    sampleResource: () => ({
      resourceType: 'ServiceRequest',
      id: 'syn-sr-0001',
      meta,
      status: 'active',
      intent: 'order',
      code: { coding: [{ system: 'http://www.ama-assn.org/go/cpt', code: '72148', display: 'MRI lumbar spine without contrast' }] },
      subject: patient,
      authoredOn: `${EXAMPLE_DAY}T09:30:00Z`,
    }),
  },
  {
    name: 'scheduling.appointment.booked',
    domain: 'scheduling',
    description: 'An appointment was booked (SIU^S12).',
    sampleResource: () => ({
      resourceType: 'Appointment',
      id: 'syn-apt-0001',
      meta,
      status: 'booked',
      start: `${EXAMPLE_DAY}T14:00:00Z`,
      end: `${EXAMPLE_DAY}T14:30:00Z`,
      participant: [{ actor: patient, status: 'accepted' }],
    }),
  },
  {
    name: 'documents.document.available',
    domain: 'documents',
    description: 'A clinical document became available (MDM^T02).',
    sampleResource: () => ({
      resourceType: 'DocumentReference',
      id: 'syn-doc-0001',
      meta,
      status: 'current',
      type: { coding: [{ system: 'http://loinc.org', code: '18842-5', display: 'Discharge summary' }] },
      subject: patient,
      content: [{ attachment: { contentType: 'text/plain', data: Buffer.from('Synthetic discharge summary. Not a real patient.').toString('base64') } }],
    }),
  },
  {
    name: 'medications.prescription.created',
    domain: 'medications',
    description: 'A prescription was written (RDE^O11).',
    sampleResource: () => ({
      resourceType: 'MedicationRequest',
      id: 'syn-mrx-0001',
      meta,
      status: 'active',
      intent: 'order',
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '860975', display: 'metformin hydrochloride 500 MG Extended Release Oral Tablet' }] },
      subject: patient,
      authoredOn: `${EXAMPLE_DAY}T10:15:00Z`,
    }),
  },
  {
    name: 'eligibility.check.completed',
    domain: 'eligibility',
    description: 'An eligibility check (270/271) returned.',
    sampleResource: () => ({
      resourceType: 'CoverageEligibilityResponse',
      id: 'syn-elr-0001',
      meta,
      status: 'active',
      purpose: ['benefits'],
      patient,
      created: `${EXAMPLE_DAY}T08:00:00Z`,
      request: { reference: 'CoverageEligibilityRequest/syn-elq-0001' },
      outcome: 'complete',
      insurer: payer,
      insurance: [{ coverage: { reference: 'Coverage/syn-cov-0001' }, inforce: true }],
    }),
  },
  { name: 'prior_auth.request.submitted', domain: 'prior_auth', description: 'A prior authorization request was submitted.', sampleResource: () => claimResponse('queued', 'Received', true) },
  { name: 'prior_auth.request.pended', domain: 'prior_auth', description: 'The payer pended a prior authorization for more information.', sampleResource: () => claimResponse('queued', 'Pended: additional documentation required', true) },
  { name: 'prior_auth.request.approved', domain: 'prior_auth', description: 'The payer approved a prior authorization.', sampleResource: () => claimResponse('complete', 'Approved', true) },
  { name: 'prior_auth.request.denied', domain: 'prior_auth', description: 'The payer denied a prior authorization.', sampleResource: () => claimResponse('error', 'Denied: not medically necessary', true) },
  {
    name: 'claims.claim.submitted',
    domain: 'claims',
    description: 'A professional claim (837P) was submitted.',
    sampleResource: () => ({
      resourceType: 'Claim',
      id: 'syn-clm-0001',
      meta,
      status: 'active',
      type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/claim-type', code: 'professional' }] },
      use: 'claim',
      patient,
      created: `${EXAMPLE_DAY}T18:00:00Z`,
      provider,
      priority: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/processpriority', code: 'normal' }] },
      insurance: [{ sequence: 1, focal: true, coverage: { reference: 'Coverage/syn-cov-0001' } }],
      item: [{ sequence: 1, productOrService: { coding: [{ system: 'http://www.ama-assn.org/go/cpt', code: '99213' }] }, unitPrice: { value: 125, currency: 'USD' } }],
      total: { value: 125, currency: 'USD' },
    }),
  },
  { name: 'claims.claim.adjudicated', domain: 'claims', description: 'The payer adjudicated a claim (835 line detail).', sampleResource: () => claimResponse('complete', 'Paid in full', false) },
  {
    name: 'remittance.payment.issued',
    domain: 'remittance',
    description: 'The payer issued a payment (835 remittance).',
    sampleResource: () => ({
      resourceType: 'PaymentReconciliation',
      id: 'syn-pmt-0001',
      meta,
      status: 'active',
      created: `${EXAMPLE_DAY}T20:00:00Z`,
      paymentDate: EXAMPLE_DAY,
      paymentAmount: { value: 98.5, currency: 'USD' },
      paymentIssuer: payer,
      outcome: 'complete',
    }),
  },
  {
    name: 'credentialing.practitioner.verified',
    domain: 'credentialing',
    description: 'A practitioner passed primary-source verification.',
    sampleResource: () => ({
      resourceType: 'Practitioner',
      id: 'syn-prac-0001',
      meta,
      identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: '1234567893' }],
      name: [{ family: 'Synthetic', given: ['Avery'], prefix: ['Dr.'] }],
      active: true,
    }),
  },
  {
    name: 'webhook.delivery.exhausted',
    domain: 'webhook_reliability',
    description: 'A delivery used up its retries and failed (observability).',
    sampleResource: () => ({
      resourceType: 'AuditEvent',
      id: 'syn-audit-0001',
      meta,
      type: { system: 'http://dicom.nema.org/resources/ontology/DCM', code: '110100', display: 'Application Activity' },
      action: 'E',
      recorded: `${EXAMPLE_DAY}T21:00:00Z`,
      outcome: '8',
      outcomeDesc: 'Webhook delivery failed after every retry',
      agent: [{ requestor: false, who: { display: 'Synthetic Healthcare Sandbox' } }],
      source: { observer: { display: 'Synthetic Healthcare Sandbox webhook engine' } },
    }),
  },
];

export const eventCatalog: ReadonlyMap<string, EventDefinition> = new Map(definitions.map((definition) => [definition.name, definition]));

/** The event a mock trigger sends when none is named. */
export const DEFAULT_MOCK_EVENT = 'adt.patient.admitted';

export function findEvent(name: string): EventDefinition | undefined {
  return eventCatalog.get(name);
}
