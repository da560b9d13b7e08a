import type { Annotation, MessageHeader, Provenance, Reference } from 'fhir/r4';
import { practitionerReference, v2Coding } from '../datatypes';
import type { Hl7Segment, ParsedHl7 } from '../parse';
import { append, at, compact, linesOf, when } from './elements';
import type { MappingContext, MessageState, SegmentHandlers } from './state';

/** The message itself: MSH → MessageHeader, EVN → Provenance, NTE → a note on the resource before it. */

/** NTE → an Annotation on the resource before it, when that resource has notes. */
function noteOf(nte: Hl7Segment): Annotation | undefined {
  const text = linesOf(nte.field(3));
  return text.trim() ? { text } : undefined;
}

/** EVN → Provenance of what the message is about (IG: EVN-2 recorded, EVN-4 reason, EVN-5 operator, EVN-6 occurred). */
function mapProvenance(evn: Hl7Segment, targets: Reference[], recorded: string, context: MappingContext): Provenance {
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

/** MSH → MessageHeader: the event, who sent it (MSH-3/MSH-4) and to whom (MSH-5/MSH-6), and what it is about. */
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

export const messageSegments: SegmentHandlers = {
  NTE: (segment, state) => {
    const note = noteOf(segment);
    const last = state.lastMapped;
    if (note && last && ANNOTATED.has(last.resourceType)) {
      const annotated = last as { note?: Annotation[] };
      annotated.note = append(annotated.note, note);
    }
  },
};

/**
 * Once every segment is mapped: what the message is about, its Provenance (EVN) and its
 * MessageHeader. ADT messages are about the encounter and the patient; others about what they
 * order, report or book (the patient when nothing else).
 */
export function finishMessage(state: MessageState): void {
  const { focus, bundle } = state;
  const messageFocus = state.kind.adt
    ? [...focus.encounters, ...focus.patients]
    : focus.subjects.length
      ? focus.subjects
      : [...focus.encounters, ...focus.patients];
  const evn = state.message.segment('EVN');
  // Provenance.target is required: without a resource to point at, EVN has nothing to say.
  if (evn && messageFocus.length) bundle.add('EVN', mapProvenance(evn, messageFocus, state.timestamp, state));
  bundle.replace(state.header, mapMessageHeader(state.message, state.event, messageFocus));
}
