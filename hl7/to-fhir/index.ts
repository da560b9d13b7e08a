import type { Bundle } from 'fhir/r4';
import type { ParsedHl7 } from '../parse';
import { META } from './bundle';
import { clinicalSegments } from './clinical';
import { documentSegments, mapDocuments } from './documents';
import { financialSegments } from './financial';
import { finishMessage, messageSegments } from './message';
import { orderSegments } from './orders';
import { patientSegments } from './patient';
import { pharmacySegments } from './pharmacy';
import { resultSegments } from './results';
import { mapAppointments, schedulingSegments } from './scheduling';
import { MessageState, type SegmentHandler, type SegmentHandlers } from './state';
import { visitSegments } from './visit';

/**
 * HL7 v2 → FHIR R4, after the HL7 v2-to-FHIR IG's segment maps (http://hl7.org/fhir/uv/v2mappings),
 * for any message type and trigger: each segment the IG maps becomes its resource wherever it
 * appears. One handler per segment id, grouped by family, one file each: patient (PID, PD1, MRG,
 * NK1), visit (PV1/PV2), clinical (AL1, IAM, DG1, PR1), financial (IN1/IN2, GT1, FT1), orders (ORC,
 * TQ1), results (OBR, OBX, SPM), pharmacy (RXO, RXE, RXA, with RXR), scheduling (SCH, AIS, AIG, AIL,
 * AIP), documents (TXA), message (MSH, EVN, NTE); the v2 tables they translate are in
 * concept-maps.ts. Segments no family maps (Z-segments among them) are left out. The result is a
 * message Bundle, MessageHeader first; every resource is tagged synthetic (the sandbox takes
 * synthetic data only). Resource ids derive from the message control id, so the same message maps
 * to the same Bundle.
 */

/** Where the control id goes on the Bundle. */
export const CONTROL_ID_SYSTEM = 'https://sandbox.example/fhir/sid/hl7-control-id';

/** The families' handlers as one table; a segment id claimed by two families is a mistake caught at load. */
function handlerTable(...families: SegmentHandlers[]): ReadonlyMap<string, SegmentHandler> {
  const table = new Map<string, SegmentHandler>();
  for (const family of families) {
    for (const [id, handler] of Object.entries(family)) {
      if (table.has(id)) throw new Error(`Two segment maps claim ${id}`);
      table.set(id, handler);
    }
  }
  return table;
}

export const SEGMENT_HANDLERS = handlerTable(
  patientSegments,
  visitSegments,
  clinicalSegments,
  financialSegments,
  orderSegments,
  resultSegments,
  pharmacySegments,
  schedulingSegments,
  documentSegments,
  messageSegments,
);

/** The mapped message: the Bundle and the resources that are its subject. */
export interface MappedMessage {
  bundle: Bundle;
}

/**
 * Maps a checked message (see validateHl7) of any type, `MSH-9.1^MSH-9.2`, to a FHIR R4 message
 * Bundle, segment by segment in message order: an OBX belongs to the OBR before it, an NTE to the
 * resource before it, a PV1 to the PID before it. Documents and then appointments are mapped once
 * every segment is read, the MessageHeader last, when what the message is about is known.
 */
export function mapToFhir(message: ParsedHl7, type: string): MappedMessage {
  const state = new MessageState(message, type);
  for (const segment of message.segments) SEGMENT_HANDLERS.get(segment.name)?.(segment, state);
  mapDocuments(state);
  mapAppointments(state);
  finishMessage(state);
  return {
    bundle: {
      resourceType: 'Bundle',
      id: state.bundle.idFor('Bundle'),
      meta: META,
      identifier: { system: CONTROL_ID_SYSTEM, value: message.header.get(10) },
      type: 'message',
      timestamp: state.timestamp,
      entry: state.bundle.entries(),
    },
  };
}
