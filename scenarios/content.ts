import type {
  Appointment,
  AuditEvent,
  Bundle,
  Claim,
  ClaimResponse,
  CodeableConcept,
  Coverage,
  CoverageEligibilityRequest,
  CoverageEligibilityResponse,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  ExplanationOfBenefit,
  FhirResource,
  MedicationRequest,
  Observation,
  Patient,
  PaymentReconciliation,
  Practitioner,
  Reference,
  ServiceRequest,
} from 'fhir/r4';
import { findScenario } from '../catalog/scenarios';
import type { CareSetting, ScenarioStory } from '../catalog/scenarios/definition';
import {
  type AdjudicatedClaim,
  adjudicateClaim,
  type ClaimKind,
  carcKeyOf,
  claimTypeConcept,
  copayFor,
  DeductibleTracker,
  usd,
  type VisitKind,
} from '../claims/adjudication';
import { findPayerRules, type PayerRules, requiresPriorAuth } from '../claims/payer-rules';
import {
  moreInformationRequest,
  PLACE_OF_SERVICE_SYSTEM,
  PLACES_OF_SERVICE,
  priorAuthDecision,
  priorAuthRequest,
  REVIEW_DECISION_REASON,
  type ReviewAction,
} from '../claims/prior-authorization';
import { CONDITIONS, concept, DOCUMENT_TYPES, ENCOUNTER_CLASSES, LABS, MEDICATIONS, REPORTS, SYSTEM, TAXONOMIES } from '../fhir/terminology';
import { npiFromBase } from '../fixtures/npi';
import type { FhirStore } from '../fixtures/store';
import { SANDBOX_SYSTEM, SYNTHETIC_TAG } from '../fixtures/synthetic';
import { newlyVerifiedBundle } from '../interop/credentialing/file';
import { simulatedOffsetsSeconds } from './clock';
import { seededFraction } from './ids';
import type { PlannedStep, RunPlan } from './plan';

/**
 * The FHIR R4 resources a run's steps emit, built for this run: ids start with the run's stamp
 * (scenarios/ids.ts), references point at the patient's own Coverage and at the world's
 * practitioners, organizations and locations, times follow the run's simulated clock, and every
 * resource is tagged synthetic. Pure: the same plan, stamp and start give the same resources.
 */

export interface RunContent {
  store: FhirStore;
  plan: RunPlan;
  stamp: string;
  simulatedStart: Date;
}

/** The world's cast for scenarios: who orders, images, admits and bills (ids from the committed fixtures). */
const CAST = {
  orthopaedist: 'syn-prac-009',
  orthopaedics: 'syn-prov-northgate',
  orthopaedicClinic: 'syn-loc-northgate-clinic',
  radiologist: 'syn-prac-011',
  hospital: 'syn-prov-lakeside',
  imaging: 'syn-loc-lakeside-imaging',
  emergency: 'syn-loc-lakeside-ed',
  ward: 'syn-loc-lakeside-3west',
  emergencyPhysician: 'syn-prac-012',
  hospitalist: 'syn-prac-014',
  familyPractice: 'syn-prov-riverside',
  familyClinic: 'syn-loc-riverside-clinic',
  familyPhysician: 'syn-prac-001',
} as const;

/** Who treats and bills in each care setting; in the family practice, the patient's own physician. */
const CLINICS: Record<Exclude<CareSetting, 'family_practice'>, { practitioner: string; organization: string; location: string }> = {
  orthopaedics: { practitioner: CAST.orthopaedist, organization: CAST.orthopaedics, location: CAST.orthopaedicClinic },
  imaging: { practitioner: CAST.radiologist, organization: CAST.hospital, location: CAST.imaging },
  ward: { practitioner: CAST.hospitalist, organization: CAST.hospital, location: CAST.ward },
};

/** The kind of visit each care setting is, which decides the copay (claims/adjudication.ts). */
const VISIT_OF_SETTING: Record<CareSetting, VisitKind> = {
  orthopaedics: 'specialist',
  imaging: 'outpatient_hospital',
  ward: 'inpatient',
  family_practice: 'primary_care',
};

function meta(versionId = '1', lastUpdated?: string) {
  return { versionId, ...(lastUpdated ? { lastUpdated } : {}), tag: [SYNTHETIC_TAG] };
}

const iso = (date: Date) => date.toISOString().replace('.000Z', 'Z');
const addHours = (time: string, hours: number) => iso(new Date(Date.parse(time) + hours * 3_600_000));
const dateOf = (time: string) => time.slice(0, 10);

/** Everything the builders share for one run. */
class RunWorld {
  readonly patient: Patient;
  readonly coverage: Coverage;
  readonly rules: PayerRules;
  readonly story: ScenarioStory;
  private readonly times: Map<string, string>;

  constructor(readonly content: RunContent) {
    const { store, plan } = content;
    this.patient = store.read('Patient', plan.patient_id) as Patient;
    this.coverage = store.read('Coverage', plan.coverage_id) as Coverage;
    this.rules = findPayerRules(plan.payer_id)!;
    const scenario = findScenario(plan.scenario_id);
    if (!scenario) throw new Error(`Scenario ${plan.scenario_id} is not in the catalog`);
    this.story = scenario.story;
    const offsets = simulatedOffsetsSeconds(plan.steps);
    this.times = new Map(plan.steps.map((step, index) => [step.id, iso(new Date(content.simulatedStart.getTime() + offsets[index]! * 1000))]));
  }

  get plan() {
    return this.content.plan;
  }

  id(kind: string): string {
    return `${this.content.stamp}-${kind}`;
  }

  at(stepId: string): string {
    return this.times.get(stepId)!;
  }

  /** The step of the plan that first emits `event` (skipped or not). */
  stepEmitting(event: string): PlannedStep | undefined {
    return this.plan.steps.find((step) => step.emits.includes(event));
  }

  /** When the first of these events happens, taken in the order given; the run's start when the plan emits none of them. */
  firstAt(...events: string[]): string {
    for (const event of events) {
      const step = this.stepEmitting(event);
      if (step) return this.at(step.id);
    }
    return iso(this.content.simulatedStart);
  }

  /** The problem the story is about; only asked by the events that carry one. */
  get diagnosis(): (typeof CONDITIONS)[keyof typeof CONDITIONS] {
    if (!this.story.diagnosis) throw new Error(`Scenario ${this.plan.scenario_id}'s story names no diagnosis, which its events need`);
    return CONDITIONS[this.story.diagnosis];
  }

  fraction(label: string): number {
    return seededFraction(this.content.stamp, label);
  }

  ref(type: string, id: string): Reference {
    const resource = this.content.store.read(type, id) as { name?: unknown } | undefined;
    if (!resource) throw new Error(`The fixtures hold no ${type}/${id}; regenerate them with npm run fixtures`);
    const name = resource.name;
    const display =
      typeof name === 'string'
        ? name
        : Array.isArray(name) && name[0]
          ? [...(name[0].prefix ?? []), ...(name[0].given ?? []), name[0].family].filter(Boolean).join(' ')
          : undefined;
    return { reference: `${type}/${id}`, ...(display ? { display } : {}) };
  }

  get subject(): Reference {
    return this.ref('Patient', this.plan.patient_id);
  }

  get coverageRef(): Reference {
    return { reference: `Coverage/${this.plan.coverage_id}` };
  }

  get insurer(): Reference {
    return this.ref('Organization', this.plan.payer_id);
  }

  get familyPhysician(): Reference {
    return this.patient.generalPractitioner?.[0] ?? this.ref('Practitioner', CAST.familyPhysician);
  }

  /** Who orders and bills in this scenario's care setting: practitioner, organization, location. */
  get clinic(): { practitioner: Reference; organization: Reference; location: Reference } {
    const { setting } = this.story;
    if (setting !== 'family_practice') {
      const clinic = CLINICS[setting];
      return {
        practitioner: this.ref('Practitioner', clinic.practitioner),
        organization: this.ref('Organization', clinic.organization),
        location: this.ref('Location', clinic.location),
      };
    }
    return {
      practitioner: this.familyPhysician,
      organization: this.patient.managingOrganization ?? this.ref('Organization', CAST.familyPractice),
      location: this.ref('Location', CAST.familyClinic),
    };
  }

  /** The clinician's role (PractitionerRole) in the world, for the places that need the role rather than the person. */
  roleOf(practitioner: Reference): Reference {
    const role = this.content.store
      .list('PractitionerRole')
      .find((candidate) => (candidate as { practitioner?: Reference }).practitioner?.reference === practitioner.reference);
    if (!role?.id) throw new Error(`The fixtures hold no PractitionerRole of ${practitioner.reference}; regenerate them with npm run fixtures`);
    return { reference: `PractitionerRole/${role.id}`, ...(practitioner.display ? { display: practitioner.display } : {}) };
  }

  /** What kind of visit the scenario is, which decides the copay (claims/adjudication.ts). */
  get visitKind(): VisitKind {
    return VISIT_OF_SETTING[this.story.setting];
  }

  /** The date of the billed service: the visit, the admission, or the day the claim went out. */
  get serviceDate(): string {
    return dateOf(this.firstAt('adt.patient.registered', 'adt.patient.admitted', 'claims.claim.submitted'));
  }

  /** The scenario's billed or requested service as a CodeableConcept. */
  serviceConcept(which: 'service' | 'second_line' = 'service'): CodeableConcept {
    const service = this.plan[which]!;
    return concept({ system: service.system, code: service.code, display: service.display });
  }
}

function collection(world: RunWorld, kind: string, timestamp: string, resources: FhirResource[]): Bundle {
  return {
    resourceType: 'Bundle',
    id: world.id(kind),
    meta: meta(),
    type: 'collection',
    timestamp,
    entry: resources.map((resource) => ({ fullUrl: `urn:sandbox:${resource.resourceType}/${resource.id}`, resource })),
  };
}

const NORMAL_PRIORITY = concept({ system: SYSTEM.processPriority, code: 'normal', display: 'Normal' });

// ---------------------------------------------------------------------------------------------
// Orders, encounters, results

function serviceRequest(world: RunWorld, stepId: string): ServiceRequest {
  const { practitioner } = world.clinic;
  const lab = world.story.order === 'lab';
  return {
    resourceType: 'ServiceRequest',
    id: world.id('order'),
    meta: meta(),
    status: 'active',
    intent: 'order',
    category: [
      lab
        ? concept({ system: SYSTEM.snomed, code: '108252007', display: 'Laboratory procedure' })
        : concept({ system: SYSTEM.snomed, code: '363679005', display: 'Imaging' }),
    ],
    code: lab ? concept(REPORTS.lipidPanel, { ...world.plan.service!, system: world.plan.service!.system }) : world.serviceConcept(),
    subject: world.subject,
    authoredOn: world.at(stepId),
    requester: practitioner,
    ...(lab ? {} : { performer: [world.ref('Organization', CAST.hospital)], locationReference: [world.ref('Location', CAST.imaging)] }),
    insurance: [world.coverageRef],
    reasonCode: [concept(world.diagnosis.icd10)],
  };
}

/** The run's encounter as it stands at `event`: ADT moves it through status, class and location. */
function encounter(world: RunWorld, event: string, stepId: string): Encounter {
  const time = world.at(stepId);
  if (event === 'adt.patient.registered') {
    const { practitioner, location, organization } = world.clinic;
    return {
      resourceType: 'Encounter',
      id: world.id('enc'),
      meta: meta('1', time),
      status: 'arrived',
      class: ENCOUNTER_CLASSES.ambulatory,
      type: [concept({ system: SYSTEM.snomed, code: '390906007', display: 'Follow-up encounter (procedure)' })],
      subject: world.subject,
      participant: [{ individual: practitioner }],
      period: { start: time },
      location: [{ location, status: 'active', period: { start: time } }],
      serviceProvider: organization,
    };
  }
  const admittedAt = world.firstAt('adt.patient.admitted');
  const movedAt = world.firstAt('adt.patient.transferred');
  const emergency = world.ref('Location', CAST.emergency);
  const ward = world.ref('Location', CAST.ward);
  const base: Encounter = {
    resourceType: 'Encounter',
    id: world.id('enc'),
    meta: meta('1', time),
    status: 'in-progress',
    class: ENCOUNTER_CLASSES.inpatient,
    classHistory: [{ class: ENCOUNTER_CLASSES.emergency, period: { start: addHours(admittedAt, -4), end: admittedAt } }],
    type: [concept({ system: SYSTEM.snomed, code: '32485007', display: 'Hospital admission (procedure)' })],
    subject: world.subject,
    participant: [{ individual: world.ref('Practitioner', CAST.emergencyPhysician), period: { start: addHours(admittedAt, -4) } }],
    period: { start: addHours(admittedAt, -4) },
    reasonCode: [concept(world.diagnosis.snomed)],
    hospitalization: { admitSource: concept({ system: SYSTEM.admitSource, code: 'emd', display: 'From accident/emergency department' }) },
    location: [{ location: emergency, status: 'active', period: { start: addHours(admittedAt, -4) } }],
    serviceProvider: world.ref('Organization', CAST.hospital),
  };
  if (event === 'adt.patient.admitted') return base;
  const transferred: Encounter = {
    ...base,
    meta: meta('2', time),
    participant: [
      { individual: world.ref('Practitioner', CAST.emergencyPhysician), period: { start: addHours(admittedAt, -4), end: movedAt } },
      { individual: world.ref('Practitioner', CAST.hospitalist), period: { start: movedAt } },
    ],
    location: [
      { location: emergency, status: 'completed', period: { start: addHours(admittedAt, -4), end: movedAt } },
      { location: ward, status: 'active', period: { start: movedAt } },
    ],
  };
  if (event === 'adt.patient.transferred') return transferred;
  return {
    ...transferred,
    meta: meta('3', time),
    status: 'finished',
    period: { start: addHours(admittedAt, -4), end: time },
    participant: [
      { individual: world.ref('Practitioner', CAST.emergencyPhysician), period: { start: addHours(admittedAt, -4), end: movedAt } },
      { individual: world.ref('Practitioner', CAST.hospitalist), period: { start: movedAt, end: time } },
    ],
    hospitalization: {
      ...base.hospitalization,
      dischargeDisposition: concept({ system: SYSTEM.dischargeDisposition, code: 'home', display: 'Home' }),
    },
    location: [
      { location: emergency, status: 'completed', period: { start: addHours(admittedAt, -4), end: movedAt } },
      { location: ward, status: 'completed', period: { start: movedAt, end: time } },
    ],
  };
}

const REPORT_OF_RESULT = { hba1c: REPORTS.hba1c, ldl: REPORTS.lipidPanel, wbc: REPORTS.cbc } as const;
/** Where each result falls: abnormal, as the scenario's story says. */
const VALUE_RANGE = { hba1c: [7.2, 9.4], ldl: [132, 178], wbc: [12.5, 17.8] } as const;

function resultKind(world: RunWorld): keyof typeof REPORT_OF_RESULT {
  if (!world.story.result) throw new Error(`Scenario ${world.plan.scenario_id}'s story names no lab result, which its results events need`);
  return world.story.result;
}

/** Results of a lab order stand on the order; others were drawn during the run's encounter. */
const fromLabOrder = (world: RunWorld) => world.story.order === 'lab';

function observation(world: RunWorld, stepId: string): Observation {
  const kind = resultKind(world);
  const measure = LABS[kind];
  const [low, high] = VALUE_RANGE[kind];
  const value = Number((low + (high - low) * world.fraction('result')).toFixed(measure.decimals));
  const time = world.at(stepId);
  return {
    resourceType: 'Observation',
    id: world.id('obs'),
    meta: meta(),
    status: 'final',
    category: [concept({ system: SYSTEM.observationCategory, code: 'laboratory', display: 'Laboratory' })],
    code: concept(measure.code),
    subject: world.subject,
    ...(fromLabOrder(world) ? { basedOn: [{ reference: `ServiceRequest/${world.id('order')}` }] } : {}),
    ...(fromLabOrder(world) ? {} : { encounter: { reference: `Encounter/${world.id('enc')}` } }),
    effectiveDateTime: addHours(time, -1),
    issued: time,
    performer: [world.clinic.practitioner],
    valueQuantity: { value, unit: measure.unit, system: SYSTEM.ucum, code: measure.ucum },
    interpretation: [concept({ system: SYSTEM.interpretation, code: 'H', display: 'High' })],
    referenceRange: [
      {
        ...(measure.low !== undefined ? { low: { value: measure.low, unit: measure.unit, system: SYSTEM.ucum, code: measure.ucum } } : {}),
        ...(measure.high !== undefined ? { high: { value: measure.high, unit: measure.unit, system: SYSTEM.ucum, code: measure.ucum } } : {}),
      },
    ],
  };
}

function diagnosticReport(world: RunWorld, stepId: string): DiagnosticReport {
  const time = world.at(stepId);
  return {
    resourceType: 'DiagnosticReport',
    id: world.id('report'),
    meta: meta(),
    status: 'final',
    category: [concept({ system: SYSTEM.diagnosticServiceSection, code: 'LAB', display: 'Laboratory' })],
    code: concept(REPORT_OF_RESULT[resultKind(world)]),
    subject: world.subject,
    ...(fromLabOrder(world) ? { basedOn: [{ reference: `ServiceRequest/${world.id('order')}` }] } : {}),
    effectiveDateTime: addHours(time, -1),
    issued: time,
    performer: [world.ref('Organization', CAST.hospital)],
    result: [{ reference: `Observation/${world.id('obs')}` }],
  };
}

function prescription(world: RunWorld, stepId: string): MedicationRequest {
  return {
    resourceType: 'MedicationRequest',
    id: world.id('rx'),
    meta: meta(),
    status: 'active',
    intent: 'order',
    category: [concept({ system: SYSTEM.medicationRequestCategory, code: 'outpatient', display: 'Outpatient' })],
    medicationCodeableConcept: concept(MEDICATIONS.metformin),
    subject: world.subject,
    encounter: { reference: `Encounter/${world.id('enc')}` },
    authoredOn: world.at(stepId),
    requester: world.clinic.practitioner,
    reasonCode: [concept(CONDITIONS.diabetes.icd10)],
    dosageInstruction: [{ sequence: 1, text: 'Take 1 tablet by mouth once daily with the evening meal' }],
    dispenseRequest: { numberOfRepeatsAllowed: 3, quantity: { value: 90, unit: 'tablet' } },
  };
}

function dischargeSummary(world: RunWorld, stepId: string): DocumentReference {
  const text = 'Synthetic discharge summary: community-acquired pneumonia treated with IV then oral antibiotics; discharged home.';
  return {
    resourceType: 'DocumentReference',
    id: world.id('doc'),
    meta: meta(),
    status: 'current',
    docStatus: 'final',
    type: concept(DOCUMENT_TYPES.dischargeSummary),
    category: [concept({ system: SYSTEM.documentCategory, code: 'clinical-note', display: 'Clinical Note' })],
    subject: world.subject,
    date: world.at(stepId),
    author: [world.ref('Practitioner', CAST.hospitalist)],
    custodian: world.ref('Organization', CAST.hospital),
    content: [{ attachment: { contentType: 'text/plain', data: Buffer.from(text).toString('base64'), title: 'Discharge summary' } }],
    context: { encounter: [{ reference: `Encounter/${world.id('enc')}` }] },
  };
}

/** A booking in a scenario that orders a scan is the scan's; any other is a follow-up, rebooked when a cancellation came before it. */
function appointment(world: RunWorld, event: string, stepId: string): Appointment {
  const priorAuth = world.story.order === 'imaging';
  const cancellation = world.stepEmitting('scheduling.appointment.cancelled');
  const rebooked = cancellation !== undefined && world.plan.steps.indexOf(cancellation) < world.plan.steps.findIndex((step) => step.id === stepId);
  const time = world.at(stepId);
  const start = `${dateOf(addHours(time, (rebooked ? 9 : 7) * 24))}T${rebooked ? '15:30' : '09:00'}:00Z`;
  const location = priorAuth ? world.ref('Location', CAST.imaging) : world.clinic.location;
  const practitioner = priorAuth ? world.ref('Practitioner', CAST.radiologist) : world.clinic.practitioner;
  const firstStart = `${dateOf(addHours(world.firstAt('scheduling.appointment.booked'), 7 * 24))}T09:00:00Z`;
  const appointmentStart = event === 'scheduling.appointment.cancelled' ? firstStart : start;
  return {
    resourceType: 'Appointment',
    id: world.id(rebooked ? 'appt-2' : 'appt-1'),
    meta: meta(event === 'scheduling.appointment.cancelled' ? '2' : '1', time),
    status: event === 'scheduling.appointment.cancelled' ? 'cancelled' : 'booked',
    ...(event === 'scheduling.appointment.cancelled'
      ? {
          cancelationReason: concept({
            system: 'http://terminology.hl7.org/CodeSystem/appointment-cancellation-reason',
            code: 'pat',
            display: 'Patient',
          }),
        }
      : {}),
    serviceType: [
      priorAuth ? world.serviceConcept() : concept({ system: SYSTEM.snomed, code: '390906007', display: 'Follow-up encounter (procedure)' }),
    ],
    ...(priorAuth ? { basedOn: [{ reference: `ServiceRequest/${world.id('order')}` }] } : {}),
    start: appointmentStart,
    end: addHours(appointmentStart, priorAuth ? 1 : 0.5),
    created: time,
    participant: [
      { actor: world.subject, status: 'accepted' },
      { actor: practitioner, status: 'accepted' },
      { actor: location, status: 'accepted' },
    ],
  };
}

function credentialedPractitioner(world: RunWorld, stepId: string): Practitioner {
  const base = `1${String(Math.floor(world.fraction('npi') * 1e8)).padStart(8, '0')}`;
  return {
    resourceType: 'Practitioner',
    id: world.id('prac'),
    meta: meta('1', world.at(stepId)),
    identifier: [{ system: SYSTEM.npi, value: npiFromBase(base) }],
    active: true,
    name: [{ use: 'official', family: 'Okafor-Lindqvist', given: ['Amara'], prefix: ['Dr.'], suffix: ['MD'] }],
    gender: 'female',
    qualification: [
      {
        code: concept(TAXONOMIES.endocrinology),
        period: { start: dateOf(world.at(stepId)) },
        issuer: { display: 'Primary-source verification (synthetic state medical board)' },
      },
    ],
  };
}

function deliveryExhausted(world: RunWorld, stepId: string): AuditEvent {
  return {
    resourceType: 'AuditEvent',
    id: world.id('audit'),
    meta: meta(),
    type: { system: 'http://dicom.nema.org/resources/ontology/DCM', code: '110100', display: 'Application Activity' },
    action: 'E',
    recorded: world.at(stepId),
    outcome: '8',
    outcomeDesc: `The admission event of Encounter/${world.id('enc')} failed after every retry`,
    agent: [{ requestor: false, who: { display: 'Synthetic Healthcare Sandbox' } }],
    source: { observer: { display: 'Synthetic Healthcare Sandbox webhook engine' } },
    entity: [{ what: { reference: `Encounter/${world.id('enc')}` } }],
  };
}

// ---------------------------------------------------------------------------------------------
// Eligibility

const benefitType = (code: string, display: string) => concept({ system: 'http://terminology.hl7.org/CodeSystem/benefit-type', code, display });
const IN_NETWORK = concept({ system: 'http://terminology.hl7.org/CodeSystem/benefit-network', code: 'in', display: 'In Network' });

/**
 * The 270/271 pair. The plan's cost sharing (copay for this kind of visit, deductible, coinsurance)
 * sits on a benefit-category item, and the scenario's service, when it has one, on an item of its
 * own: R4's ces-1 lets an item name a category or a service, never both.
 */
function eligibility(world: RunWorld, stepId: string): Bundle {
  const time = world.at(stepId);
  const { organization, practitioner } = world.clinic;
  const costSharing = world.rules.eligibility.cost_sharing;
  const request: CoverageEligibilityRequest = {
    resourceType: 'CoverageEligibilityRequest',
    id: world.id('elig-req'),
    meta: meta(),
    identifier: [{ system: SANDBOX_SYSTEM.eligibilityTrace, value: world.id('elig').toUpperCase() }],
    status: 'active',
    purpose: ['benefits'],
    patient: world.subject,
    created: time,
    enterer: practitioner,
    provider: organization,
    insurer: world.insurer,
    insurance: [{ focal: true, coverage: world.coverageRef }],
    ...(world.plan.service ? { item: [{ productOrService: world.serviceConcept() }] } : {}),
  };
  const needsAuth = world.plan.service !== null && requiresPriorAuth(world.rules, world.plan.service.code);
  const response: CoverageEligibilityResponse = {
    resourceType: 'CoverageEligibilityResponse',
    id: world.id('elig-resp'),
    meta: meta(),
    identifier: [{ system: SANDBOX_SYSTEM.eligibilityTrace, value: `${world.id('elig').toUpperCase()}-R` }],
    status: 'active',
    purpose: ['benefits'],
    patient: world.subject,
    created: addHours(time, 0.01),
    request: { reference: `CoverageEligibilityRequest/${request.id}` },
    outcome: 'complete',
    disposition: 'Policy is currently in effect.',
    insurer: world.insurer,
    insurance: [
      {
        coverage: world.coverageRef,
        inforce: true,
        item: [
          {
            category: concept({
              system: 'http://terminology.hl7.org/CodeSystem/ex-benefitcategory',
              code: '30',
              display: 'Health Benefit Plan Coverage',
            }),
            network: IN_NETWORK,
            benefit: [
              { type: benefitType('copay', 'Copayment per service'), allowedMoney: usd(copayFor(world.rules, world.visitKind)) },
              { type: benefitType('deductible', 'Deductible'), allowedMoney: usd(costSharing.annual_deductible) },
              { type: benefitType('copay-percent', 'Copayment Percent per service'), allowedUnsignedInt: costSharing.coinsurance_percent },
            ],
          },
          ...(world.plan.service ? [{ productOrService: world.serviceConcept(), network: IN_NETWORK, authorizationRequired: needsAuth }] : []),
        ],
      },
    ],
  };
  return collection(world, 'eligibility', time, [request, response]);
}

// ---------------------------------------------------------------------------------------------
// Prior authorization (Da Vinci PAS 2.2.1, claims/prior-authorization.ts)

const preAuthNumber = (world: RunWorld) =>
  `${world.rules.payer_id.replace('syn-payer-', '').slice(0, 3).toUpperCase()}-${world.id('pa').slice(-10).toUpperCase()}`;

function priorAuthorizationRequest(world: RunWorld, stepId: string): Claim {
  const { practitioner, organization } = world.clinic;
  const service = world.plan.service!;
  return priorAuthRequest({
    id: world.id('pa'),
    meta: meta(),
    identifier: { system: SANDBOX_SYSTEM.claimNumber, value: world.id('pa').toUpperCase() },
    created: world.at(stepId),
    patient: world.subject,
    insurer: world.insurer,
    provider: organization,
    clinicianRole: world.roleOf(practitioner),
    qualification: concept(TAXONOMIES.orthopaedicSurgery),
    coverage: world.coverageRef,
    diagnosis: world.diagnosis.icd10,
    service: { system: service.system, code: service.code, display: service.display },
    unitCharge: service.charge,
    servicedDate: dateOf(addHours(world.at(stepId), 14 * 24)),
    placeOfService: 'outpatientHospital',
    facility: world.ref('Location', CAST.imaging),
  });
}

function priorAuthResponse(world: RunWorld, event: string, stepId: string): ClaimResponse {
  const time = world.at(stepId);
  const service = world.plan.service!;
  const pended = event === 'prior_auth.request.pended';
  const approved = event === 'prior_auth.request.approved';
  const modified = approved && world.plan.outcome === 'modified';
  const action: ReviewAction = pended ? 'A4' : modified ? 'A6' : approved ? 'A1' : 'A3';
  const number = preAuthNumber(world);
  const validDays = Math.round(world.rules.prior_authorization.approval_valid_days / (modified ? 2 : 1));
  const documentation = world.rules.prior_authorization.services.find((entry) => entry.code === service.code)?.required_documentation ?? [];
  const missing = documentation.find((entry) => entry.code === 'prior_imaging') ?? documentation[0];
  const request = { reference: `Claim/${world.id('pa')}` };
  return priorAuthDecision({
    id: world.id(pended ? 'pa-pended' : 'pa-decision'),
    meta: meta(),
    identifier: { system: SANDBOX_SYSTEM.priorAuthNumber, value: approved ? number : `${number}-${pended ? 'P' : 'D'}` },
    created: time,
    patient: world.subject,
    insurer: world.insurer,
    requestor: world.clinic.organization,
    request,
    unitCharge: service.charge,
    action,
    certification: approved ? { number, start: dateOf(time), end: dateOf(addHours(time, validDays * 24)) } : undefined,
    disposition: pended
      ? 'Pended: additional documentation requested'
      : modified
        ? 'Approved with modifications'
        : approved
          ? 'Approved'
          : `Denied: ${REVIEW_DECISION_REASON.text}`,
    note: pended
      ? `Send: ${missing?.description ?? 'the supporting clinical documentation'}`
      : modified
        ? `Approved for a shorter period than requested: ${validDays} days.`
        : approved
          ? undefined
          : REVIEW_DECISION_REASON.text,
    moreInformation: pended
      ? moreInformationRequest({
          identifier: { system: SANDBOX_SYSTEM.attachmentRequest, value: `${number}-RFI` },
          meta: meta(),
          authoredOn: time,
          patient: world.subject,
          request,
          payer: world.insurer,
          provider: world.clinic.organization,
          missing: missing?.description ?? 'the supporting clinical documentation',
          imagingReport: missing?.code === 'prior_imaging',
        })
      : undefined,
  });
}

// ---------------------------------------------------------------------------------------------
// Claims: submission, acknowledgement (277CA), adjudication (ClaimResponse + EOB), remittance (835)

function claimLines(world: RunWorld): NonNullable<RunPlan['service']>[] {
  return [world.plan.service!, ...(world.plan.second_line ? [world.plan.second_line] : [])];
}

const serviceCode = (service: NonNullable<RunPlan['service']>) => ({ system: service.system, code: service.code, display: service.display });

/** Every scenario claim bills a clinician's services (the hospitalist's included), so it is professional (837P). */
const CLAIM_KIND: ClaimKind = 'professional';

/** The authorization on file for the claim: a claim asked to be paid has one for every listed service it bills. */
function authorizationOnFile(world: RunWorld): string | undefined {
  const needsOne = claimLines(world).some((service) => requiresPriorAuth(world.rules, service.code));
  return world.plan.outcome === 'paid' && needsOne ? preAuthNumber(world) : undefined;
}

/**
 * The claim as the one adjudication engine (claims/adjudication.ts) prices it. The run's outcome
 * says what went wrong, the engine decides what that does to each line: a missing authorization
 * denies the line that needed one (CARC 197), a submission error (the plan's CARC) denies the whole
 * claim (`denied`) or its second line (`partially_paid`). A run starts the member's year afresh, so
 * the deductible is met from zero.
 */
function adjudicated(world: RunWorld): AdjudicatedClaim {
  const denial = world.plan.denial ? carcKeyOf(world.plan.denial.carc) : undefined;
  const submissionError = denial !== 'authorizationAbsent' ? denial : undefined;
  return adjudicateClaim(
    {
      rules: world.rules,
      kind: CLAIM_KIND,
      visit: world.visitKind,
      serviceYear: world.serviceDate.slice(0, 4),
      lines: claimLines(world).map((service) => ({ code: serviceCode(service), unitCharge: service.charge, quantity: 1 })),
      authorization: authorizationOnFile(world),
      claimDenial: world.plan.outcome === 'denied' ? submissionError : undefined,
      lineDenials: world.plan.outcome === 'partially_paid' && submissionError ? new Map([[1, submissionError]]) : undefined,
    },
    new DeductibleTracker(),
  );
}

/**
 * Claim, acknowledgement, ClaimResponse and ExplanationOfBenefit share payer and patient; each has its
 * own business identifier (the claim number, then `-ACK`, `-R`, `-EOB`), so identifier-based upserts never collide.
 */
function claimHeader(world: RunWorld, created: string, suffix: '' | '-ACK' | '-R' | '-EOB') {
  return {
    meta: meta(),
    identifier: [{ system: SANDBOX_SYSTEM.claimNumber, value: `${world.id('claim').toUpperCase()}${suffix}` }],
    status: 'active' as const,
    type: claimTypeConcept(CLAIM_KIND),
    use: 'claim' as const,
    patient: world.subject,
    created,
    insurer: world.insurer,
  };
}

function claim(world: RunWorld, stepId: string): Claim {
  const { practitioner, organization, location } = world.clinic;
  const lines = claimLines(world);
  const serviceDate = world.serviceDate;
  const inpatient = world.visitKind === 'inpatient';
  const diagnosis = world.diagnosis.icd10;
  // A visit the run registered or admitted is billed against its encounter.
  const hasEncounter = ['adt.patient.registered', 'adt.patient.admitted'].some((event) => world.stepEmitting(event));
  const authorization = authorizationOnFile(world);
  const place = PLACES_OF_SERVICE[inpatient ? 'inpatientHospital' : world.visitKind === 'outpatient_hospital' ? 'outpatientHospital' : 'office'];
  return {
    resourceType: 'Claim',
    id: world.id('claim'),
    ...claimHeader(world, world.at(stepId), ''),
    billablePeriod: { start: serviceDate, end: dateOf(world.at(stepId)) },
    provider: organization,
    priority: NORMAL_PRIORITY,
    facility: location,
    careTeam: [{ sequence: 1, provider: practitioner }],
    diagnosis: [{ sequence: 1, diagnosisCodeableConcept: concept(diagnosis) }],
    insurance: [{ sequence: 1, focal: true, coverage: world.coverageRef, ...(authorization ? { preAuthRef: [authorization] } : {}) }],
    item: lines.map((service, index) => ({
      sequence: index + 1,
      careTeamSequence: [1],
      diagnosisSequence: [1],
      productOrService: concept(serviceCode(service)),
      servicedDate: serviceDate,
      locationCodeableConcept: concept({ system: PLACE_OF_SERVICE_SYSTEM, ...place }),
      quantity: { value: 1 },
      unitPrice: usd(service.charge),
      net: usd(service.charge),
      ...(hasEncounter ? { encounter: [{ reference: `Encounter/${world.id('enc')}` }] } : {}),
    })),
    total: usd(lines.reduce((sum, service) => sum + service.charge, 0)),
  };
}

function claimAcknowledgement(world: RunWorld, stepId: string): ClaimResponse {
  return {
    resourceType: 'ClaimResponse',
    id: world.id('claim-ack'),
    ...claimHeader(world, world.at(stepId), '-ACK'),
    requestor: world.clinic.organization,
    request: { reference: `Claim/${world.id('claim')}` },
    outcome: 'queued',
    disposition: 'Accepted for adjudication (277CA: A2, acknowledgement/acceptance into adjudication system)',
  };
}

function paymentDate(world: RunWorld): string {
  return dateOf(world.firstAt('remittance.payment.issued'));
}

function adjudication(world: RunWorld, stepId: string): Bundle {
  const time = world.at(stepId);
  const result = adjudicated(world);
  const payment =
    result.paid > 0
      ? {
          payment: {
            type: concept({ system: SYSTEM.paymentType, code: 'complete', display: 'Complete' }),
            date: paymentDate(world),
            amount: usd(result.paid),
          },
        }
      : {};
  const response: ClaimResponse = {
    resourceType: 'ClaimResponse',
    id: world.id('claim-response'),
    ...claimHeader(world, time, '-R'),
    requestor: world.clinic.organization,
    request: { reference: `Claim/${world.id('claim')}` },
    outcome: 'complete',
    disposition: result.disposition,
    item: result.lines.map((line) => ({ itemSequence: line.sequence, adjudication: line.adjudication })),
    total: result.total,
    ...payment,
  };
  const eob: ExplanationOfBenefit = {
    resourceType: 'ExplanationOfBenefit',
    id: world.id('eob'),
    ...claimHeader(world, time, '-EOB'),
    provider: world.clinic.organization,
    claim: { reference: `Claim/${world.id('claim')}` },
    claimResponse: { reference: `ClaimResponse/${response.id}` },
    outcome: 'complete',
    disposition: result.disposition,
    insurance: [{ focal: true, coverage: world.coverageRef }],
    item: result.lines.map((line) => ({
      sequence: line.sequence,
      productOrService: concept(line.line.code),
      net: usd(line.charge),
      adjudication: line.adjudication,
    })),
    total: result.total,
    ...payment,
  };
  return collection(world, 'adjudication', time, [response, eob]);
}

function remittance(world: RunWorld, stepId: string): PaymentReconciliation {
  const time = world.at(stepId);
  const { paid } = adjudicated(world);
  return {
    resourceType: 'PaymentReconciliation',
    id: world.id('remit'),
    meta: meta(),
    identifier: [{ system: SANDBOX_SYSTEM.remittanceTrace, value: world.id('eft').toUpperCase() }],
    status: 'active',
    created: time,
    paymentIssuer: world.insurer,
    requestor: world.clinic.organization,
    outcome: 'complete',
    disposition: paid > 0 ? '835 remittance: claim paid' : '835 remittance: claim denied, no payment',
    paymentDate: dateOf(time),
    paymentAmount: usd(paid),
    paymentIdentifier: { system: SANDBOX_SYSTEM.remittanceTrace, value: world.id('eft').toUpperCase() },
    detail: [
      {
        type: concept({ system: 'http://terminology.hl7.org/CodeSystem/payment-type', code: 'payment', display: 'Payment' }),
        request: { reference: `Claim/${world.id('claim')}` },
        response: { reference: `ClaimResponse/${world.id('claim-response')}` },
        submitter: world.clinic.organization,
        payee: world.clinic.organization,
        date: dateOf(time),
        amount: usd(paid),
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------

type Builder = (world: RunWorld, event: string, stepId: string) => FhirResource;

const BUILDERS: Record<string, Builder> = {
  'orders.service_request.placed': (world, _event, stepId) => serviceRequest(world, stepId),
  'eligibility.check.completed': (world, _event, stepId) => eligibility(world, stepId),
  'prior_auth.request.submitted': (world, _event, stepId) => priorAuthorizationRequest(world, stepId),
  'prior_auth.request.pended': priorAuthResponse,
  'prior_auth.request.approved': priorAuthResponse,
  'prior_auth.request.denied': priorAuthResponse,
  'scheduling.appointment.booked': appointment,
  'scheduling.appointment.cancelled': appointment,
  'adt.patient.registered': encounter,
  'adt.patient.admitted': encounter,
  'adt.patient.transferred': encounter,
  'adt.patient.discharged': encounter,
  'results.observation.final': (world, _event, stepId) => observation(world, stepId),
  'results.report.final': (world, _event, stepId) => diagnosticReport(world, stepId),
  'medications.prescription.created': (world, _event, stepId) => prescription(world, stepId),
  'documents.document.available': (world, _event, stepId) => dischargeSummary(world, stepId),
  'claims.claim.submitted': (world, _event, stepId) => claim(world, stepId),
  'claims.claim.acknowledged': (world, _event, stepId) => claimAcknowledgement(world, stepId),
  'claims.claim.adjudicated': (world, _event, stepId) => adjudication(world, stepId),
  'remittance.payment.issued': (world, _event, stepId) => remittance(world, stepId),
  // The event's one shape (catalog/events.ts): the practitioner with their role and every check.
  'credentialing.practitioner.verified': (world, _event, stepId) =>
    newlyVerifiedBundle({
      practitioner: credentialedPractitioner(world, stepId),
      organization: world.ref('Organization', CAST.hospital),
      specialty: concept(TAXONOMIES.endocrinology),
      performed: dateOf(world.at(stepId)),
      idOf: (kind) => world.id(kind),
      meta: meta(),
    }),
  'webhook.delivery.exhausted': (world, _event, stepId) => deliveryExhausted(world, stepId),
};

/** Whether every event scenarios emit has a builder (checked by a test, so a new catalog event cannot be forgotten). */
export function canBuild(event: string): boolean {
  return event in BUILDERS;
}

/** The resource each of the step's events carries, in the step's order. */
export function buildStepResources(content: RunContent, step: PlannedStep): { event: string; resource: FhirResource }[] {
  const world = new RunWorld(content);
  return step.emits.map((event) => {
    const build = BUILDERS[event];
    if (!build) throw new Error(`No scenario content for ${event}`);
    return { event, resource: build(world, event, step.id) };
  });
}

/** The simulated time a step happens at. */
export function simulatedTimeOf(content: RunContent, stepId: string): string {
  return new RunWorld(content).at(stepId);
}
