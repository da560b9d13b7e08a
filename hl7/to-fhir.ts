import { createHash } from 'node:crypto';
import type {
  Appointment,
  Bundle,
  BundleEntry,
  ChargeItem,
  CodeableConcept,
  Coverage,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  FhirResource,
  Immunization,
  MedicationRequest,
  MessageHeader,
  Observation,
  ObservationReferenceRange,
  Patient,
  Quantity,
  Reference,
  RelatedPerson,
  ServiceRequest,
} from 'fhir/r4';
import type { Hl7Trigger } from '../catalog/hl7-triggers';
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
 * HL7 v2 → FHIR R4, after the HL7 v2-to-FHIR IG's segment maps (MSH → MessageHeader, PID →
 * Patient, PV1/PV2 → Encounter, NK1 → RelatedPerson, IN1 → Coverage, ORC/OBR → ServiceRequest and
 * DiagnosticReport, OBX → Observation, SCH/AIS → Appointment, TXA → DocumentReference, RXA →
 * Immunization, RXE → MedicationRequest, FT1 → ChargeItem, MRG → Patient.link). The result is a
 * message Bundle; every resource is tagged synthetic (the sandbox takes synthetic data only).
 * Resource ids derive from the message control id, so the same message maps to the same Bundle.
 */

const META = { tag: [SYNTHETIC_TAG] };
/** Where the control id goes on the Bundle. */
export const CONTROL_ID_SYSTEM = 'https://sandbox.example/fhir/sid/hl7-control-id';

const nonEmpty = <T>(items: (T | undefined)[]): T[] | undefined => {
  const kept = items.filter((item): item is T => item !== undefined);
  return kept.length ? kept : undefined;
};
const all = <T>(field: Hl7Field, map: (repetition: Hl7Repetition) => T | undefined) => nonEmpty(field.repetitions.map(map));
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
  trigger: Hl7Trigger;
  /** MSH-7's offset, for times sent without one. */
  offset: string;
  patient?: Reference;
  encounter?: Reference;
  /** The resources the message is about (MessageHeader.focus). */
  focus: Reference[];
}

const when = (value: string, context: Context) => dateTime(value, context.offset);
const at = (value: string, context: Context) => instant(value, context.offset);

const GENDER: Record<string, Patient['gender']> = { M: 'male', F: 'female', O: 'other', A: 'other', X: 'other', U: 'unknown', N: 'unknown' };
const MARITAL: Record<string, string> = { M: 'M', S: 'S', D: 'D', W: 'W', A: 'L', E: 'L', N: 'A', I: 'I', B: 'U', P: 'T', R: 'T', G: 'T', C: 'T' };

function mapPatient(pid: Hl7Segment): Patient {
  const marital = pid.get(16);
  const deceased = pid.get(29) ? dateTime(pid.get(29)) : pid.get(30) === 'Y' ? true : undefined;
  return compact<Patient>({
    resourceType: 'Patient',
    identifier: all(pid.field(3), identifier),
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
    communication: pid.get(15) ? [{ language: codeableConcept(pid.field(15).first, 'urn:ietf:bcp:47')! }] : undefined,
  });
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
const ENCOUNTER_STATUS: Record<string, Encounter['status']> = {
  A01: 'in-progress',
  A02: 'in-progress',
  A03: 'finished',
  A04: 'arrived',
  A08: 'in-progress',
};

/** PL (point of care^room^bed^facility) as a display. */
const placeDisplay = (place: Hl7Repetition) => [place.get(4, 1), place.get(1), place.get(2), place.get(3)].filter(Boolean).join(' ');

function mapEncounter(pv1: Hl7Segment, pv2: Hl7Segment | undefined, context: Context): Encounter | undefined {
  const patientClass = pv1.get(2);
  if (patientClass === 'N') return undefined;
  const event = context.trigger.type.split('^')[1]!;
  const start = when(pv1.get(44), context);
  const end = when(pv1.get(45), context);
  const status = end ? 'finished' : (ENCOUNTER_STATUS[event] ?? 'unknown');
  const classCoding = ENCOUNTER_CLASS[patientClass];
  const location = placeDisplay(pv1.field(3).first);
  const prior = placeDisplay(pv1.field(6).first);
  const participants = (
    [
      [7, 'ATND', 'attender'],
      [8, 'REF', 'referrer'],
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
    serviceType: pv1.get(10) ? { coding: [v2Coding('0069', pv1.get(10))] } : undefined,
    subject: context.patient,
    participant: participants.length ? participants : undefined,
    period: start || end ? compact({ start, end }) : undefined,
    reasonCode: pv2?.field(3).present ? [codeableConcept(pv2.field(3).first)!] : undefined,
    hospitalization:
      pv1.get(14) || pv1.get(36)
        ? compact({
            admitSource: pv1.get(14) ? { coding: [v2Coding('0023', pv1.get(14))] } : undefined,
            dischargeDisposition: pv1.get(36) ? { coding: [v2Coding('0112', pv1.get(36))] } : undefined,
          })
        : undefined,
    location: nonEmpty([
      prior && context.trigger.type === 'ADT^A02' ? { location: { display: prior }, status: 'completed' as const } : undefined,
      location ? { location: { display: location }, status: status === 'finished' ? ('completed' as const) : ('active' as const) } : undefined,
    ]),
  });
}

function mapRelatedPerson(nk1: Hl7Segment, context: Context): RelatedPerson {
  return compact<RelatedPerson>({
    resourceType: 'RelatedPerson',
    active: true,
    patient: context.patient!,
    relationship: nk1.field(3).present ? [codeableConcept(nk1.field(3).first, 'http://terminology.hl7.org/CodeSystem/v2-0063')!] : undefined,
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
    payor: [compact({ identifier: entityIdentifier(in1.field(3).first), display: in1.get(4, 1) || undefined })],
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

function orderIdentifiers(orc: Hl7Segment | undefined, obr: Hl7Segment | undefined) {
  const placer = orc?.field(2).present ? orc.field(2).first : obr?.field(2).first;
  const filler = orc?.field(3).present ? orc.field(3).first : obr?.field(3).first;
  return nonEmpty([placer && entityIdentifier(placer, 'PLAC'), filler && entityIdentifier(filler, 'FILL')]);
}

function mapServiceRequest(orc: Hl7Segment | undefined, obr: Hl7Segment, context: Context): ServiceRequest {
  const requester = (orc?.field(12).present ? orc.field(12) : obr.field(16)).first;
  return compact<ServiceRequest>({
    resourceType: 'ServiceRequest',
    identifier: orderIdentifiers(orc, obr),
    status: context.trigger.type === 'ORU^R01' ? 'completed' : (ORDER_STATUS[orc?.get(1) ?? ''] ?? 'active'),
    intent: 'order',
    code: codeableConcept(obr.field(4).first),
    subject: context.patient!,
    encounter: context.encounter,
    authoredOn: when(orc?.get(9) ?? '', context),
    requester: practitionerReference(requester),
    reasonCode: all(obr.field(31), (reason) => codeableConcept(reason)),
  });
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

function mapDiagnosticReport(obr: Hl7Segment, basedOn: Reference, context: Context): DiagnosticReport {
  const section = obr.get(24) || 'LAB';
  return compact<DiagnosticReport>({
    resourceType: 'DiagnosticReport',
    identifier: orderIdentifiers(undefined, obr)?.filter((id) => id.type?.coding?.[0]?.code === 'FILL'),
    basedOn: [basedOn],
    status: REPORT_STATUS[obr.get(25)] ?? 'final',
    category: [{ coding: [v2Coding('0074', section)] }],
    code: codeableConcept(obr.field(4).first)!,
    subject: context.patient,
    encounter: context.encounter,
    effectiveDateTime: when(obr.get(7), context),
    issued: at(obr.get(22), context),
  });
}

const OBSERVATION_STATUS: Record<string, Observation['status']> = {
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

/** OBX-5 by its value type (OBX-2): NM, SN, CWE/CE/CNE, ST/TX/FT, DT/DTM/TS; anything else as text. */
function observationValue(obx: Hl7Segment, context: Context): Partial<Observation> {
  const value = obx.field(5);
  if (!value.present) return {};
  const unit = unitOf(obx);
  switch (obx.get(2)) {
    case 'NM':
      return { valueQuantity: { value: decimal(value.get(1))!, ...unit } };
    case 'SN': {
      const [comparator, first, separator, second] = [value.get(1), decimal(value.get(2)), value.get(3), decimal(value.get(4))];
      if (second !== undefined && (separator === ':' || separator === '/'))
        return { valueRatio: { numerator: { value: first! }, denominator: { value: second } } };
      if (second !== undefined && (separator === '-' || separator === ''))
        return { valueRange: { low: { value: first!, ...unit }, high: { value: second, ...unit } } };
      if (comparator === '<>') return { valueString: value.raw };
      return {
        valueQuantity: { value: first!, ...(COMPARATORS.has(comparator) ? { comparator: comparator as Quantity['comparator'] } : {}), ...unit },
      };
    }
    case 'CWE':
    case 'CE':
    case 'CNE':
      return { valueCodeableConcept: codeableConcept(value.first)! };
    case 'DT':
    case 'DTM':
    case 'TS':
      return { valueDateTime: when(value.get(1), context)! };
    case 'ST':
    case 'TX':
    case 'FT':
      // TX and FT repeat line by line.
      return { valueString: value.repetitions.map((line) => line.components.map((component) => component.join(' ')).join(' ')).join('\n') };
    default:
      return { valueString: value.repetitions.map((repetition) => repetition.components.flat().filter(Boolean).join(' ')).join('\n') };
  }
}

function mapObservation(obx: Hl7Segment, obr: Hl7Segment | undefined, context: Context): Observation {
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
    status: OBSERVATION_STATUS[obx.get(11)] ?? 'final',
    category: obr
      ? [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory', display: 'Laboratory' }] }]
      : undefined,
    code: codeableConcept(obx.field(3).first)!,
    subject: context.patient,
    encounter: context.encounter,
    effectiveDateTime: when(obx.get(14) || (obr?.get(7) ?? ''), context),
    ...observationValue(obx, context),
    interpretation,
    referenceRange: range ? [range] : undefined,
  });
}

const APPOINTMENT_STATUS: Record<string, Appointment['status']> = {
  S12: 'booked',
  S13: 'booked',
  S14: 'booked',
  S15: 'cancelled',
  S17: 'cancelled',
  S26: 'noshow',
};
const DURATION_MINUTES: Record<string, number> = { MIN: 1, min: 1, M: 1, H: 60, h: 60, HR: 60, S: 1 / 60, s: 1 / 60 };

function mapAppointment(message: ParsedHl7, sch: Hl7Segment, context: Context): Appointment {
  const ais = message.segment('AIS');
  const start = at(ais?.get(4) || sch.get(11, 4), context);
  const duration = decimal(ais?.get(7) ?? '') ?? decimal(sch.get(9));
  const minutes = duration === undefined ? undefined : Math.round(duration * (DURATION_MINUTES[ais?.get(8, 1) || sch.get(10, 1) || 'MIN'] ?? 1));
  const event = context.trigger.type.split('^')[1]!;
  const status = APPOINTMENT_STATUS[event] ?? 'booked';
  const people = [
    ...message.all('AIP').flatMap((aip) => {
      const actor = practitionerReference(aip.field(3).first);
      return actor ? [{ actor, status: 'accepted' as const }] : [];
    }),
    ...message.all('AIL').flatMap((ail) => {
      const display = placeDisplay(ail.field(3).first);
      return display ? [{ actor: { type: 'Location', display }, status: 'accepted' as const }] : [];
    }),
  ];
  return compact<Appointment>({
    resourceType: 'Appointment',
    identifier: nonEmpty([entityIdentifier(sch.field(1).first, 'PLAC'), entityIdentifier(sch.field(2).first, 'FILL')]),
    status,
    cancelationReason: status === 'cancelled' && sch.field(6).present ? codeableConcept(sch.field(6).first) : undefined,
    serviceType: ais?.field(3).present ? [codeableConcept(ais.field(3).first)!] : undefined,
    appointmentType: sch.field(8).present ? codeableConcept(sch.field(8).first, 'http://terminology.hl7.org/CodeSystem/v2-0276') : undefined,
    reasonCode: sch.field(7).present ? [codeableConcept(sch.field(7).first)!] : undefined,
    description: sch.get(7, 2) || undefined,
    start,
    end: start && minutes !== undefined ? addMinutes(start, minutes) : undefined,
    minutesDuration: minutes && minutes > 0 ? minutes : undefined,
    participant: [{ actor: context.patient!, status: 'accepted' }, ...people],
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

function mapDocumentReference(message: ParsedHl7, txa: Hl7Segment, context: Context): DocumentReference {
  const observations = message.all('OBX');
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

function mapMedicationRequest(orc: Hl7Segment | undefined, rxe: Hl7Segment, rxr: Hl7Segment | undefined, context: Context): MedicationRequest {
  const dose = decimal(rxe.get(3));
  const quantity = decimal(rxe.get(10));
  const refills = decimal(rxe.get(12));
  const instructions = rxe.get(7, 2) || rxe.get(7, 1) || rxe.get(21, 2) || rxe.get(21, 1);
  const doseUnit = rxe.field(5).first;
  return compact<MedicationRequest>({
    resourceType: 'MedicationRequest',
    identifier: orderIdentifiers(orc, undefined),
    status: ORDER_STATUS[orc?.get(1) ?? ''] === 'revoked' ? 'cancelled' : 'active',
    intent: 'order',
    medicationCodeableConcept: codeableConcept(rxe.field(2).first, 'http://www.nlm.nih.gov/research/umls/rxnorm')!,
    subject: context.patient!,
    encounter: context.encounter,
    authoredOn: when(orc?.get(9) ?? '', context),
    requester: orc ? practitionerReference(orc.field(12).first) : undefined,
    dosageInstruction: [
      compact({
        text: instructions || undefined,
        route: rxr?.field(1).present ? codeableConcept(rxr.field(1).first, 'http://terminology.hl7.org/CodeSystem/v2-0162') : undefined,
        doseAndRate:
          dose !== undefined
            ? [{ doseQuantity: { value: dose, ...(doseUnit.get(1) ? { unit: doseUnit.get(2) || doseUnit.get(1) } : {}) } }]
            : undefined,
      }),
    ],
    dispenseRequest:
      quantity !== undefined || refills !== undefined
        ? compact({
            numberOfRepeatsAllowed: refills,
            quantity: quantity !== undefined ? { value: quantity, ...(rxe.get(11) ? { unit: rxe.get(11, 2) || rxe.get(11) } : {}) } : undefined,
          })
        : undefined,
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
    code: codeableConcept(ft1.field(7).first, 'http://www.ama-assn.org/go/cpt')!,
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

function mapMessageHeader(message: ParsedHl7, trigger: Hl7Trigger, focus: Reference[]): MessageHeader {
  const msh = message.header;
  const endpoint = (application: string, facility: string) =>
    `urn:hl7v2:${encodeURIComponent(application || 'unknown')}:${encodeURIComponent(facility || 'unknown')}`;
  return compact<MessageHeader>({
    resourceType: 'MessageHeader',
    eventCoding: { system: 'http://terminology.hl7.org/CodeSystem/v2-0003', code: trigger.type.split('^')[1]! },
    destination: msh.get(5) ? [{ name: msh.get(5), endpoint: endpoint(msh.get(5), msh.get(6)) }] : undefined,
    source: compact({ name: msh.get(3) || undefined, endpoint: endpoint(msh.get(3), msh.get(4)) }),
    focus: focus.length ? focus : undefined,
  });
}

/** The mapped message: the Bundle and the resources that are its subject. */
export interface MappedMessage {
  bundle: Bundle;
}

/** Maps a validated message (see validateHl7) of a supported trigger to a FHIR R4 message Bundle. */
export function mapToFhir(message: ParsedHl7, trigger: Hl7Trigger): MappedMessage {
  const msh = message.header;
  const controlId = msh.get(10);
  const bundle = new BundleBuilder(`${msh.get(3)}|${msh.get(4)}|${controlId}`);
  const offset = /([+-]\d{4})$/.exec(msh.get(7))?.[1] ?? '+0000';
  const context: Context = { bundle, trigger, offset, focus: [] };
  const header = bundle.add('MSH', { resourceType: 'MessageHeader' } as MessageHeader);

  const pid = message.segment('PID');
  let patient: Patient | undefined;
  if (pid) {
    patient = mapPatient(pid);
    context.patient = bundle.add('PID', patient);
    if (trigger.type.startsWith('ADT^') || trigger.type === 'SIU^S12') context.focus.push(context.patient);
    // The patient is referenced by display too, as the fixtures do.
    const name = patient.name?.[0];
    if (name) context.patient.display = [...(name.given ?? []), name.family].filter(Boolean).join(' ');
  }
  const pv1 = message.segment('PV1');
  if (pv1) {
    const encounter = mapEncounter(pv1, message.segment('PV2'), context);
    if (encounter) {
      context.encounter = bundle.add('PV1', encounter);
      if (trigger.type.startsWith('ADT^')) context.focus.unshift(context.encounter);
    }
  }
  for (const nk1 of message.all('NK1')) bundle.add(`NK1|${nk1.position}`, mapRelatedPerson(nk1, context));
  for (const in1 of message.all('IN1')) bundle.add(`IN1|${in1.position}`, mapCoverage(in1, context));
  const mrg = message.segment('MRG');
  if (mrg && context.patient && patient) mapMerge(mrg, { reference: context.patient.reference }, patient, context);

  // Orders and results follow segment order: an OBX belongs to the OBR before it.
  let orc: Hl7Segment | undefined;
  let obr: Hl7Segment | undefined;
  let report: DiagnosticReport | undefined;
  let order: Reference | undefined;
  const isResult = trigger.type === 'ORU^R01';
  for (const segment of message.segments) {
    if (segment.name === 'ORC') {
      orc = segment;
      obr = undefined;
    } else if (segment.name === 'OBR') {
      obr = segment;
      order = bundle.add(`OBR|${segment.position}`, mapServiceRequest(orc, segment, context));
      report = undefined;
      if (isResult) {
        report = mapDiagnosticReport(segment, order, context);
        context.focus.push(bundle.add(`OBR-report|${segment.position}`, report));
      } else context.focus.push(order);
    } else if (segment.name === 'OBX' && trigger.type !== 'MDM^T02') {
      const observation = bundle.add(`OBX|${segment.position}`, mapObservation(segment, obr, context));
      if (report) {
        report.result ??= [];
        report.result.push(observation);
      }
    } else if (segment.name === 'RXE') {
      context.focus.push(bundle.add(`RXE|${segment.position}`, mapMedicationRequest(orc, segment, message.segment('RXR'), context)));
    } else if (segment.name === 'RXA') {
      const rxr = message.segments[segment.position]?.name === 'RXR' ? message.segments[segment.position] : undefined;
      context.focus.push(bundle.add(`RXA|${segment.position}`, mapImmunization(segment, rxr, context)));
    } else if (segment.name === 'SCH') {
      context.focus.unshift(bundle.add(`SCH|${segment.position}`, mapAppointment(message, segment, context)));
    } else if (segment.name === 'TXA') {
      context.focus.push(bundle.add(`TXA|${segment.position}`, mapDocumentReference(message, segment, context)));
    } else if (segment.name === 'FT1') {
      context.focus.push(bundle.add(`FT1|${segment.position}`, mapChargeItem(segment, context)));
    }
  }

  bundle.replace(header, mapMessageHeader(message, trigger, context.focus));
  return {
    bundle: {
      resourceType: 'Bundle',
      id: bundle.idFor('Bundle'),
      meta: META,
      identifier: { system: CONTROL_ID_SYSTEM, value: controlId },
      type: 'message',
      timestamp: at(msh.get(7), context) ?? new Date().toISOString(),
      entry: bundle.entries(),
    },
  };
}
