import type { AllergyIntolerance, Condition, Procedure } from 'fhir/r4';
import { addMinutes, codeableConcept, decimal, entityIdentifier, practitionerReference } from '../datatypes';
import type { Hl7Segment } from '../parse';
import { table0127, table0128 } from './concept-maps';
import { compact, nonEmpty, when } from './elements';
import type { MappingContext, SegmentHandlers } from './state';

/** Clinical facts of a patient: AL1 and IAM → AllergyIntolerance, DG1 → Condition (named on the visit), PR1 → Procedure. */

/** AL1 → AllergyIntolerance (AL1-2 type, AL1-3 allergen, AL1-4 severity, AL1-5 reaction, AL1-6 identification date). */
function mapAllergy(al1: Hl7Segment, context: MappingContext): AllergyIntolerance | undefined {
  const code = codeableConcept(al1.field(3).first);
  if (!code || !context.patient) return undefined;
  const category = table0127[al1.get(2, 1)];
  const reactions = nonEmpty(
    al1.field(5).repetitions.map((reaction) => (reaction.get(1) ? { manifestation: [{ text: reaction.get(1) }] } : undefined)),
  );
  return compact<AllergyIntolerance>({
    resourceType: 'AllergyIntolerance',
    clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
    category: category ? [category] : undefined,
    criticality: table0128[al1.get(4, 1)],
    code,
    patient: context.patient,
    recordedDate: when(al1.get(6), context),
    reaction: reactions,
  });
}

/** IAM (patient adverse reaction information) → AllergyIntolerance, as AL1 plus IAM-11 onset and IAM-17 status. */
function mapAdverseReaction(iam: Hl7Segment, context: MappingContext): AllergyIntolerance | undefined {
  const code = codeableConcept(iam.field(3).first);
  if (!code || !context.patient) return undefined;
  const category = table0127[iam.get(2, 1)];
  const clinical = iam.get(17, 1) === 'I' || iam.get(17, 1) === 'C' ? 'inactive' : 'active';
  return compact<AllergyIntolerance>({
    resourceType: 'AllergyIntolerance',
    identifier: iam.get(7, 1) ? [entityIdentifier(iam.field(7).first)!] : undefined,
    clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: clinical }] },
    category: category ? [category] : undefined,
    criticality: table0128[iam.get(4, 1)],
    code,
    patient: context.patient,
    onsetDateTime: when(iam.get(11), context),
    reaction: iam.field(5).present ? [{ manifestation: [codeableConcept(iam.field(5).first) ?? { text: iam.get(5) }] }] : undefined,
  });
}

/** DG1 → Condition (an encounter diagnosis), after the IG's DG1 map: DG1-3 code, DG1-5 onset, DG1-16 diagnosing clinician. */
function mapCondition(dg1: Hl7Segment, context: MappingContext): Condition | undefined {
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
function mapProcedure(pr1: Hl7Segment, context: MappingContext): Procedure | undefined {
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

export const clinicalSegments: SegmentHandlers = {
  AL1: (segment, state) => {
    state.mapped(segment, mapAllergy(segment, state));
  },
  IAM: (segment, state) => {
    state.mapped(segment, mapAdverseReaction(segment, state));
  },
  DG1: (segment, state) => {
    const condition = state.mapped(segment, mapCondition(segment, state));
    const encounter = state.visit;
    if (condition && encounter) {
      const rank = decimal(segment.get(15));
      encounter.diagnosis = [
        ...(encounter.diagnosis ?? []),
        compact({ condition, rank: rank && Number.isInteger(rank) && rank > 0 ? rank : undefined }),
      ];
    }
  },
  PR1: (segment, state) => {
    state.mapped(segment, mapProcedure(segment, state));
  },
};
