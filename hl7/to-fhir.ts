import { createHash } from 'node:crypto';
import type {
  AllergyIntolerance,
  Annotation,
  Appointment,
  Bundle,
  BundleEntry,
  ChargeItem,
  CodeableConcept,
  Condition,
  Coverage,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  FhirResource,
  Immunization,
  MedicationAdministration,
  MedicationRequest,
  MessageHeader,
  Observation,
  ObservationComponent,
  ObservationReferenceRange,
  Patient,
  Procedure,
  Provenance,
  Quantity,
  Reference,
  RelatedPerson,
  ServiceRequest,
  Specimen,
} from 'fhir/r4';
import { SYNTHETIC_TAG } from '../fixtures/synthetic';
import {
  addMinutes,
  address,
  codeableConcept,
  contactPoint,
  date,
  dateTime,
  decimal,
  entityIdentifier,
  humanName,
  identifier,
  instant,
  practitionerReference,
  v2Coding,
} from './datatypes';
import type { Hl7Field, Hl7Repetition, Hl7Segment, ParsedHl7 } from './parse';

/**
 * HL7 v2 → FHIR R4, after the HL7 v2-to-FHIR IG's segment maps (http://hl7.org/fhir/uv/v2mappings),
 * for any message type and trigger: each segment the IG maps becomes its resource wherever it
 * appears (MSH → MessageHeader, EVN → Provenance, PID/PD1 → Patient, MRG → Patient.link, NK1 and
 * GT1 → RelatedPerson, PV1/PV2 → Encounter, AL1/IAM → AllergyIntolerance, DG1 → Condition, PR1 →
 * Procedure, IN1/IN2 → Coverage, ORC/OBR/TQ1 → ServiceRequest, OBR → DiagnosticReport, OBX →
 * Observation, NTE → note, SPM → Specimen, RXO/RXE → MedicationRequest, RXA → Immunization or
 * MedicationAdministration, RXR → route, SCH/AIS/AIG/AIL/AIP → Appointment, TXA →
 * DocumentReference, FT1 → ChargeItem). Segments it does not map (Z-segments among them) are left
 * out. The result is a message Bundle, MessageHeader first; every resource is tagged synthetic
 * (the sandbox takes synthetic data only). Resource ids derive from the message control id, so the
 * same message maps to the same Bundle.
 */

const META = { tag: [SYNTHETIC_TAG] };
/** Where the control id goes on the Bundle. */
export const CONTROL_ID_SYSTEM = 'https://sandbox.example/fhir/sid/hl7-control-id';

const nonEmpty = <T>(items: (T | undefined)[]): T[] | undefined => {
  const kept = items.filter((item): item is T => item !== undefined);
  return kept.length ? kept : undefined;
};
const all = <T>(field: Hl7Field, map: (repetition: Hl7Repetition) => T | undefined) => nonEmpty(field.repetitions.map(map));
/** A CodeableConcept as a one-item list, or undefined when the field holds no code and no text. */
const conceptList = (value: Hl7Repetition, defaultSystem?: string): CodeableConcept[] | undefined => {
  const concept = codeableConcept(value, defaultSystem);
  return concept ? [concept] : undefined;
};
/** A count (unsignedInt): a whole number of zero or more, else undefined. */
const count = (value: string): number | undefined => {
  const number = decimal(value);
  return number !== undefined && Number.isInteger(number) && number >= 0 ? number : undefined;
};
/** One element as a list, or undefined. */
const listOf = <T>(element: T | undefined): T[] | undefined => (element === undefined ? undefined : [element]);
/** An element with at least one value, else undefined (FHIR has no empty elements). */
const someValue = <T extends object>(element: T): T | undefined => (Object.keys(element).length > 0 ? element : undefined);

/** Adds to an optional list in place (a 256 KiB ORU adds thousands of results: no copying). */
function append<T>(list: T[] | undefined, item: T): T[] {
  if (!list) return [item];
  list.push(item);
  return list;
}
/** Drops undefined properties, so the JSON carries only elements with values. */
function compact<T extends object>(resource: T): T {
  return Object.fromEntries(Object.entries(resource).filter(([, value]) => value !== undefined && value !== '')) as T;
}

class BundleBuilder {
  private readonly added: { id: string; resource: FhirResource }[] = [];
  constructor(private readonly seed: string) {}

  /** A deterministic uuid (name-based, version 5 layout) from the message and `key`. */
  idFor(key: string): string {
    const hash = createHash('sha256').update(`${this.seed}|${key}`).digest('hex');
    const variant = ((Number.parseInt(hash.charAt(16), 16) & 0x3) | 0x8).toString(16);
    return `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-${variant}${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  }

  /** Adds a resource (later changes to it still count) and returns a reference to it. */
  add(key: string, resource: FhirResource): Reference {
    const id = this.idFor(key);
    this.added.push({ id, resource });
    return { reference: `urn:uuid:${id}` };
  }

  replace(reference: Reference, resource: FhirResource): void {
    const entry = this.added.find((added) => `urn:uuid:${added.id}` === reference.reference)!;
    entry.resource = resource;
  }

  /** The entries, each resource with its id and the synthetic tag up front. */
  entries(): BundleEntry[] {
    return this.added.map(({ id, resource: { resourceType, ...elements } }) => ({
      fullUrl: `urn:uuid:${id}`,
      resource: { resourceType, id, meta: META, ...elements } as FhirResource,
    }));
  }
}

interface Context {
  bundle: BundleBuilder;
  /** MSH-9.1^MSH-9.2, e.g. `ADT^A04`. */
  type: string;
  /** MSH-9.2 (or EVN-1), e.g. `A04`. */
  event: string;
  /** MSH-7's offset, for times sent without one. */
  offset: string;
  patient?: Reference;
  encounter?: Reference;
}

const when = (value: string, context: Context) => dateTime(value, context.offset);
const at = (value: string, context: Context) => instant(value, context.offset);

/** The IG's ConceptMap table 0001 (administrative sex) → AdministrativeGender. */
const GENDER: Record<string, Patient['gender']> = { M: 'male', F: 'female', O: 'other', A: 'other', N: 'other', X: 'other', U: 'unknown' };
const MARITAL: Record<string, string> = { M: 'M', S: 'S', D: 'D', W: 'W', A: 'L', E: 'L', N: 'A', I: 'I', B: 'U', P: 'T', R: 'T', G: 'T', C: 'T' };

/** PID-19 (SSN, v2.3–2.8 "retained for backward compatibility") → identifier of type SS under us-ssn. */
function ssnIdentifier(pid: Hl7Segment) {
  const value = pid.get(19);
  return value ? { type: { coding: [v2Coding('0203', 'SS')] }, system: 'http://hl7.org/fhir/sid/us-ssn', value } : undefined;
}

/** PID-20 (DLN: license number^issuing state^expiration date) → identifier of type DL. */
function driversLicense(pid: Hl7Segment) {
  const license = pid.field(20).first;
  if (!license.get(1)) return undefined;
  const end = date(license.get(3));
  return compact({
    type: { coding: [v2Coding('0203', 'DL')] },
    value: license.get(1),
    period: end ? { end } : undefined,
  });
}

function mapPatient(pid: Hl7Segment): Patient {
  const marital = pid.get(16);
  const deceased = pid.get(29) ? dateTime(pid.get(29)) : pid.get(30) === 'Y' ? true : undefined;
  const multipleBirth = pid.get(25) ? decimal(pid.get(25)) : undefined;
  return compact<Patient>({
    resourceType: 'Patient',
    // PID-2 (external id) and PID-4 (alternate id) are identifiers too, as in the IG's PID map.
    identifier: nonEmpty([
      ...pid.field(2).repetitions.map(identifier),
      ...pid.field(3).repetitions.map(identifier),
      ...pid.field(4).repetitions.map(identifier),
      ssnIdentifier(pid),
      driversLicense(pid),
    ]),
    active: true,
    name: all(pid.field(5), humanName),
    telecom: nonEmpty([
      ...pid.field(13).repetitions.map((r) => contactPoint(r, 'home')),
      ...pid.field(14).repetitions.map((r) => contactPoint(r, 'work')),
    ]),
    gender: GENDER[pid.get(8)],
    birthDate: date(pid.get(7)),
    ...(typeof deceased === 'string' ? { deceasedDateTime: deceased } : deceased ? { deceasedBoolean: true } : {}),
    address: all(pid.field(11), address),
    maritalStatus: MARITAL[marital]
      ? { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: MARITAL[marital]! }] }
      : marital === 'U'
        ? { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-NullFlavor', code: 'UNK' }] }
        : undefined,
    communication: conceptList(pid.field(15).first, 'urn:ietf:bcp:47')?.map((language) => ({ language })),
    ...(multipleBirth !== undefined && Number.isInteger(multipleBirth)
      ? { multipleBirthInteger: multipleBirth }
      : pid.get(24) === 'Y' || pid.get(24) === 'N'
        ? { multipleBirthBoolean: pid.get(24) === 'Y' }
        : {}),
  });
}

/** PD1-4 (primary care provider) and PD1-3 (primary facility) → Patient.generalPractitioner. */
function addPatientDemographics(pd1: Hl7Segment, patient: Patient): void {
  const practitioners = nonEmpty([
    ...pd1.field(4).repetitions.map(practitionerReference),
    ...pd1
      .field(3)
      .repetitions.map((facility) => (facility.get(1) ? ({ type: 'Organization', display: facility.get(1) } satisfies Reference) : undefined)),
  ]);
  if (practitioners) patient.generalPractitioner = [...(patient.generalPractitioner ?? []), ...practitioners];
}

const ENCOUNTER_CLASS: Record<string, { code: string; display: string }> = {
  I: { code: 'IMP', display: 'inpatient encounter' },
  B: { code: 'IMP', display: 'inpatient encounter' },
  O: { code: 'AMB', display: 'ambulatory' },
  R: { code: 'AMB', display: 'ambulatory' },
  C: { code: 'AMB', display: 'ambulatory' },
  E: { code: 'EMER', display: 'emergency' },
  P: { code: 'PRENC', display: 'pre-admission' },
};
/**
 * Encounter.status by ADT trigger, after the IG's ADT message maps (A04, a registration, is
 * `planned`; pre-admits and pending events are `planned`; cancellations of an admit `cancelled`).
 * PV1-45 (discharge date/time) makes any encounter `finished`.
 */
const ENCOUNTER_STATUS: Record<string, Encounter['status']> = {
  A01: 'in-progress',
  A02: 'in-progress',
  A03: 'finished',
  A04: 'planned',
  A05: 'planned',
  A06: 'in-progress',
  A07: 'in-progress',
  A08: 'in-progress',
  A09: 'in-progress',
  A10: 'in-progress',
  A11: 'cancelled',
  A12: 'in-progress',
  A13: 'in-progress',
  A14: 'planned',
  A15: 'planned',
  A16: 'in-progress',
  A21: 'onleave',
  A22: 'in-progress',
  A25: 'in-progress',
  A26: 'in-progress',
  A27: 'cancelled',
  A32: 'cancelled',
  A33: 'in-progress',
  A38: 'cancelled',
};

/** PL (point of care^room^bed^facility) as a display. */
const placeDisplay = (place: Hl7Repetition) => [place.get(4, 1), place.get(1), place.get(2), place.get(3)].filter(Boolean).join(' ');

function mapEncounter(pv1: Hl7Segment, pv2: Hl7Segment | undefined, context: Context): Encounter | undefined {
  const patientClass = pv1.get(2);
  if (patientClass === 'N') return undefined;
  const start = when(pv1.get(44), context);
  const end = when(pv1.get(45), context);
  const status = end ? 'finished' : ((context.type.startsWith('ADT^') ? ENCOUNTER_STATUS[context.event] : undefined) ?? 'unknown');
  const classCoding = ENCOUNTER_CLASS[patientClass];
  const location = placeDisplay(pv1.field(3).first);
  const prior = placeDisplay(pv1.field(6).first);
  const participants = (
    [
      [7, 'ATND', 'attender'],
      [8, 'REF', 'referrer'],
      [9, 'CON', 'consultant'],
      [17, 'ADM', 'admitter'],
    ] as const
  ).flatMap(([field, code, display]) =>
    pv1.field(field).repetitions.flatMap((repetition) => {
      const individual = practitionerReference(repetition);
      return individual
        ? [{ type: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType', code, display }] }], individual }]
        : [];
    }),
  );
  return compact<Encounter>({
    resourceType: 'Encounter',
    identifier: all(
      pv1.field(19),
      (visit) => identifier(visit) && { ...identifier(visit)!, type: { coding: [v2Coding('0203', 'VN', 'Visit number')] } },
    ),
    status,
    class: classCoding
      ? { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', ...classCoding }
      : { system: 'http://terminology.hl7.org/CodeSystem/v3-NullFlavor', code: 'UNK' },
    // PV1-4 (admission type, table 0007) → Encounter.type, as the IG's PV1 map has it.
    type: pv1.get(4) ? [{ coding: [v2Coding('0007', pv1.get(4))] }] : undefined,
    serviceType: pv1.get(10) ? { coding: [v2Coding('0069', pv1.get(10))] } : undefined,
    subject: context.patient,
    participant: participants.length ? participants : undefined,
    period: start || end ? compact({ start, end }) : undefined,
    reasonCode: pv2 ? conceptList(pv2.field(3).first) : undefined,
    hospitalization:
      pv1.get(14) || pv1.get(36)
        ? compact({
            admitSource: pv1.get(14) ? { coding: [v2Coding('0023', pv1.get(14))] } : undefined,
            dischargeDisposition: pv1.get(36) ? { coding: [v2Coding('0112', pv1.get(36))] } : undefined,
          })
        : undefined,
    location: nonEmpty([
      prior && context.type === 'ADT^A02' ? { location: { display: prior }, status: 'completed' as const } : undefined,
      location ? { location: { display: location }, status: status === 'finished' ? ('completed' as const) : ('active' as const) } : undefined,
    ]),
  });
}

function mapRelatedPerson(nk1: Hl7Segment, context: Context): RelatedPerson {
  return compact<RelatedPerson>({
    resourceType: 'RelatedPerson',
    active: true,
    patient: context.patient!,
    relationship: conceptList(nk1.field(3).first, 'http://terminology.hl7.org/CodeSystem/v2-0063'),
    name: all(nk1.field(2), humanName),
    telecom: nonEmpty([
      ...nk1.field(5).repetitions.map((r) => contactPoint(r, 'home')),
      ...nk1.field(6).repetitions.map((r) => contactPoint(r, 'work')),
    ]),
    address: all(nk1.field(4), address),
  });
}

const SUBSCRIBER_RELATIONSHIP: Record<string, string> = {
  SEL: 'self',
  SPO: 'spouse',
  CHD: 'child',
  PAR: 'parent',
  EME: 'injured',
  OTH: 'other',
  DOM: 'common',
};

function mapCoverage(in1: Hl7Segment, context: Context): Coverage {
  const relationship = SUBSCRIBER_RELATIONSHIP[in1.get(17)];
  const start = date(in1.get(12));
  const end = date(in1.get(13));
  return compact<Coverage>({
    resourceType: 'Coverage',
    identifier: all(in1.field(36), (policy) => (policy.get(1) ? { value: policy.get(1) } : undefined)),
    status: 'active',
    type: in1.get(15) ? { coding: [v2Coding('0086', in1.get(15))] } : undefined,
    subscriberId: in1.get(36) || undefined,
    beneficiary: context.patient!,
    relationship: relationship
      ? { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/subscriber-relationship', code: relationship }] }
      : undefined,
    period: start || end ? compact({ start, end }) : undefined,
    // Coverage.payor is required: IN1-3 (insurance company id) or IN1-4 (its name), else said to be unknown.
    payor: [
      in1.field(3).present || in1.get(4, 1)
        ? compact({ identifier: entityIdentifier(in1.field(3).first), display: in1.get(4, 1) || undefined })
        : { display: 'Payer not named in IN1-3/IN1-4' },
    ],
    class: in1.get(8)
      ? [
          compact({
            type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/coverage-class', code: 'group' }] },
            value: in1.get(8),
            name: in1.get(9, 1) || undefined,
          }),
        ]
      : undefined,
  });
}

const ORDER_STATUS: Record<string, ServiceRequest['status']> = {
  NW: 'active',
  OK: 'active',
  SC: 'active',
  XO: 'active',
  CA: 'revoked',
  OC: 'revoked',
  DC: 'revoked',
  CR: 'revoked',
  HD: 'on-hold',
  OH: 'on-hold',
  CM: 'completed',
  RE: 'completed',
};

/** The IG's ConceptMap table 0038 (ORC-5, order status) → ServiceRequest.status. */
const ORDER_STATUS_0038: Record<string, ServiceRequest['status']> = {
  A: 'active',
  CA: 'revoked',
  CM: 'completed',
  DC: 'revoked',
  ER: 'entered-in-error',
  HD: 'on-hold',
  IP: 'active',
  RP: 'revoked',
  SC: 'active',
};

/** ServiceRequest.status: ORC-5 when sent, else what ORC-1 (order control) implies, else `completed` for results. */
function orderStatus(orc: Hl7Segment | undefined, isResult: boolean): ServiceRequest['status'] {
  return ORDER_STATUS_0038[orc?.get(5) ?? ''] ?? ORDER_STATUS[orc?.get(1) ?? ''] ?? (isResult ? 'completed' : 'active');
}

function orderIdentifiers(orc: Hl7Segment | undefined, obr: Hl7Segment | undefined) {
  const placer = orc?.field(2).present ? orc.field(2).first : obr?.field(2).first;
  const filler = orc?.field(3).present ? orc.field(3).first : obr?.field(3).first;
  return nonEmpty([placer && entityIdentifier(placer, 'PLAC'), filler && entityIdentifier(filler, 'FILL')]);
}

const PRIORITY: Record<string, ServiceRequest['priority']> = { S: 'stat', A: 'asap', R: 'routine', P: 'urgent', C: 'urgent', T: 'urgent' };

function mapServiceRequest(orc: Hl7Segment | undefined, obr: Hl7Segment, isResult: boolean, context: Context): ServiceRequest {
  const requester = (orc?.field(12).present ? orc.field(12) : obr.field(16)).first;
  return compact<ServiceRequest>({
    resourceType: 'ServiceRequest',
    identifier: orderIdentifiers(orc, obr),
    status: orderStatus(orc, isResult),
    intent: 'order',
    priority: PRIORITY[obr.get(5)],
    code: codeableConcept(obr.field(4).first),
    subject: context.patient!,
    encounter: context.encounter,
    authoredOn: when(orc?.get(9) ?? '', context),
    requester: practitionerReference(requester),
    reasonCode: all(obr.field(31), (reason) => codeableConcept(reason)),
  });
}

/** TQ1 (timing/quantity) → the order's occurrence and priority. */
function addTiming(tq1: Hl7Segment, request: ServiceRequest, context: Context): void {
  const start = when(tq1.get(7), context);
  const end = when(tq1.get(8), context);
  if (start || end) {
    delete request.occurrenceDateTime;
    request.occurrencePeriod = compact({ start, end });
  }
  const priority = PRIORITY[tq1.get(9)];
  if (priority) request.priority = priority;
}

const REPORT_STATUS: Record<string, DiagnosticReport['status']> = {
  F: 'final',
  P: 'preliminary',
  C: 'corrected',
  A: 'partial',
  X: 'cancelled',
  R: 'registered',
  S: 'registered',
  I: 'registered',
  O: 'registered',
  Y: 'unknown',
  Z: 'unknown',
};

function mapDiagnosticReport(orc: Hl7Segment | undefined, obr: Hl7Segment, basedOn: Reference | undefined, context: Context): DiagnosticReport {
  const section = obr.get(24) || 'LAB';
  return compact<DiagnosticReport>({
    resourceType: 'DiagnosticReport',
    // OBR-2/ORC-2 (placer) and OBR-3/ORC-3 (filler order number), as the IG's OBR map has both.
    identifier: orderIdentifiers(orc, obr),
    basedOn: basedOn ? [basedOn] : undefined,
    status: REPORT_STATUS[obr.get(25)] ?? 'final',
    category: [{ coding: [v2Coding('0074', section)] }],
    code: codeableConcept(obr.field(4).first)!,
    subject: context.patient,
    encounter: context.encounter,
    effectiveDateTime: when(obr.get(7), context),
    issued: at(obr.get(22), context),
  });
}

/** The IG's ConceptMap table 0085 (OBX-11) → ObservationStatus (A amended, D entered-in-error, I registered, S preliminary …). */
const OBSERVATION_STATUS: Record<string, Observation['status']> = {
  A: 'amended',
  F: 'final',
  P: 'preliminary',
  C: 'corrected',
  R: 'preliminary',
  S: 'preliminary',
  I: 'registered',
  O: 'registered',
  X: 'cancelled',
  D: 'entered-in-error',
  W: 'entered-in-error',
  U: 'final',
  N: 'unknown',
};
/** HL7 table 0078 flags that v3 ObservationInterpretation shares. */
const INTERPRETATIONS = new Set([
  'L',
  'H',
  'LL',
  'HH',
  '<',
  '>',
  'N',
  'A',
  'AA',
  'S',
  'R',
  'I',
  'U',
  'D',
  'B',
  'W',
  'NEG',
  'POS',
  'IND',
  'DET',
  'ND',
  'HU',
  'LU',
  'NR',
  'E',
  'EX',
  'IE',
  'SDD',
  'SYN-R',
  'SYN-S',
  'MS',
  'VS',
  'QCF',
  'TOX',
  'RR',
  'CAR',
  'H>',
  'L<',
  'HX',
  'LX',
  'EXP',
  'UNE',
  'OBX',
  'NCL',
  'CARRIER',
]);
const COMPARATORS = new Set(['<', '<=', '>=', '>']);

function unitOf(obx: Hl7Segment): Omit<Quantity, 'value'> {
  const units = obx.field(6).first;
  const code = units.get(1);
  if (!code) return {};
  const ucum = /^(UCUM|ucum)$/.test(units.get(3)) || units.get(3) === '';
  return { unit: units.get(2) || code, ...(ucum ? { system: 'http://unitsofmeasure.org', code } : {}) };
}

function referenceRange(text: string, unit: Omit<Quantity, 'value'>): ObservationReferenceRange | undefined {
  if (!text) return undefined;
  const quantity = (value: string) => ({ value: decimal(value)!, ...unit });
  const range = /^\s*(-?[\d.]+)\s*-\s*(-?[\d.]+)\s*$/.exec(text);
  if (range && decimal(range[1]!) !== undefined && decimal(range[2]!) !== undefined)
    return { low: quantity(range[1]!), high: quantity(range[2]!), text };
  const bound = /^\s*([<>]=?)\s*(-?[\d.]+)\s*$/.exec(text);
  if (bound && decimal(bound[2]!) !== undefined)
    return bound[1]!.startsWith('<') ? { high: quantity(bound[2]!), text } : { low: quantity(bound[2]!), text };
  return { text };
}

type ObservationValue = Pick<
  Observation,
  'valueQuantity' | 'valueCodeableConcept' | 'valueString' | 'valueDateTime' | 'valueTime' | 'valueRange' | 'valueRatio' | 'valueInteger'
>;

const TEXT_TYPES = new Set(['ST', 'TX', 'FT']);

/** One repetition of OBX-5 by its value type (OBX-2), after the IG's OBX map: undefined when it does not read as that type. */
function observationValue(type: string, value: Hl7Repetition, unit: Omit<Quantity, 'value'>, context: Context): ObservationValue | undefined {
  switch (type) {
    case 'NM': {
      const number = decimal(value.get(1));
      return number === undefined ? undefined : { valueQuantity: { value: number, ...unit } };
    }
    case 'SN': {
      const [comparator, first, separator, second] = [value.get(1), decimal(value.get(2)), value.get(3), decimal(value.get(4))];
      if (first === undefined) return undefined;
      if (second !== undefined && (separator === ':' || separator === '/'))
        return { valueRatio: { numerator: { value: first }, denominator: { value: second } } };
      if (second !== undefined && (separator === '-' || separator === ''))
        return { valueRange: { low: { value: first, ...unit }, high: { value: second, ...unit } } };
      if (comparator === '<>') return { valueString: value.components.map((component) => component.join(' ')).join('') };
      return {
        valueQuantity: { value: first, ...(COMPARATORS.has(comparator) ? { comparator: comparator as Quantity['comparator'] } : {}), ...unit },
      };
    }
    case 'CWE':
    case 'CE':
    case 'CNE':
    case 'CF': {
      const concept = codeableConcept(value);
      return concept ? { valueCodeableConcept: concept } : undefined;
    }
    case 'ID':
    case 'IS':
      return value.get(1) ? { valueCodeableConcept: { coding: [{ code: value.get(1) }] } } : undefined;
    case 'DT':
    case 'DTM':
    case 'TS': {
      const moment = when(value.get(1), context);
      return moment ? { valueDateTime: moment } : undefined;
    }
    case 'TM': {
      const time = /^(\d{2})(\d{2})?(\d{2})?/.exec(value.get(1));
      return time && Number(time[1]) < 24 ? { valueTime: `${time[1]}:${time[2] ?? '00'}:${time[3] ?? '00'}` } : undefined;
    }
    default: {
      const text = value.components
        .map((component) => component.filter(Boolean).join(' '))
        .filter(Boolean)
        .join(' ');
      return text ? { valueString: text } : undefined;
    }
  }
}

/**
 * OBX-5 by OBX-2. Text types (ST, TX, FT) repeat line by line and become one string; any other
 * repeated value becomes one component per repetition (the IG: a repeating OBX-5 is not one value).
 */
function observationValues(obx: Hl7Segment, context: Context): Partial<Observation> {
  const value = obx.field(5);
  if (!value.present) return {};
  const type = obx.get(2);
  const unit = unitOf(obx);
  if (TEXT_TYPES.has(type) || (type === '' && value.repetitions.length > 1))
    return { valueString: value.repetitions.map((line) => line.components.map((component) => component.join(' ')).join(' ')).join('\n') };
  const values = value.repetitions.filter((repetition) => repetition.present).map((repetition) => observationValue(type, repetition, unit, context));
  if (values.length === 1) return values[0] ?? {};
  const code = codeableConcept(obx.field(3).first);
  const components = values.filter((item): item is ObservationValue => item !== undefined).map((item) => ({ code, ...item }) as ObservationComponent);
  return code && components.length ? { component: components } : {};
}

/** OBX → Observation; undefined without OBX-3 (Observation.code is required), a warning already reported. */
function mapObservation(obx: Hl7Segment, obr: Hl7Segment | undefined, context: Context): Observation | undefined {
  const code = codeableConcept(obx.field(3).first);
  if (!code) return undefined;
  const unit = unitOf(obx);
  const range = referenceRange(obx.get(7), unit);
  const interpretation = all(obx.field(8), (flag) => {
    const code = flag.get(1);
    if (!code) return undefined;
    return {
      coding: [
        INTERPRETATIONS.has(code) ? { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code } : v2Coding('0078', code),
      ],
    } as CodeableConcept;
  });
  return compact<Observation>({
    resourceType: 'Observation',
    // OBX-11 through the IG's ConceptMap table 0085; unknown when it is missing or not in the table.
    status: OBSERVATION_STATUS[obx.get(11)] ?? 'unknown',
    category: obr
      ? [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory', display: 'Laboratory' }] }]
      : undefined,
    code,
    subject: context.patient,
    encounter: context.encounter,
    effectiveDateTime: when(obx.get(14) || (obr?.get(7) ?? ''), context),
    ...observationValues(obx, context),
    interpretation,
    referenceRange: range ? [range] : undefined,
  });
}

const APPOINTMENT_STATUS: Record<string, Appointment['status']> = {
  S12: 'booked',
  S13: 'booked',
  S14: 'booked',
  S15: 'cancelled',
  S16: 'cancelled',
  S17: 'entered-in-error',
  S26: 'noshow',
};
const FILLER_STATUS: Record<string, Appointment['status']> = {
  Booked: 'booked',
  Cancelled: 'cancelled',
  Complete: 'fulfilled',
  Deleted: 'entered-in-error',
  Noshow: 'noshow',
  Overbook: 'booked',
  Pending: 'pending',
  Started: 'arrived',
  Waitlist: 'waitlist',
};
const DURATION_MINUTES: Record<string, number> = { MIN: 1, min: 1, M: 1, H: 60, h: 60, HR: 60, S: 1 / 60, s: 1 / 60 };

/** An SCH and the resource segments (AIS, AIG, AIL, AIP) that follow it. */
interface ScheduleGroup {
  sch: Hl7Segment;
  resources: Hl7Segment[];
}

function mapAppointment({ sch, resources }: ScheduleGroup, context: Context): Appointment {
  const named = (name: string) => resources.filter((segment) => segment.name === name);
  const ais = named('AIS')[0];
  const start = at(ais?.get(4) || sch.get(11, 4), context);
  const duration = decimal(ais?.get(7) ?? '') ?? decimal(sch.get(9));
  const minutes = duration === undefined ? undefined : Math.round(duration * (DURATION_MINUTES[ais?.get(8, 1) || sch.get(10, 1) || 'MIN'] ?? 1));
  // SCH-25 (filler status code, table 0278) when sent, else what the trigger means.
  const status = FILLER_STATUS[sch.get(25, 1)] ?? APPOINTMENT_STATUS[context.event] ?? 'booked';
  const people = [
    ...named('AIP').flatMap((aip) => {
      const actor = practitionerReference(aip.field(3).first);
      return actor ? [{ actor, status: 'accepted' as const }] : [];
    }),
    ...named('AIL').flatMap((ail) => {
      const display = placeDisplay(ail.field(3).first);
      return display ? [{ actor: { type: 'Location', display }, status: 'accepted' as const }] : [];
    }),
    // AIG (general resource): a participant named by its resource id or type (IG: AIG → Appointment.participant).
    ...named('AIG').flatMap((aig) => {
      const display = aig.get(3, 2) || aig.get(3, 1) || aig.get(4, 2) || aig.get(4, 1);
      return display ? [{ actor: { display }, status: 'accepted' as const }] : [];
    }),
  ];
  return compact<Appointment>({
    resourceType: 'Appointment',
    identifier: nonEmpty([entityIdentifier(sch.field(1).first, 'PLAC'), entityIdentifier(sch.field(2).first, 'FILL')]),
    status,
    cancelationReason: status === 'cancelled' && sch.field(6).present ? codeableConcept(sch.field(6).first) : undefined,
    serviceType: ais ? conceptList(ais.field(3).first) : undefined,
    appointmentType: sch.field(8).present ? codeableConcept(sch.field(8).first, 'http://terminology.hl7.org/CodeSystem/v2-0276') : undefined,
    reasonCode: conceptList(sch.field(7).first),
    description: sch.get(7, 2) || undefined,
    start,
    end: start && minutes !== undefined ? addMinutes(start, minutes) : undefined,
    minutesDuration: minutes && minutes > 0 ? minutes : undefined,
    participant: [...(context.patient ? [{ actor: context.patient, status: 'accepted' as const }] : []), ...people],
  });
}

const DOC_STATUS: Record<string, DocumentReference['docStatus']> = {
  AU: 'final',
  LA: 'final',
  PA: 'preliminary',
  IP: 'preliminary',
  IN: 'preliminary',
  DI: 'preliminary',
  DO: 'preliminary',
};

/** A TXA and the OBX segments after it, its content. */
interface DocumentGroup {
  txa: Hl7Segment;
  observations: Hl7Segment[];
}

function mapDocumentReference({ txa, observations }: DocumentGroup, context: Context): DocumentReference {
  const encapsulated = observations.find((obx) => obx.get(2) === 'ED');
  const attachment = encapsulated
    ? {
        contentType: `${encapsulated.get(5, 2) === 'TEXT' ? 'text' : encapsulated.get(5, 2).toLowerCase()}/${encapsulated.get(5, 3).toLowerCase()}`,
        data: encapsulated.get(5, 5),
      }
    : {
        contentType: 'text/plain; charset=utf-8',
        data: Buffer.from(
          observations
            .map((obx) =>
              obx
                .field(5)
                .repetitions.map((line) => line.components.map((component) => component.join(' ')).join(' '))
                .join('\n'),
            )
            .join('\n'),
          'utf8',
        ).toString('base64'),
      };
  const author = practitionerReference(txa.field(9).first) ?? practitionerReference(txa.field(5).first);
  return compact<DocumentReference>({
    resourceType: 'DocumentReference',
    masterIdentifier: entityIdentifier(txa.field(12).first),
    identifier: nonEmpty([entityIdentifier(txa.field(14).first, 'PLAC'), entityIdentifier(txa.field(15).first, 'FILL')]),
    status: txa.get(17) === 'DO' ? 'superseded' : 'current',
    docStatus: DOC_STATUS[txa.get(17)],
    type: codeableConcept(txa.field(2).first, 'http://terminology.hl7.org/CodeSystem/v2-0270'),
    subject: context.patient,
    date: at(txa.get(4) || txa.get(6), context),
    author: author ? [author] : undefined,
    description: txa.get(2, 2) || undefined,
    content: [{ attachment: compact({ ...attachment, title: txa.get(2, 2) || undefined }) }],
    context: context.encounter ? { encounter: [context.encounter] } : undefined,
  });
}

const IMMUNIZATION_STATUS: Record<string, Immunization['status']> = { CP: 'completed', PA: 'completed', RE: 'not-done', NA: 'not-done' };

function mapImmunization(rxa: Hl7Segment, rxr: Hl7Segment | undefined, context: Context): Immunization {
  const status = IMMUNIZATION_STATUS[rxa.get(20)] ?? 'completed';
  const amount = decimal(rxa.get(6));
  const performer = practitionerReference(rxa.field(10).first);
  return compact<Immunization>({
    resourceType: 'Immunization',
    status,
    statusReason: status === 'not-done' && rxa.field(18).present ? codeableConcept(rxa.field(18).first) : undefined,
    vaccineCode: codeableConcept(rxa.field(5).first, 'http://hl7.org/fhir/sid/cvx')!,
    patient: context.patient!,
    encounter: context.encounter,
    occurrenceDateTime: when(rxa.get(3), context)!,
    primarySource: rxa.get(9) !== '01',
    lotNumber: rxa.get(15) || undefined,
    expirationDate: date(rxa.get(16)),
    manufacturer: rxa.field(17).present
      ? compact({
          identifier: rxa.get(17, 1) ? { system: 'http://hl7.org/fhir/sid/mvx', value: rxa.get(17, 1) } : undefined,
          display: rxa.get(17, 2) || undefined,
        })
      : undefined,
    route: rxr?.field(1).present ? codeableConcept(rxr.field(1).first, 'http://terminology.hl7.org/CodeSystem/v2-0162') : undefined,
    site: rxr?.field(2).present ? codeableConcept(rxr.field(2).first, 'http://terminology.hl7.org/CodeSystem/v2-0163') : undefined,
    doseQuantity:
      amount !== undefined && amount !== 999
        ? { value: amount, ...(rxa.get(7) ? { unit: rxa.get(7, 2) || rxa.get(7), system: 'http://unitsofmeasure.org', code: rxa.get(7) } : {}) }
        : undefined,
    performer: performer ? [{ function: { coding: [v2Coding('0443', 'AP', 'Administering Provider')] }, actor: performer }] : undefined,
  });
}

/** What an RXE and an RXO both say of a medication order: dose, route (from the RXR) and instructions, and what to dispense. */
function dosageAndDispense(
  order: { dose?: number; doseUnit: Hl7Repetition; instructions: string; quantity?: number; quantityUnit?: string; refills?: number },
  rxr: Hl7Segment | undefined,
): Pick<MedicationRequest, 'dosageInstruction' | 'dispenseRequest'> {
  const { dose, doseUnit, instructions, quantity, quantityUnit, refills } = order;
  return {
    dosageInstruction: listOf(
      someValue(
        compact({
          text: instructions || undefined,
          route: rxr?.field(1).present ? codeableConcept(rxr.field(1).first, 'http://terminology.hl7.org/CodeSystem/v2-0162') : undefined,
          doseAndRate:
            dose !== undefined
              ? [{ doseQuantity: { value: dose, ...(doseUnit.get(1) ? { unit: doseUnit.get(2) || doseUnit.get(1) } : {}) } }]
              : undefined,
        }),
      ),
    ),
    dispenseRequest:
      quantity !== undefined || refills !== undefined
        ? compact({
            numberOfRepeatsAllowed: refills,
            quantity: quantity !== undefined ? { value: quantity, ...(quantityUnit ? { unit: quantityUnit } : {}) } : undefined,
          })
        : undefined,
  };
}

/** RXE → MedicationRequest; undefined without a give code (RXE-2) or a patient, which the resource requires. */
function mapMedicationRequest(
  orc: Hl7Segment | undefined,
  rxe: Hl7Segment,
  rxr: Hl7Segment | undefined,
  context: Context,
): MedicationRequest | undefined {
  const medication = codeableConcept(rxe.field(2).first, 'http://www.nlm.nih.gov/research/umls/rxnorm');
  if (!medication || !context.patient) return undefined;
  const dose = decimal(rxe.get(3));
  const quantity = decimal(rxe.get(10));
  const refills = count(rxe.get(12));
  const instructions = rxe.get(7, 2) || rxe.get(7, 1) || rxe.get(21, 2) || rxe.get(21, 1);
  const doseUnit = rxe.field(5).first;
  return compact<MedicationRequest>({
    resourceType: 'MedicationRequest',
    identifier: orderIdentifiers(orc, undefined),
    status: ORDER_STATUS[orc?.get(1) ?? ''] === 'revoked' ? 'cancelled' : 'active',
    intent: 'order',
    medicationCodeableConcept: medication,
    subject: context.patient,
    encounter: context.encounter,
    authoredOn: when(orc?.get(9) ?? '', context),
    requester: orc ? practitionerReference(orc.field(12).first) : undefined,
    ...dosageAndDispense(
      { dose, doseUnit, instructions, quantity, refills, quantityUnit: rxe.get(11) ? rxe.get(11, 2) || rxe.get(11) : undefined },
      rxr,
    ),
  });
}

function mapChargeItem(ft1: Hl7Segment, context: Context): ChargeItem {
  const quantity = decimal(ft1.get(10));
  const amount = decimal(ft1.get(11, 1, 1));
  const performer = practitionerReference(ft1.field(20).first);
  const transactionId = ft1.get(2) || ft1.get(1);
  return compact<ChargeItem>({
    resourceType: 'ChargeItem',
    identifier: transactionId ? [{ system: 'https://sandbox.example/fhir/sid/v2-transaction-id', value: transactionId }] : undefined,
    status: ft1.get(6) === 'CG' ? 'billable' : ft1.get(6) === 'CD' ? 'aborted' : 'unknown',
    code: codeableConcept(ft1.field(7).first, 'http://www.ama-assn.org/go/cpt') ?? { text: ft1.get(7, 1) || 'Transaction code not sent' },
    subject: context.patient!,
    context: context.encounter,
    occurrenceDateTime: when(ft1.get(4, 1), context),
    enteredDate: when(ft1.get(5), context),
    quantity: quantity !== undefined ? { value: quantity } : undefined,
    priceOverride: amount !== undefined ? { value: amount, currency: ft1.get(11, 1, 2) || 'USD' } : undefined,
    performer: performer ? [{ actor: performer }] : undefined,
    reason: all(ft1.field(19), (diagnosis) => codeableConcept(diagnosis, 'http://hl7.org/fhir/sid/icd-10-cm')),
  });
}

/** RXO (pharmacy/treatment order) → MedicationRequest, as the IG's RXO map has it (used where no RXE encodes the order). */
function mapOrderedMedication(
  orc: Hl7Segment | undefined,
  rxo: Hl7Segment,
  rxr: Hl7Segment | undefined,
  context: Context,
): MedicationRequest | undefined {
  const medication = codeableConcept(rxo.field(1).first, 'http://www.nlm.nih.gov/research/umls/rxnorm');
  if (!medication || !context.patient) return undefined;
  const dose = decimal(rxo.get(2));
  const quantity = decimal(rxo.get(11));
  const refills = count(rxo.get(13));
  const doseUnit = rxo.field(4).first;
  const instructions = rxo.get(6, 2) || rxo.get(6, 1);
  return compact<MedicationRequest>({
    resourceType: 'MedicationRequest',
    identifier: orderIdentifiers(orc, undefined),
    status: orderStatus(orc, false) === 'revoked' ? 'cancelled' : orderStatus(orc, false) === 'completed' ? 'completed' : 'active',
    intent: 'order',
    medicationCodeableConcept: medication,
    subject: context.patient,
    encounter: context.encounter,
    authoredOn: when(orc?.get(9) ?? '', context),
    requester: orc ? practitionerReference(orc.field(12).first) : practitionerReference(rxo.field(14).first),
    ...dosageAndDispense({ dose, doseUnit, instructions, quantity, refills }, rxr),
  });
}

/** RXA outside a vaccination message → MedicationAdministration (the IG maps RXA to Immunization only in VXU/immunization content). */
function mapMedicationAdministration(rxa: Hl7Segment, rxr: Hl7Segment | undefined, context: Context): MedicationAdministration | undefined {
  const medication = codeableConcept(rxa.field(5).first);
  const start = when(rxa.get(3), context);
  const end = when(rxa.get(4), context);
  if (!medication || !start || !context.patient) return undefined;
  const amount = decimal(rxa.get(6));
  return compact<MedicationAdministration>({
    resourceType: 'MedicationAdministration',
    status: rxa.get(20) === 'RE' || rxa.get(20) === 'NA' ? 'not-done' : rxa.get(20) === 'PA' ? 'in-progress' : 'completed',
    medicationCodeableConcept: medication,
    subject: context.patient,
    context: context.encounter,
    ...(end && end !== start ? { effectivePeriod: { start, end } } : { effectiveDateTime: start }),
    performer: rxa.field(10).present ? [{ actor: practitionerReference(rxa.field(10).first)! }] : undefined,
    dosage:
      amount !== undefined || rxr
        ? compact({
            route: rxr?.field(1).present ? codeableConcept(rxr.field(1).first, 'http://terminology.hl7.org/CodeSystem/v2-0162') : undefined,
            dose: amount !== undefined ? { value: amount, ...(rxa.get(7) ? { unit: rxa.get(7, 2) || rxa.get(7) } : {}) } : undefined,
          })
        : undefined,
  });
}

/** Table 0127 (allergen type) → AllergyIntolerance.category; table 0128 (severity) → criticality, after the IG's AL1 map. */
const ALLERGY_CATEGORY: Record<string, NonNullable<AllergyIntolerance['category']>[number]> = {
  DA: 'medication',
  MA: 'medication',
  FA: 'food',
  EA: 'environment',
  AA: 'environment',
  PA: 'environment',
  LA: 'environment',
};
const ALLERGY_CRITICALITY: Record<string, AllergyIntolerance['criticality']> = { SV: 'high', MO: 'low', MI: 'low', U: 'unable-to-assess' };

/** AL1 → AllergyIntolerance (AL1-2 type, AL1-3 allergen, AL1-4 severity, AL1-5 reaction, AL1-6 identification date). */
function mapAllergy(al1: Hl7Segment, context: Context): AllergyIntolerance | undefined {
  const code = codeableConcept(al1.field(3).first);
  if (!code || !context.patient) return undefined;
  const category = ALLERGY_CATEGORY[al1.get(2, 1)];
  const reactions = nonEmpty(
    al1.field(5).repetitions.map((reaction) => (reaction.get(1) ? { manifestation: [{ text: reaction.get(1) }] } : undefined)),
  );
  return compact<AllergyIntolerance>({
    resourceType: 'AllergyIntolerance',
    clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
    category: category ? [category] : undefined,
    criticality: ALLERGY_CRITICALITY[al1.get(4, 1)],
    code,
    patient: context.patient,
    recordedDate: when(al1.get(6), context),
    reaction: reactions,
  });
}

/** IAM (patient adverse reaction information) → AllergyIntolerance, as AL1 plus IAM-11 onset and IAM-17 status. */
function mapAdverseReaction(iam: Hl7Segment, context: Context): AllergyIntolerance | undefined {
  const code = codeableConcept(iam.field(3).first);
  if (!code || !context.patient) return undefined;
  const category = ALLERGY_CATEGORY[iam.get(2, 1)];
  const clinical = iam.get(17, 1) === 'I' || iam.get(17, 1) === 'C' ? 'inactive' : 'active';
  return compact<AllergyIntolerance>({
    resourceType: 'AllergyIntolerance',
    identifier: iam.get(7, 1) ? [entityIdentifier(iam.field(7).first)!] : undefined,
    clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: clinical }] },
    category: category ? [category] : undefined,
    criticality: ALLERGY_CRITICALITY[iam.get(4, 1)],
    code,
    patient: context.patient,
    onsetDateTime: when(iam.get(11), context),
    reaction: iam.field(5).present ? [{ manifestation: [codeableConcept(iam.field(5).first) ?? { text: iam.get(5) }] }] : undefined,
  });
}

/** DG1 → Condition (an encounter diagnosis), after the IG's DG1 map: DG1-3 code, DG1-5 onset, DG1-16 diagnosing clinician. */
function mapCondition(dg1: Hl7Segment, context: Context): Condition | undefined {
  const code = codeableConcept(dg1.field(3).first, 'http://hl7.org/fhir/sid/icd-10-cm');
  if (!code || !context.patient) return undefined;
  return compact<Condition>({
    resourceType: 'Condition',
    category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-category', code: 'encounter-diagnosis' }] }],
    code,
    subject: context.patient,
    encounter: context.encounter,
    onsetDateTime: when(dg1.get(5), context),
    recorder: practitionerReference(dg1.field(16).first),
  });
}

/** PR1 → Procedure, after the IG's PR1 map: PR1-3 code, PR1-5 performed, PR1-11/PR1-12 surgeon and practitioner. */
function mapProcedure(pr1: Hl7Segment, context: Context): Procedure | undefined {
  const code = codeableConcept(pr1.field(3).first, 'http://www.ama-assn.org/go/cpt');
  if (!code || !context.patient) return undefined;
  const performers = nonEmpty([...pr1.field(11).repetitions, ...pr1.field(12).repetitions].map(practitionerReference));
  const minutes = decimal(pr1.get(7));
  const start = when(pr1.get(5), context);
  return compact<Procedure>({
    resourceType: 'Procedure',
    status: 'completed',
    code,
    subject: context.patient,
    encounter: context.encounter,
    ...(start && minutes !== undefined && minutes > 0 && start.includes('T')
      ? { performedPeriod: { start, end: addMinutes(start, minutes) } }
      : start
        ? { performedDateTime: start }
        : {}),
    performer: performers?.map((actor) => ({ actor })),
  });
}

/** GT1 (guarantor) → RelatedPerson, as the IG maps a guarantor who is a person (GT1-3 name, GT1-11 relationship). */
function mapGuarantor(gt1: Hl7Segment, context: Context): RelatedPerson | undefined {
  if (!context.patient || !gt1.field(3).present) return undefined;
  return compact<RelatedPerson>({
    resourceType: 'RelatedPerson',
    identifier: all(gt1.field(2), identifier),
    active: true,
    patient: context.patient,
    relationship: nonEmpty([
      { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode', code: 'GUAR', display: 'guarantor' }] },
      gt1.field(11).present ? codeableConcept(gt1.field(11).first, 'http://terminology.hl7.org/CodeSystem/v2-0063') : undefined,
    ]),
    name: all(gt1.field(3), humanName),
    telecom: nonEmpty([
      ...gt1.field(6).repetitions.map((r) => contactPoint(r, 'home')),
      ...gt1.field(7).repetitions.map((r) => contactPoint(r, 'work')),
    ]),
    gender: GENDER[gt1.get(9)],
    birthDate: date(gt1.get(8)),
    address: all(gt1.field(5), address),
  });
}

/** SPM → Specimen (SPM-2 identifier, SPM-4 type, SPM-8 source site, SPM-17 collection time). */
function mapSpecimen(spm: Hl7Segment, context: Context): Specimen | undefined {
  const type = codeableConcept(spm.field(4).first, 'http://terminology.hl7.org/CodeSystem/v2-0487');
  const collected = when(spm.get(17, 1), context);
  const site = codeableConcept(spm.field(8).first);
  return compact<Specimen>({
    resourceType: 'Specimen',
    identifier: nonEmpty([
      entityIdentifier(spm.field(2).first, 'PLAC'),
      spm.field(2).first.get(2) ? entityIdentifier(spm.field(2).first, 'FILL') : undefined,
    ]),
    type,
    subject: context.patient,
    collection: collected || site ? compact({ collectedDateTime: collected, bodySite: site }) : undefined,
  });
}

/** NTE → an Annotation on the resource before it, when that resource has notes. */
function noteOf(nte: Hl7Segment): Annotation | undefined {
  const text = nte
    .field(3)
    .repetitions.map((line) => line.components.map((component) => component.join(' ')).join(' '))
    .join('\n');
  return text.trim() ? { text } : undefined;
}

/** MRG: the prior record, no longer active, linked both ways with the surviving one (PID). */
function mapMerge(mrg: Hl7Segment, survivor: Reference, survivorResource: Patient, context: Context): void {
  const prior = context.bundle.add(`MRG|${mrg.position}`, {
    resourceType: 'Patient',
    identifier: all(mrg.field(1), identifier),
    active: false,
    ...(mrg.field(7).present ? { name: all(mrg.field(7), humanName) } : {}),
    link: [{ other: survivor, type: 'replaced-by' }],
  } as Patient);
  survivorResource.link = [...(survivorResource.link ?? []), { other: prior, type: 'replaces' }];
}

/** EVN → Provenance of what the message is about (IG: EVN-2 recorded, EVN-4 reason, EVN-5 operator, EVN-6 occurred). */
function mapProvenance(evn: Hl7Segment, targets: Reference[], recorded: string, context: Context): Provenance {
  const occurred = when(evn.get(6), context);
  const operator = practitionerReference(evn.field(5).first);
  return compact<Provenance>({
    resourceType: 'Provenance',
    target: targets.map((target) => ({ reference: target.reference })),
    occurredDateTime: occurred,
    recorded: at(evn.get(2), context) ?? recorded,
    activity: { coding: [v2Coding('0003', context.event)] },
    reason: evn.get(4) ? [{ coding: [v2Coding('0062', evn.get(4))] }] : undefined,
    agent: [operator ? { who: operator } : { who: { display: 'sending application' } }],
  });
}

function mapMessageHeader(message: ParsedHl7, event: string, focus: Reference[]): MessageHeader {
  const msh = message.header;
  const endpoint = (application: string, facility: string) =>
    `urn:hl7v2:${encodeURIComponent(application || 'unknown')}:${encodeURIComponent(facility || 'unknown')}`;
  return compact<MessageHeader>({
    resourceType: 'MessageHeader',
    eventCoding: { system: 'http://terminology.hl7.org/CodeSystem/v2-0003', code: event },
    destination: msh.get(5) ? [{ name: msh.get(5), endpoint: endpoint(msh.get(5), msh.get(6)) }] : undefined,
    source: compact({ name: msh.get(3) || undefined, endpoint: endpoint(msh.get(3), msh.get(4)) }),
    focus: focus.length ? focus : undefined,
  });
}

/** The mapped message: the Bundle and the resources that are its subject. */
export interface MappedMessage {
  bundle: Bundle;
}

/** Message codes whose OBR/OBX are results (a DiagnosticReport per OBR), not orders with supporting observations. */
const RESULT_MESSAGES = new Set(['ORU', 'OUL', 'OPU', 'ORF', 'OSR', 'EDR', 'PEX']);
/** Resources with a `note` an NTE can join. */
const ANNOTATED = new Set([
  'Observation',
  'ServiceRequest',
  'MedicationRequest',
  'Immunization',
  'AllergyIntolerance',
  'Condition',
  'Procedure',
  'Specimen',
  'MedicationAdministration',
]);

/**
 * For each segment, whether an RXE follows it in the same order group (before the next ORC): one
 * pass from the end, so an RXO asks in constant time however many orders the message holds.
 */
function encodedOrders(message: ParsedHl7): boolean[] {
  const ahead = new Array<boolean>(message.segments.length);
  let seen = false;
  for (let index = message.segments.length - 1; index >= 0; index--) {
    ahead[index] = seen;
    const name = message.segments[index]!.name;
    if (name === 'RXE') seen = true;
    else if (name === 'ORC') seen = false;
  }
  return ahead;
}

/**
 * Maps a checked message (see validateHl7) of any type, `MSH-9.1^MSH-9.2`, to a FHIR R4 message
 * Bundle, segment by segment in message order: an OBX belongs to the OBR before it, an NTE to the
 * resource before it, a PV1 to the PID before it.
 */
export function mapToFhir(message: ParsedHl7, type: string): MappedMessage {
  const msh = message.header;
  const controlId = msh.get(10);
  const [code = '', event = ''] = type.split('^');
  const bundle = new BundleBuilder(`${msh.get(3)}|${msh.get(4)}|${controlId}`);
  const offset = /([+-]\d{4})$/.exec(msh.get(7))?.[1] ?? '+0000';
  const context: Context = { bundle, type, event, offset };
  const timestamp = at(msh.get(7), context) ?? new Date().toISOString();
  const header = bundle.add('MSH', { resourceType: 'MessageHeader' } as MessageHeader);
  const isAdt = code === 'ADT';
  const isResult = RESULT_MESSAGES.has(code);
  const isDocument = code === 'MDM';
  const isVaccination = code === 'VXU' || code === 'VXR' || code === 'VXX';
  /** What the message is about (MessageHeader.focus, Provenance.target). */
  const focus = { encounters: [] as Reference[], subjects: [] as Reference[], patients: [] as Reference[] };

  let patient: Patient | undefined;
  let encounter: Encounter | undefined;
  let orc: Hl7Segment | undefined;
  let obr: Hl7Segment | undefined;
  let order: ServiceRequest | undefined;
  let report: DiagnosticReport | undefined;
  // Each segment is read once: an appointment takes the AI* segments after its SCH, a document the OBX
  // after its TXA, so a message of thousands of them costs in proportion (no segment list per segment).
  const schedules: ScheduleGroup[] = [];
  const documents: DocumentGroup[] = [];
  const rxeInOrder = encodedOrders(message);
  /** The last resource mapped, for the NTE that follows it. */
  let last: FhirResource | undefined;
  /** Adds a mapped resource (none when the segment could not make one) and remembers it for an NTE. */
  const add = (key: string, resource: FhirResource | undefined): Reference | undefined => {
    if (!resource) return undefined;
    last = resource;
    return bundle.add(key, resource);
  };
  const next = (segment: Hl7Segment) => message.segments[segment.position];
  const routeAfter = (segment: Hl7Segment) => (next(segment)?.name === 'RXR' ? next(segment) : undefined);

  for (const segment of message.segments) {
    const key = `${segment.name}|${segment.position}`;
    switch (segment.name) {
      case 'PID': {
        patient = mapPatient(segment);
        const reference = bundle.add(key, patient);
        // The patient is referenced by display too, as the fixtures do.
        const name = patient.name?.[0];
        if (name) reference.display = [...(name.given ?? []), name.family].filter(Boolean).join(' ');
        context.patient = reference;
        context.encounter = undefined;
        focus.patients.push(reference);
        last = undefined;
        break;
      }
      case 'PD1':
        if (patient) addPatientDemographics(segment, patient);
        break;
      case 'MRG':
        if (patient && context.patient) mapMerge(segment, { reference: context.patient.reference }, patient, context);
        break;
      case 'NK1':
        if (context.patient) add(key, mapRelatedPerson(segment, context));
        break;
      case 'GT1':
        add(key, mapGuarantor(segment, context));
        break;
      case 'PV1': {
        const pv2 = next(segment)?.name === 'PV2' ? next(segment) : undefined;
        encounter = mapEncounter(segment, pv2, context);
        if (encounter) {
          context.encounter = bundle.add(key, encounter);
          focus.encounters.push(context.encounter);
        }
        break;
      }
      case 'AL1':
        add(key, mapAllergy(segment, context));
        break;
      case 'IAM':
        add(key, mapAdverseReaction(segment, context));
        break;
      case 'DG1': {
        const condition = add(key, mapCondition(segment, context));
        if (condition && encounter) {
          const rank = decimal(segment.get(15));
          encounter.diagnosis = [
            ...(encounter.diagnosis ?? []),
            compact({ condition, rank: rank && Number.isInteger(rank) && rank > 0 ? rank : undefined }),
          ];
        }
        break;
      }
      case 'PR1':
        add(key, mapProcedure(segment, context));
        break;
      case 'IN1':
        if (context.patient) add(key, mapCoverage(segment, context));
        break;
      case 'IN2': {
        // IN2-72 (patient's relationship to insured, v2.6+) when IN1-17 said nothing.
        const coverage = last?.resourceType === 'Coverage' ? last : undefined;
        const relationship = SUBSCRIBER_RELATIONSHIP[segment.get(72, 1)];
        if (coverage && !coverage.relationship && relationship)
          coverage.relationship = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/subscriber-relationship', code: relationship }] };
        break;
      }
      case 'ORC':
        orc = segment;
        obr = undefined;
        order = undefined;
        report = undefined;
        break;
      case 'OBR': {
        obr = segment;
        report = undefined;
        // ServiceRequest.subject is required: a result without a patient (the standard allows one) is a report only.
        order = context.patient ? mapServiceRequest(orc, segment, isResult, context) : undefined;
        const orderReference = add(key, order);
        if (isResult || segment.get(25) !== '') {
          report = mapDiagnosticReport(orc, segment, orderReference, context);
          if (report.code) focus.subjects.push(bundle.add(`OBR-report|${segment.position}`, report));
          else report = undefined;
        } else if (orderReference) focus.subjects.push(orderReference);
        break;
      }
      case 'TQ1':
        if (order) addTiming(segment, order, context);
        break;
      case 'OBX': {
        // In a document message the OBX are the document's text, not observations.
        if (isDocument) {
          documents.at(-1)?.observations.push(segment);
          break;
        }
        const reference = add(key, mapObservation(segment, obr, context));
        if (reference && report) report.result = append(report.result, reference);
        break;
      }
      case 'SPM': {
        const reference = add(key, mapSpecimen(segment, context));
        if (reference && report) report.specimen = append(report.specimen, reference);
        if (reference && order) order.specimen = append(order.specimen, reference);
        break;
      }
      case 'NTE': {
        const note = noteOf(segment);
        if (note && last && ANNOTATED.has(last.resourceType)) {
          const annotated = last as { note?: Annotation[] };
          annotated.note = append(annotated.note, note);
        }
        break;
      }
      case 'RXO':
        // RDE/RDS orders carry RXO and RXE: the encoded order (RXE) is the MedicationRequest then.
        if (!rxeInOrder[segment.position - 1]) {
          const reference = add(key, mapOrderedMedication(orc, segment, routeAfter(segment), context));
          if (reference) focus.subjects.push(reference);
        }
        break;
      case 'RXE':
        if (context.patient && segment.field(2).present) {
          const reference = add(key, mapMedicationRequest(orc, segment, routeAfter(segment) ?? message.segment('RXR'), context));
          if (reference) focus.subjects.push(reference);
        }
        break;
      case 'RXA': {
        const vaccine = isVaccination || /^CVX$/i.test(segment.get(5, 3));
        let resource: FhirResource | undefined;
        if (vaccine)
          resource =
            context.patient && segment.get(5, 1) && when(segment.get(3), context)
              ? mapImmunization(segment, routeAfter(segment), context)
              : undefined;
        else resource = mapMedicationAdministration(segment, routeAfter(segment), context);
        const reference = add(key, resource);
        if (reference) focus.subjects.push(reference);
        break;
      }
      case 'SCH':
        // SIU puts SCH before PID: the appointment is mapped once the patient is known.
        schedules.push({ sch: segment, resources: [] });
        break;
      case 'AIS':
      case 'AIG':
      case 'AIL':
      case 'AIP':
        schedules.at(-1)?.resources.push(segment);
        break;
      case 'TXA':
        documents.push({ txa: segment, observations: [] });
        break;
      case 'FT1':
        if (context.patient && segment.field(7).present) {
          const reference = add(key, mapChargeItem(segment, context));
          if (reference) focus.subjects.push(reference);
        }
        break;
    }
  }

  for (const document of documents) focus.subjects.push(add(`TXA|${document.txa.position}`, mapDocumentReference(document, context))!);
  for (const schedule of schedules) {
    const appointment = mapAppointment(schedule, context);
    if (appointment.participant.length) focus.subjects.unshift(add(`SCH|${schedule.sch.position}`, appointment)!);
  }

  // ADT messages are about the encounter and the patient; others about what they order, report or book (the patient when nothing else).
  const messageFocus = isAdt
    ? [...focus.encounters, ...focus.patients]
    : focus.subjects.length
      ? focus.subjects
      : [...focus.encounters, ...focus.patients];
  const evn = message.segment('EVN');
  // Provenance.target is required: without a resource to point at, EVN has nothing to say.
  if (evn && messageFocus.length) bundle.add('EVN', mapProvenance(evn, messageFocus, timestamp, context));
  bundle.replace(header, mapMessageHeader(message, event, messageFocus));
  return {
    bundle: {
      resourceType: 'Bundle',
      id: bundle.idFor('Bundle'),
      meta: META,
      identifier: { system: CONTROL_ID_SYSTEM, value: controlId },
      type: 'message',
      timestamp,
      entry: bundle.entries(),
    },
  };
}
