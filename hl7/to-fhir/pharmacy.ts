import type { FhirResource, Immunization, MedicationAdministration, MedicationRequest } from 'fhir/r4';
import { codeableConcept, date, decimal, practitionerReference, v2Coding } from '../datatypes';
import type { Hl7Repetition, Hl7Segment } from '../parse';
import { table0119, table0322 } from './concept-maps';
import { compact, count, listOf, someValue, when } from './elements';
import { orderIdentifiers, orderStatus } from './orders';
import type { MappingContext, SegmentHandlers } from './state';

/**
 * Pharmacy and vaccination: RXO and RXE → MedicationRequest (the encoded order, RXE, when both are
 * sent), RXA → Immunization in a vaccination message or for a CVX code, else MedicationAdministration;
 * the RXR after each gives its route.
 */

/** RXA in a vaccination → Immunization: RXA-5 vaccine (CVX), RXA-3 when, RXA-20 status, RXA-15 lot, RXA-17 manufacturer, RXR route and site. */
function mapImmunization(rxa: Hl7Segment, rxr: Hl7Segment | undefined, context: MappingContext): Immunization {
  const status = table0322[rxa.get(20)] ?? 'completed';
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
  context: MappingContext,
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
    status: table0119[orc?.get(1) ?? ''] === 'revoked' ? 'cancelled' : 'active',
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

/** RXO (pharmacy/treatment order) → MedicationRequest, as the IG's RXO map has it (used where no RXE encodes the order). */
function mapOrderedMedication(
  orc: Hl7Segment | undefined,
  rxo: Hl7Segment,
  rxr: Hl7Segment | undefined,
  context: MappingContext,
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
function mapMedicationAdministration(rxa: Hl7Segment, rxr: Hl7Segment | undefined, context: MappingContext): MedicationAdministration | undefined {
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

export const pharmacySegments: SegmentHandlers = {
  RXO: (segment, state) => {
    // RDE/RDS orders carry RXO and RXE: the encoded order (RXE) is the MedicationRequest then.
    if (state.encodedLater(segment)) return;
    const reference = state.mapped(segment, mapOrderedMedication(state.order.orc, segment, state.following(segment, 'RXR'), state));
    if (reference) state.focus.subjects.push(reference);
  },
  RXE: (segment, state) => {
    if (!state.patient || !segment.field(2).present) return;
    const route = state.following(segment, 'RXR') ?? state.message.segment('RXR');
    const reference = state.mapped(segment, mapMedicationRequest(state.order.orc, segment, route, state));
    if (reference) state.focus.subjects.push(reference);
  },
  RXA: (segment, state) => {
    const vaccine = state.kind.vaccination || /^CVX$/i.test(segment.get(5, 3));
    const route = state.following(segment, 'RXR');
    let resource: FhirResource | undefined;
    if (vaccine) resource = state.patient && segment.get(5, 1) && when(segment.get(3), state) ? mapImmunization(segment, route, state) : undefined;
    else resource = mapMedicationAdministration(segment, route, state);
    const reference = state.mapped(segment, resource);
    if (reference) state.focus.subjects.push(reference);
  },
};
