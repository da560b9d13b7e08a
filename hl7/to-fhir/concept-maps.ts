import type {
  AllergyIntolerance,
  Appointment,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  Immunization,
  Observation,
  Patient,
  ServiceRequest,
} from 'fhir/r4';

/**
 * The v2 tables the maps translate, each named by its number in the standard (`table0001` is
 * administrative sex), after the HL7 v2-to-FHIR IG's ConceptMaps where it has one. A table that
 * maps to two FHIR elements has one map per element (`table0003EncounterStatus`).
 */

/** Table 0001 (administrative sex: PID-8, GT1-9) → AdministrativeGender, the IG's ConceptMap. */
export const table0001: Record<string, Patient['gender']> = { M: 'male', F: 'female', O: 'other', A: 'other', N: 'other', X: 'other', U: 'unknown' };
/** Table 0002 (marital status: PID-16) → v3 MaritalStatus (U, unknown, is the NullFlavor UNK, said where it is used). */
export const table0002: Record<string, string> = {
  M: 'M',
  S: 'S',
  D: 'D',
  W: 'W',
  A: 'L',
  E: 'L',
  N: 'A',
  I: 'I',
  B: 'U',
  P: 'T',
  R: 'T',
  G: 'T',
  C: 'T',
};

/** Table 0004 (patient class: PV1-2) → v3 ActCode, Encounter.class (N, not applicable, makes no Encounter). */
export const table0004: Record<string, { code: string; display: string }> = {
  I: { code: 'IMP', display: 'inpatient encounter' },
  B: { code: 'IMP', display: 'inpatient encounter' },
  O: { code: 'AMB', display: 'ambulatory' },
  R: { code: 'AMB', display: 'ambulatory' },
  C: { code: 'AMB', display: 'ambulatory' },
  E: { code: 'EMER', display: 'emergency' },
  P: { code: 'PRENC', display: 'pre-admission' },
};
/**
 * Table 0003 (event type: MSH-9.2) → Encounter.status, by ADT trigger, after the IG's ADT message maps (A04, a registration, is
 * `planned`; pre-admits and pending events are `planned`; cancellations of an admit `cancelled`).
 * PV1-45 (discharge date/time) makes any encounter `finished`.
 */
export const table0003EncounterStatus: Record<string, Encounter['status']> = {
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

/** Table 0063 (relationship: IN1-17, IN2-72) → subscriber-relationship, Coverage.relationship. */
export const table0063: Record<string, string> = {
  SEL: 'self',
  SPO: 'spouse',
  CHD: 'child',
  PAR: 'parent',
  EME: 'injured',
  OTH: 'other',
  DOM: 'common',
};

/** Table 0119 (order control: ORC-1) → ServiceRequest.status, what the control implies when ORC-5 says nothing. */
export const table0119: Record<string, ServiceRequest['status']> = {
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

/** Table 0038 (order status: ORC-5) → ServiceRequest.status, the IG's ConceptMap. */
export const table0038: Record<string, ServiceRequest['status']> = {
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

/** Table 0027 (priority: OBR-5, TQ1-9) → ServiceRequest.priority. */
export const table0027: Record<string, ServiceRequest['priority']> = { S: 'stat', A: 'asap', R: 'routine', P: 'urgent', C: 'urgent', T: 'urgent' };

/** Table 0123 (result status: OBR-25) → DiagnosticReport.status. */
export const table0123: Record<string, DiagnosticReport['status']> = {
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

/** Table 0085 (observation result status: OBX-11) → ObservationStatus, the IG's ConceptMap (A amended, D entered-in-error, I registered, S preliminary …). */
export const table0085: Record<string, Observation['status']> = {
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
/** Table 0078 (interpretation codes: OBX-8): the flags v3 ObservationInterpretation shares, coded there; any other stays in v2-0078. */
export const table0078 = new Set([
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

/** Table 0003 (event type: MSH-9.2) → Appointment.status, by SIU trigger, when SCH-25 says nothing. */
export const table0003AppointmentStatus: Record<string, Appointment['status']> = {
  S12: 'booked',
  S13: 'booked',
  S14: 'booked',
  S15: 'cancelled',
  S16: 'cancelled',
  S17: 'entered-in-error',
  S26: 'noshow',
};
/** Table 0278 (filler status code: SCH-25) → Appointment.status. */
export const table0278: Record<string, Appointment['status']> = {
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

/** Table 0271 (document completion status: TXA-17) → DocumentReference.docStatus. */
export const table0271: Record<string, DocumentReference['docStatus']> = {
  AU: 'final',
  LA: 'final',
  PA: 'preliminary',
  IP: 'preliminary',
  IN: 'preliminary',
  DI: 'preliminary',
  DO: 'preliminary',
};

/** Table 0322 (completion status: RXA-20) → Immunization.status. */
export const table0322: Record<string, Immunization['status']> = { CP: 'completed', PA: 'completed', RE: 'not-done', NA: 'not-done' };

/** Table 0127 (allergen type: AL1-2, IAM-2) → AllergyIntolerance.category, after the IG's AL1 map. */
export const table0127: Record<string, NonNullable<AllergyIntolerance['category']>[number]> = {
  DA: 'medication',
  MA: 'medication',
  FA: 'food',
  EA: 'environment',
  AA: 'environment',
  PA: 'environment',
  LA: 'environment',
};
/** Table 0128 (allergy severity: AL1-4, IAM-4) → AllergyIntolerance.criticality, after the IG's AL1 map. */
export const table0128: Record<string, AllergyIntolerance['criticality']> = { SV: 'high', MO: 'low', MI: 'low', U: 'unable-to-assess' };
