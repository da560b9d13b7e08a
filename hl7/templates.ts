import type {
  Appointment,
  Claim,
  CodeableConcept,
  Coverage,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  FhirResource,
  Immunization,
  MedicationRequest,
  Observation,
  Organization,
  Patient,
  Practitioner,
  Reference,
} from 'fhir/r4';
import { type FhirStore, loadFhirStore } from '../fixtures/store';
import { SANDBOX_SYSTEM, WORLD_AS_OF } from '../fixtures/synthetic';
import { type Er7Field, er7Header, er7Message, er7Segment, hl7Date, hl7Timestamp } from './er7';
import { findHl7Trigger, type Hl7Trigger } from './triggers';

/**
 * ER7 templates for every trigger the sandbox takes, filled from a synthetic patient of the world
 * (fixtures/): her demographics, and her encounter, results, appointment, document, immunization,
 * prescription, coverage and claim where the world has them (stock synthetic values where not).
 * Each is a message an integration engineer can send as is, or change and send to see the ACK.
 */

export interface Hl7Template {
  id: string;
  /** MSH-9 as sent: `ADT^A01^ADT_A01`. */
  message_type: string;
  version: string;
  description: string;
  /** The catalog event the message is delivered under. */
  event: string;
  patient_id: string;
  er7: string;
}

/** The walkthrough patient (as in catalog/events.ts). */
export const DEFAULT_TEMPLATE_PATIENT = 'syn-pat-0001';

/** The application and facility templates name as the receiver (MSH-5/MSH-6). */
export const TEMPLATE_RECEIVER = { application: 'SANDBOX', facility: 'SYNTHETIC' } as const;
const SENDER = { application: 'SYNTHETIC-EHR', facility: 'LAKESIDE' } as const;
const MRN_AUTHORITY = ['SANDBOX', SANDBOX_SYSTEM.mrn, 'URI'];

/** What a template needs from the world about one patient. */
interface PatientRecord {
  store: FhirStore;
  patient: Patient;
  encounter: Encounter | undefined;
  report: DiagnosticReport | undefined;
  results: Observation[];
  appointment: Appointment | undefined;
  cancelled: Appointment | undefined;
  document: DocumentReference | undefined;
  immunization: Immunization | undefined;
  prescription: MedicationRequest | undefined;
  coverage: Coverage | undefined;
  claim: Claim | undefined;
}

function recordOf(store: FhirStore, patient: Patient): PatientRecord {
  const list = <T extends FhirResource>(type: T['resourceType']) => store.listForPatient(type, patient.id!) as readonly T[];
  const encounters = list<Encounter>('Encounter');
  const reports = list<DiagnosticReport>('DiagnosticReport').filter((report) =>
    report.category?.some((category) => category.coding?.some((coding) => coding.code === 'LAB')),
  );
  const report = reports[0];
  const results = (report?.result ?? [])
    .map((reference) => store.read('Observation', reference.reference!.split('/')[1]!) as Observation | undefined)
    .filter((observation): observation is Observation => observation?.valueQuantity !== undefined);
  const appointments = list<Appointment>('Appointment');
  return {
    store,
    patient,
    encounter: encounters.find((encounter) => encounter.class.code === 'IMP') ?? encounters[0],
    report,
    results,
    appointment: appointments.find((appointment) => appointment.status === 'booked'),
    cancelled: appointments.find((appointment) => appointment.status === 'cancelled'),
    document: list<DocumentReference>('DocumentReference')[0],
    immunization: list<Immunization>('Immunization')[0],
    prescription: list<MedicationRequest>('MedicationRequest')[0],
    coverage: list<Coverage>('Coverage')[0],
    claim: list<Claim>('Claim').find((claim) => claim.use === 'claim'),
  };
}

// --- Field builders from FHIR values -------------------------------------------------------------

const ts = (instant: string | undefined) => (instant ? hl7Timestamp(instant) : undefined);
const idOf = (reference: Reference | undefined) => reference?.reference?.split('/')[1];

/** A CodeableConcept's first coding as CWE (code^display^system name). */
function cwe(concept: CodeableConcept | undefined, fallback: [string, string, string]): Er7Field {
  const coding = concept?.coding?.[0];
  if (!coding?.code) return fallback;
  const system = SYSTEM_NAMES[coding.system ?? ''] ?? '';
  return [coding.code, coding.display ?? concept?.text, system];
}

const SYSTEM_NAMES: Record<string, string> = {
  'http://loinc.org': 'LN',
  'http://snomed.info/sct': 'SCT',
  'http://hl7.org/fhir/sid/cvx': 'CVX',
  'http://www.ama-assn.org/go/cpt': 'CPT',
  'http://www.nlm.nih.gov/research/umls/rxnorm': 'RXNORM',
  'http://hl7.org/fhir/sid/icd-10-cm': 'I10',
};

/** XCN from a practitioner reference: NPI^family^given^^^prefix (with NPI as the assigning authority). */
function xcn(store: FhirStore, reference: Reference | undefined): Er7Field {
  const practitioner = reference ? (store.read('Practitioner', idOf(reference) ?? '') as Practitioner | undefined) : undefined;
  if (!practitioner) return ['1234567893', 'Osinski', 'Avery', null, null, 'Dr.', null, null, 'NPI'];
  const name = practitioner.name?.[0];
  const npi = practitioner.identifier?.find((id) => id.system === 'http://hl7.org/fhir/sid/us-npi')?.value;
  return [npi, name?.family, name?.given?.[0], name?.given?.[1], name?.suffix?.[0], name?.prefix?.[0], null, null, 'NPI'];
}

function pid(record: PatientRecord, mrn?: string): string {
  const patient = record.patient;
  const name = patient.name?.[0];
  const home = patient.address?.[0];
  const phone = patient.telecom?.find((contact) => contact.system === 'phone');
  const email = patient.telecom?.find((contact) => contact.system === 'email');
  const telecom: Er7Field = {
    repeat: [[phone?.value, 'PRN', phone?.use === 'mobile' ? 'CP' : 'PH'], ...(email ? [[null, 'NET', 'Internet', email.value]] : [])],
  };
  const id = mrn ?? patient.identifier?.find((identifier) => identifier.system === SANDBOX_SYSTEM.mrn)?.value ?? patient.id;
  const gender = { male: 'M', female: 'F', other: 'O', unknown: 'U' }[patient.gender ?? 'unknown'];
  return er7Segment('PID', [
    '1',
    null,
    [id, null, null, MRN_AUTHORITY, 'MR'],
    null,
    [name?.family, name?.given?.[0], name?.given?.[1], null, name?.prefix?.[0], null, 'L'],
    null,
    patient.birthDate ? hl7Date(patient.birthDate) : null,
    gender,
    null,
    null,
    home ? [home.line?.[0], home.line?.[1], home.city, home.state, home.postalCode, home.country, 'H'] : null,
    null,
    telecom,
    null,
    ['en', 'English', 'ISO639'],
    patient.maritalStatus?.coding?.[0]?.code,
  ]);
}

/** PV1 for the record's encounter: class, location, attending, visit number, admit/discharge times. */
function pv1(record: PatientRecord, options: { discharged?: boolean; priorLocation?: string; patientClass?: string } = {}): string {
  const encounter = record.encounter;
  const inpatient = encounter?.class.code === 'IMP';
  const patientClass = options.patientClass ?? (inpatient ? 'I' : encounter?.class.code === 'EMER' ? 'E' : 'O');
  const attending = encounter?.participant?.[0]?.individual;
  const start = encounter?.period?.start ?? WORLD_AS_OF;
  const end = options.discharged ? (encounter?.period?.end ?? start) : undefined;
  const location = inpatient ? ['3W', '312', 'A', 'LAKESIDE'] : ['CLINIC', null, null, 'RIVERSIDE'];
  return er7Segment('PV1', [
    '1',
    patientClass,
    patientClass === 'N' ? null : location,
    null,
    null,
    options.priorLocation ? ['ED', '04', null, 'LAKESIDE'] : null,
    patientClass === 'N' ? null : xcn(record.store, attending),
    null,
    null,
    inpatient ? 'MED' : null,
    null,
    null,
    null,
    inpatient ? '7' : null,
    null,
    null,
    null,
    null,
    patientClass === 'N' ? null : [`V${(encounter?.id ?? 'syn-enc').replace(/\D/g, '')}`, null, null, ['SANDBOX'], 'VN'],
    ...Array.from({ length: 16 }, () => null),
    options.discharged ? '01' : null,
    ...Array.from({ length: 7 }, () => null),
    patientClass === 'N' ? null : ts(start),
    end ? ts(end) : null,
  ]);
}

function nk1(record: PatientRecord): string {
  const family = record.patient.name?.[0]?.family;
  const home = record.patient.address?.[0];
  return er7Segment('NK1', [
    '1',
    [family, 'Jordan'],
    ['SPO', 'Spouse', 'HL70063'],
    home ? [home.line?.[0], null, home.city, home.state, home.postalCode, home.country, 'H'] : null,
    ['971-555-0199', 'PRN', 'PH'],
  ]);
}

function in1(record: PatientRecord): string | undefined {
  const coverage = record.coverage;
  if (!coverage) return undefined;
  const payer = record.store.read('Organization', idOf(coverage.payor[0]) ?? '') as Organization | undefined;
  const payerId = payer?.identifier?.[0]?.value;
  const group = coverage.class?.find((entry) => entry.type.coding?.[0]?.code === 'group');
  const name = record.patient.name?.[0];
  return er7Segment('IN1', [
    '1',
    [coverage.class?.find((entry) => entry.type.coding?.[0]?.code === 'plan')?.value],
    [payerId, null, null, ['SANDBOX']],
    payer?.name ?? coverage.payor[0]?.display,
    null,
    null,
    null,
    group?.value,
    group?.name,
    null,
    null,
    coverage.period?.start ? hl7Date(coverage.period.start) : null,
    coverage.period?.end ? hl7Date(coverage.period.end) : null,
    null,
    null,
    [name?.family, name?.given?.[0]],
    'SEL',
    record.patient.birthDate ? hl7Date(record.patient.birthDate) : null,
    ...Array.from({ length: 17 }, () => null),
    coverage.subscriberId,
  ]);
}

// --- Messages ------------------------------------------------------------------------------------

interface Build {
  record: PatientRecord;
  controlId: string;
  msh: string;
  evn: string;
}

interface TemplateDefinition {
  id: string;
  type: string;
  version: string;
  build(context: Build): (string | undefined)[];
}

function mergedMrn(record: PatientRecord): string {
  return `${record.patient.identifier?.find((identifier) => identifier.system === SANDBOX_SYSTEM.mrn)?.value ?? record.patient.id}-OLD`;
}

function orcObrForLab(record: PatientRecord, control: string, status?: string): string[] {
  const report = record.report;
  const placer = `ORD${(report?.id ?? 'syn-dr').replace(/\D/g, '')}`;
  const requester = record.encounter?.participant?.[0]?.individual;
  const collected = ts(report?.effectiveDateTime ?? record.results[0]?.effectiveDateTime ?? WORLD_AS_OF);
  const code = cwe(report?.code, ['58410-2', 'CBC panel - Blood by Automated count', 'LN']);
  return [
    er7Segment('ORC', [
      control,
      [placer, 'SYNTHETIC-EHR'],
      status ? [`F${placer.slice(3)}`, 'SANDBOX-LAB'] : null,
      null,
      status ? 'CM' : null,
      null,
      null,
      null,
      collected,
      null,
      null,
      xcn(record.store, requester),
    ]),
    er7Segment('OBR', [
      '1',
      [placer, 'SYNTHETIC-EHR'],
      status ? [`F${placer.slice(3)}`, 'SANDBOX-LAB'] : null,
      code,
      null,
      null,
      collected,
      ...Array.from({ length: 8 }, () => null),
      xcn(record.store, requester),
      null,
      null,
      null,
      null,
      null,
      status ? ts(report?.issued ?? report?.effectiveDateTime ?? WORLD_AS_OF) : null,
      null,
      'LAB',
      status ?? null,
    ]),
  ];
}

function resultObservations(record: PatientRecord): string[] {
  const interpretation = (observation: Observation) => observation.interpretation?.[0]?.coding?.[0]?.code;
  const range = (observation: Observation) => {
    const reference = observation.referenceRange?.[0];
    if (reference?.low?.value !== undefined && reference.high?.value !== undefined) return `${reference.low.value}-${reference.high.value}`;
    return reference?.text;
  };
  const results = record.results.length
    ? record.results.map((observation, index) =>
        er7Segment('OBX', [
          String(index + 1),
          'NM',
          cwe(observation.code, ['718-7', 'Hemoglobin', 'LN']),
          null,
          observation.valueQuantity?.value,
          [observation.valueQuantity?.code ?? observation.valueQuantity?.unit, observation.valueQuantity?.unit, 'UCUM'],
          range(observation),
          interpretation(observation),
          null,
          null,
          'F',
          null,
          null,
          ts(observation.effectiveDateTime),
        ]),
      )
    : [
        er7Segment('OBX', [
          '1',
          'NM',
          ['718-7', 'Hemoglobin [Mass/volume] in Blood', 'LN'],
          null,
          '13.2',
          ['g/dL', 'g/dL', 'UCUM'],
          '12.0-16.0',
          'N',
          null,
          null,
          'F',
        ]),
      ];
  const next = results.length + 1;
  return [
    ...results,
    er7Segment('OBX', [
      String(next),
      'SN',
      ['33914-3', 'Glomerular filtration rate/1.73 sq M.predicted', 'LN'],
      null,
      ['>', '60'],
      ['mL/min/{1.73_m2}', 'mL/min/1.73m2', 'UCUM'],
      '>60',
      'N',
      null,
      null,
      'F',
    ]),
    er7Segment('OBX', [
      String(next + 1),
      'TX',
      ['8251-1', 'Service comment', 'LN'],
      null,
      'Specimen received & processed; results reviewed | released',
      null,
      null,
      null,
      null,
      null,
      'F',
    ]),
  ];
}

function sch(appointment: Appointment | undefined, status: 'Booked' | 'Cancelled'): string[] {
  const start = appointment?.start ?? '2026-02-11T08:40:00Z';
  const minutes = appointment?.minutesDuration ?? 20;
  const number = (appointment?.id ?? 'syn-apt').replace(/\D/g, '');
  const type = appointment?.appointmentType?.coding?.[0];
  return [
    er7Segment('SCH', [
      [`P${number}`, 'SYNTHETIC-EHR'],
      [`F${number}`, 'SANDBOX'],
      null,
      null,
      null,
      status === 'Cancelled' ? ['PATCAN', 'Patient cancelled', 'HL70276'] : null,
      [null, appointment?.description ?? 'Follow-up visit'],
      [type?.code ?? 'FOLLOWUP', type?.display ?? 'A follow up visit', 'HL70276'],
      String(minutes),
      'MIN',
      [null, null, String(minutes), ts(start)],
      ...Array.from({ length: 13 }, () => null),
      status,
    ]),
  ];
}

function schedulingResources(record: PatientRecord, appointment: Appointment | undefined): string[] {
  const start = appointment?.start ?? '2026-02-11T08:40:00Z';
  const minutes = appointment?.minutesDuration ?? 20;
  const practitioner = appointment?.participant.find((participant) => participant.actor?.reference?.startsWith('Practitioner/'))?.actor;
  const location = appointment?.participant.find((participant) => participant.actor?.reference?.startsWith('Location/'))?.actor;
  return [
    er7Segment('RGS', ['1', 'A']),
    er7Segment('AIS', ['1', 'A', ['185389009', 'Follow-up visit', 'SCT'], ts(start), null, null, String(minutes), 'MIN']),
    er7Segment('AIP', ['1', 'A', xcn(record.store, practitioner), ['ATND', 'Attending', 'HL70443']]),
    er7Segment('AIL', ['1', 'A', ['CLINIC', null, null, location?.display ?? 'RIVERSIDE']]),
  ];
}

const TEMPLATES: readonly TemplateDefinition[] = [
  {
    id: 'adt-a01',
    type: 'ADT^A01',
    version: '2.5.1',
    build: ({ record, msh, evn }) => [msh, evn, pid(record), nk1(record), pv1(record), in1(record)],
  },
  {
    id: 'adt-a02',
    type: 'ADT^A02',
    version: '2.5.1',
    build: ({ record, msh, evn }) => [msh, evn, pid(record), pv1(record, { priorLocation: 'ED' })],
  },
  { id: 'adt-a03', type: 'ADT^A03', version: '2.5.1', build: ({ record, msh, evn }) => [msh, evn, pid(record), pv1(record, { discharged: true })] },
  {
    id: 'adt-a04',
    type: 'ADT^A04',
    version: '2.4',
    build: ({ record, msh, evn }) => [msh, evn, pid(record), pv1(record, { patientClass: 'O' }), in1(record)],
  },
  { id: 'adt-a08', type: 'ADT^A08', version: '2.3', build: ({ record, msh, evn }) => [msh, evn, pid(record), nk1(record), pv1(record)] },
  {
    id: 'adt-a28',
    type: 'ADT^A28',
    version: '2.5',
    build: ({ record, msh, evn }) => [msh, evn, pid(record), nk1(record), pv1(record, { patientClass: 'N' }), in1(record)],
  },
  { id: 'adt-a31', type: 'ADT^A31', version: '2.6', build: ({ record, msh, evn }) => [msh, evn, pid(record), pv1(record, { patientClass: 'N' })] },
  {
    id: 'adt-a40',
    type: 'ADT^A40',
    version: '2.5.1',
    build: ({ record, msh, evn }) => {
      const name = record.patient.name?.[0];
      return [
        msh,
        evn,
        pid(record),
        er7Segment('MRG', [[mergedMrn(record), null, null, MRN_AUTHORITY, 'MR'], null, null, null, null, null, [name?.family, name?.given?.[0]]]),
      ];
    },
  },
  {
    id: 'oru-r01',
    type: 'ORU^R01',
    version: '2.5.1',
    build: ({ record, msh }) => [msh, pid(record), pv1(record), ...orcObrForLab(record, 'RE', 'F'), ...resultObservations(record)],
  },
  { id: 'orm-o01', type: 'ORM^O01', version: '2.3', build: ({ record, msh }) => [msh, pid(record), pv1(record), ...orcObrForLab(record, 'NW')] },
  { id: 'oml-o21', type: 'OML^O21', version: '2.5.1', build: ({ record, msh }) => [msh, pid(record), pv1(record), ...orcObrForLab(record, 'NW')] },
  {
    id: 'siu-s12',
    type: 'SIU^S12',
    version: '2.6',
    build: ({ record, msh }) => [msh, ...sch(record.appointment, 'Booked'), pid(record), ...schedulingResources(record, record.appointment)],
  },
  {
    id: 'siu-s15',
    type: 'SIU^S15',
    version: '2.5',
    build: ({ record, msh }) => [
      msh,
      ...sch(record.cancelled ?? record.appointment, 'Cancelled'),
      pid(record),
      ...schedulingResources(record, record.cancelled ?? record.appointment),
    ],
  },
  {
    id: 'mdm-t02',
    type: 'MDM^T02',
    version: '2.6',
    build: ({ record, msh, evn }) => {
      const document = record.document;
      const text = document?.content[0]?.attachment.data
        ? Buffer.from(document.content[0].attachment.data, 'base64').toString('utf8')
        : 'Progress note. Synthetic record & not a real patient.';
      const lines = text.split('\n');
      const number = (document?.id ?? 'syn-doc').replace(/\D/g, '');
      return [
        msh,
        evn,
        pid(record),
        pv1(record),
        er7Segment('TXA', [
          '1',
          cwe(document?.type, ['11506-3', 'Progress note', 'LN']),
          'TX',
          ts(document?.date ?? WORLD_AS_OF),
          xcn(record.store, document?.author?.[0]),
          null,
          null,
          null,
          null,
          null,
          null,
          [`DOC${number}`, 'SANDBOX'],
          null,
          null,
          null,
          null,
          'AU',
        ]),
        er7Segment('OBX', [
          '1',
          'TX',
          cwe(document?.type, ['11506-3', 'Progress note', 'LN']),
          null,
          { repeat: lines },
          null,
          null,
          null,
          null,
          null,
          'F',
        ]),
      ];
    },
  },
  {
    id: 'vxu-v04',
    type: 'VXU^V04',
    version: '2.5.1',
    build: ({ record, msh }) => {
      const immunization = record.immunization;
      return [
        msh,
        pid(record),
        er7Segment('ORC', ['RE', null, [`IMM${(immunization?.id ?? 'syn-imm').replace(/\D/g, '')}`, 'SANDBOX']]),
        er7Segment('RXA', [
          '0',
          '1',
          ts(immunization?.occurrenceDateTime ?? WORLD_AS_OF),
          ts(immunization?.occurrenceDateTime ?? WORLD_AS_OF),
          cwe(immunization?.vaccineCode, ['150', 'influenza, injectable, quadrivalent, preservative free', 'CVX']),
          '0.5',
          ['mL', 'milliliter', 'UCUM'],
          null,
          ['00', 'New immunization record', 'NIP001'],
          xcn(record.store, immunization?.performer?.[0]?.actor),
          null,
          null,
          null,
          null,
          immunization?.lotNumber ?? 'SYNLOT001',
          null,
          ['SKB', 'GlaxoSmithKline', 'MVX'],
          null,
          null,
          'CP',
          'A',
        ]),
        er7Segment('RXR', [
          ['IM', 'Intramuscular', 'HL70162'],
          ['LA', 'Left Arm', 'HL70163'],
        ]),
      ];
    },
  },
  {
    id: 'dft-p03',
    type: 'DFT^P03',
    version: '2.7',
    build: ({ record, msh, evn }) => {
      const claim = record.claim;
      const item = claim?.item?.[0];
      const diagnosis = claim?.diagnosis?.[0]?.diagnosisCodeableConcept;
      return [
        msh,
        evn,
        pid(record),
        pv1(record),
        er7Segment('FT1', [
          '1',
          `TXN${(claim?.id ?? 'syn-clm').replace(/\D/g, '')}`,
          null,
          item?.servicedDate ? hl7Date(item.servicedDate) : hl7Date(WORLD_AS_OF),
          ts(claim?.created ?? WORLD_AS_OF),
          'CG',
          cwe(item?.productOrService, ['99213', 'Office or other outpatient visit, established patient', 'CPT']),
          null,
          null,
          String(item?.quantity?.value ?? 1),
          [[(item?.net?.value ?? 150).toFixed(2), item?.net?.currency ?? 'USD']],
          ...Array.from({ length: 7 }, () => null),
          diagnosis ? { repeat: [cwe(diagnosis, ['E11.9', 'Type 2 diabetes mellitus without complications', 'I10']) as string[]] } : null,
          xcn(record.store, claim?.careTeam?.[0]?.provider),
        ]),
      ];
    },
  },
  {
    id: 'rde-o11',
    type: 'RDE^O11',
    version: '2.8',
    build: ({ record, msh }) => {
      const prescription = record.prescription;
      return [
        msh,
        pid(record),
        pv1(record, { patientClass: 'O' }),
        er7Segment('ORC', [
          'NW',
          [`RX${(prescription?.id ?? 'syn-mrx').replace(/\D/g, '')}`, 'SYNTHETIC-EHR'],
          null,
          null,
          null,
          null,
          null,
          null,
          ts(prescription?.authoredOn ?? WORLD_AS_OF),
          null,
          null,
          xcn(record.store, prescription?.requester),
        ]),
        er7Segment('RXE', [
          null,
          cwe(prescription?.medicationCodeableConcept, ['860975', '24 HR metformin hydrochloride 500 MG Extended Release Oral Tablet', 'RXNORM']),
          '1',
          null,
          ['TAB', 'tablet', 'HL70292'],
          null,
          [null, prescription?.dosageInstruction?.[0]?.text ?? 'Take 1 tablet by mouth once daily'],
          null,
          null,
          '90',
          ['TAB', 'tablet'],
          String(prescription?.dispenseRequest?.numberOfRepeatsAllowed ?? 3),
        ]),
        er7Segment('RXR', [['PO', 'Oral', 'HL70162']]),
      ];
    },
  },
];

export class UnknownPatientError extends Error {}

/** The template ids, in catalog order. */
export const TEMPLATE_IDS: readonly string[] = TEMPLATES.map((template) => template.id);

function triggerOf(definition: TemplateDefinition): Hl7Trigger {
  const trigger = findHl7Trigger(definition.type);
  if (!trigger) throw new Error(`Template ${definition.id} names ${definition.type}, which hl7/triggers.ts does not list`);
  return trigger;
}

/** Fills template `id` for `patientId`; undefined when there is no such template. Throws UnknownPatientError for a patient not in the world. */
export function renderTemplate(
  id: string,
  patientId: string = DEFAULT_TEMPLATE_PATIENT,
  store: FhirStore = loadFhirStore(),
): Hl7Template | undefined {
  const definition = TEMPLATES.find((template) => template.id === id);
  if (!definition) return undefined;
  const patient = store.read('Patient', patientId) as Patient | undefined;
  if (!patient) throw new UnknownPatientError(`No synthetic patient ${patientId}`);
  const trigger = triggerOf(definition);
  const record = recordOf(store, patient);
  const [code, event] = definition.type.split('^') as [string, string];
  const controlId = `SBX${definition.id.replace('-', '').toUpperCase()}${patient.id!.replace(/\D/g, '')}`;
  const sent = hl7Timestamp(WORLD_AS_OF);
  // v2.3 has no MSH-9.3 (message structure); later versions require it.
  const messageType = definition.version === '2.3' ? [code, event] : [code, event, trigger.structure];
  const msh = er7Header([
    SENDER.application,
    SENDER.facility,
    TEMPLATE_RECEIVER.application,
    TEMPLATE_RECEIVER.facility,
    sent,
    null,
    messageType,
    controlId,
    'P',
    definition.version,
    null,
    null,
    // MSH-15/MSH-16 empty: original acknowledgement mode, one application ACK (AA/AE/AR) per message.
    null,
    null,
    null,
    'UNICODE UTF-8',
  ]);
  const evn = er7Segment('EVN', [event, sent]);
  const segments = definition.build({ record, controlId, msh, evn }).filter((segment): segment is string => segment !== undefined);
  return {
    id: definition.id,
    message_type: messageType.join('^'),
    version: definition.version,
    description:
      `${trigger.description} (${definition.type}, v${definition.version}) for ${patient.name?.[0]?.given?.[0] ?? ''} ${patient.name?.[0]?.family ?? ''}`.replace(
        /\s+/g,
        ' ',
      ),
    event: trigger.event,
    patient_id: patient.id!,
    er7: er7Message(segments),
  };
}

/** Every template, filled for `patientId`. */
export function listTemplates(patientId: string = DEFAULT_TEMPLATE_PATIENT, store: FhirStore = loadFhirStore()): Hl7Template[] {
  return TEMPLATE_IDS.map((id) => renderTemplate(id, patientId, store)!);
}
