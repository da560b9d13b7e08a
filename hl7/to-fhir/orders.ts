import type { ServiceRequest } from 'fhir/r4';
import { codeableConcept, entityIdentifier, practitionerReference } from '../datatypes';
import type { Hl7Segment } from '../parse';
import { table0027, table0038, table0119 } from './concept-maps';
import { all, compact, nonEmpty, when } from './elements';
import type { MappingContext, SegmentHandlers } from './state';

/**
 * Orders: ORC starts an order group, TQ1 times its request. What an OBR orders is a ServiceRequest
 * (mapServiceRequest, which the OBR handler in results.ts uses); pharmacy.ts reads the same ORC.
 */

/** ServiceRequest.status: ORC-5 when sent, else what ORC-1 (order control) implies, else `completed` for results. */
export function orderStatus(orc: Hl7Segment | undefined, isResult: boolean): ServiceRequest['status'] {
  return table0038[orc?.get(5) ?? ''] ?? table0119[orc?.get(1) ?? ''] ?? (isResult ? 'completed' : 'active');
}

/** ORC-2/OBR-2 (placer) and ORC-3/OBR-3 (filler order number) → identifiers of type PLAC and FILL. */
export function orderIdentifiers(orc: Hl7Segment | undefined, obr: Hl7Segment | undefined) {
  const placer = orc?.field(2).present ? orc.field(2).first : obr?.field(2).first;
  const filler = orc?.field(3).present ? orc.field(3).first : obr?.field(3).first;
  return nonEmpty([placer && entityIdentifier(placer, 'PLAC'), filler && entityIdentifier(filler, 'FILL')]);
}

/** ORC/OBR → ServiceRequest (OBR-4 what, ORC-12 or OBR-16 who, OBR-31 why). */
export function mapServiceRequest(orc: Hl7Segment | undefined, obr: Hl7Segment, isResult: boolean, context: MappingContext): ServiceRequest {
  const requester = (orc?.field(12).present ? orc.field(12) : obr.field(16)).first;
  return compact<ServiceRequest>({
    resourceType: 'ServiceRequest',
    identifier: orderIdentifiers(orc, obr),
    status: orderStatus(orc, isResult),
    intent: 'order',
    priority: table0027[obr.get(5)],
    code: codeableConcept(obr.field(4).first),
    subject: context.patient!,
    encounter: context.encounter,
    authoredOn: when(orc?.get(9) ?? '', context),
    requester: practitionerReference(requester),
    reasonCode: all(obr.field(31), (reason) => codeableConcept(reason)),
  });
}

/** TQ1 (timing/quantity) → the order's occurrence and priority. */
function addTiming(tq1: Hl7Segment, request: ServiceRequest, context: MappingContext): void {
  const start = when(tq1.get(7), context);
  const end = when(tq1.get(8), context);
  if (start || end) {
    delete request.occurrenceDateTime;
    request.occurrencePeriod = compact({ start, end });
  }
  const priority = table0027[tq1.get(9)];
  if (priority) request.priority = priority;
}

export const orderSegments: SegmentHandlers = {
  ORC: (segment, state) => {
    state.orderStarted(segment);
  },
  TQ1: (segment, state) => {
    const { request } = state.order;
    if (request) addTiming(segment, request, state);
  },
};
