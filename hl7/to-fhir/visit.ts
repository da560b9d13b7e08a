import type { Encounter } from 'fhir/r4';
import { identifier, practitionerReference, v2Coding } from '../datatypes';
import type { Hl7Segment } from '../parse';
import { table0003EncounterStatus, table0004 } from './concept-maps';
import { all, compact, conceptList, nonEmpty, placeDisplay, when } from './elements';
import type { MappingContext, SegmentHandlers } from './state';

/** The visit: PV1 (with the PV2 after it) → Encounter, which the segments after it happen in. */

function mapEncounter(pv1: Hl7Segment, pv2: Hl7Segment | undefined, context: MappingContext): Encounter | undefined {
  const patientClass = pv1.get(2);
  if (patientClass === 'N') return undefined;
  const start = when(pv1.get(44), context);
  const end = when(pv1.get(45), context);
  const status = end ? 'finished' : ((context.type.startsWith('ADT^') ? table0003EncounterStatus[context.event] : undefined) ?? 'unknown');
  const classCoding = table0004[patientClass];
  const location = placeDisplay(pv1.field(3).first);
  const prior = placeDisplay(pv1.field(6).first);
  const participants = (
    [
      [7, 'ATND', 'attender'],
      [8, 'REF', 'referrer'],
      [9, 'CON', 'consultant'],
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
    // PV1-4 (admission type, table 0007) → Encounter.type, as the IG's PV1 map has it.
    type: pv1.get(4) ? [{ coding: [v2Coding('0007', pv1.get(4))] }] : undefined,
    serviceType: pv1.get(10) ? { coding: [v2Coding('0069', pv1.get(10))] } : undefined,
    subject: context.patient,
    participant: participants.length ? participants : undefined,
    period: start || end ? compact({ start, end }) : undefined,
    reasonCode: pv2 ? conceptList(pv2.field(3).first) : undefined,
    hospitalization:
      pv1.get(14) || pv1.get(36)
        ? compact({
            admitSource: pv1.get(14) ? { coding: [v2Coding('0023', pv1.get(14))] } : undefined,
            dischargeDisposition: pv1.get(36) ? { coding: [v2Coding('0112', pv1.get(36))] } : undefined,
          })
        : undefined,
    location: nonEmpty([
      prior && context.type === 'ADT^A02' ? { location: { display: prior }, status: 'completed' as const } : undefined,
      location ? { location: { display: location }, status: status === 'finished' ? ('completed' as const) : ('active' as const) } : undefined,
    ]),
  });
}

export const visitSegments: SegmentHandlers = {
  PV1: (segment, state) => {
    state.visitMapped(segment, mapEncounter(segment, state.following(segment, 'PV2'), state));
  },
};
