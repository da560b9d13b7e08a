import type { DocumentReference } from 'fhir/r4';
import { codeableConcept, entityIdentifier, practitionerReference } from '../datatypes';
import { table0271 } from './concept-maps';
import { at, compact, linesOf, nonEmpty } from './elements';
import type { DocumentGroup, MappingContext, MessageState, SegmentHandlers } from './state';

/** Documents: TXA and the OBX after it (its text, or an encapsulated ED) → DocumentReference, mapped once its content is read. */

/** TXA → DocumentReference: TXA-2 type, TXA-12 unique id, TXA-17 status, TXA-9/TXA-5 author, the OBX content as its attachment. */
function mapDocumentReference({ txa, observations }: DocumentGroup, context: MappingContext): DocumentReference {
  const encapsulated = observations.find((obx) => obx.get(2) === 'ED');
  const attachment = encapsulated
    ? {
        contentType: `${encapsulated.get(5, 2) === 'TEXT' ? 'text' : encapsulated.get(5, 2).toLowerCase()}/${encapsulated.get(5, 3).toLowerCase()}`,
        data: encapsulated.get(5, 5),
      }
    : {
        contentType: 'text/plain; charset=utf-8',
        data: Buffer.from(observations.map((obx) => linesOf(obx.field(5))).join('\n'), 'utf8').toString('base64'),
      };
  const author = practitionerReference(txa.field(9).first) ?? practitionerReference(txa.field(5).first);
  return compact<DocumentReference>({
    resourceType: 'DocumentReference',
    masterIdentifier: entityIdentifier(txa.field(12).first),
    identifier: nonEmpty([entityIdentifier(txa.field(14).first, 'PLAC'), entityIdentifier(txa.field(15).first, 'FILL')]),
    status: txa.get(17) === 'DO' ? 'superseded' : 'current',
    docStatus: table0271[txa.get(17)],
    type: codeableConcept(txa.field(2).first, 'http://terminology.hl7.org/CodeSystem/v2-0270'),
    subject: context.patient,
    date: at(txa.get(4) || txa.get(6), context),
    author: author ? [author] : undefined,
    description: txa.get(2, 2) || undefined,
    content: [{ attachment: compact({ ...attachment, title: txa.get(2, 2) || undefined }) }],
    context: context.encounter ? { encounter: [context.encounter] } : undefined,
  });
}

export const documentSegments: SegmentHandlers = {
  TXA: (segment, state) => state.documentStarted(segment),
};

/** Each document, with its content; documents come before appointments in the message's focus. */
export function mapDocuments(state: MessageState): void {
  for (const document of state.documents) state.focus.subjects.push(state.mapped(document.txa, mapDocumentReference(document, state))!);
}
