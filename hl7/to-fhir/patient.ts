import type { Patient, Reference, RelatedPerson } from 'fhir/r4';
import { address, contactPoint, date, dateTime, decimal, humanName, identifier, practitionerReference, v2Coding } from '../datatypes';
import type { Hl7Segment } from '../parse';
import { table0001, table0002 } from './concept-maps';
import { all, compact, conceptList, nonEmpty } from './elements';
import type { MappingContext, SegmentHandlers } from './state';

/** The patient: PID → Patient, PD1 → its primary care, MRG → the merged record it replaces, NK1 → RelatedPerson. */

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
    gender: table0001[pid.get(8)],
    birthDate: date(pid.get(7)),
    ...(typeof deceased === 'string' ? { deceasedDateTime: deceased } : deceased ? { deceasedBoolean: true } : {}),
    address: all(pid.field(11), address),
    maritalStatus: table0002[marital]
      ? { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: table0002[marital]! }] }
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

function mapRelatedPerson(nk1: Hl7Segment, context: MappingContext): RelatedPerson {
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

/** MRG: the prior record, no longer active, linked both ways with the surviving one (PID). */
function mapMerge(mrg: Hl7Segment, survivor: Reference, survivorResource: Patient, context: MappingContext): void {
  const prior = context.bundle.add(`MRG|${mrg.position}`, {
    resourceType: 'Patient',
    identifier: all(mrg.field(1), identifier),
    active: false,
    ...(mrg.field(7).present ? { name: all(mrg.field(7), humanName) } : {}),
    link: [{ other: survivor, type: 'replaced-by' }],
  } as Patient);
  survivorResource.link = [...(survivorResource.link ?? []), { other: prior, type: 'replaces' }];
}

export const patientSegments: SegmentHandlers = {
  PID: (segment, state) => {
    state.patientIdentified(segment, mapPatient(segment));
  },
  PD1: (segment, state) => {
    if (state.patientResource) addPatientDemographics(segment, state.patientResource);
  },
  MRG: (segment, state) => {
    if (state.patientResource && state.patient) mapMerge(segment, { reference: state.patient.reference }, state.patientResource, state);
  },
  NK1: (segment, state) => {
    if (state.patient) state.mapped(segment, mapRelatedPerson(segment, state));
  },
};
