import type { ChargeItem, Coverage, RelatedPerson } from 'fhir/r4';
import {
  address,
  codeableConcept,
  contactPoint,
  date,
  decimal,
  entityIdentifier,
  humanName,
  identifier,
  practitionerReference,
  v2Coding,
} from '../datatypes';
import type { Hl7Segment } from '../parse';
import { table0001, table0063 } from './concept-maps';
import { all, compact, nonEmpty, when } from './elements';
import type { MappingContext, SegmentHandlers } from './state';

/** Who pays: IN1 (with IN2) → Coverage, GT1 → a guarantor RelatedPerson, FT1 → ChargeItem. */

function mapCoverage(in1: Hl7Segment, context: MappingContext): Coverage {
  const relationship = table0063[in1.get(17)];
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

function mapChargeItem(ft1: Hl7Segment, context: MappingContext): ChargeItem {
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

/** GT1 (guarantor) → RelatedPerson, as the IG maps a guarantor who is a person (GT1-3 name, GT1-11 relationship). */
function mapGuarantor(gt1: Hl7Segment, context: MappingContext): RelatedPerson | undefined {
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
    gender: table0001[gt1.get(9)],
    birthDate: date(gt1.get(8)),
    address: all(gt1.field(5), address),
  });
}

export const financialSegments: SegmentHandlers = {
  IN1: (segment, state) => {
    if (state.patient) state.mapped(segment, mapCoverage(segment, state));
  },
  IN2: (segment, state) => {
    // IN2-72 (patient's relationship to insured, v2.6+) when IN1-17 said nothing.
    const last = state.lastMapped;
    const coverage = last?.resourceType === 'Coverage' ? last : undefined;
    const relationship = table0063[segment.get(72, 1)];
    if (coverage && !coverage.relationship && relationship)
      coverage.relationship = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/subscriber-relationship', code: relationship }] };
  },
  GT1: (segment, state) => {
    state.mapped(segment, mapGuarantor(segment, state));
  },
  FT1: (segment, state) => {
    if (state.patient && segment.field(7).present) {
      const reference = state.mapped(segment, mapChargeItem(segment, state));
      if (reference) state.focus.subjects.push(reference);
    }
  },
};
