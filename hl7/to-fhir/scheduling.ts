import type { Appointment } from 'fhir/r4';
import { addMinutes, codeableConcept, decimal, entityIdentifier, practitionerReference } from '../datatypes';
import { table0003AppointmentStatus, table0278 } from './concept-maps';
import { at, compact, conceptList, nonEmpty, placeDisplay } from './elements';
import type { MappingContext, MessageState, ScheduleGroup, SegmentHandlers } from './state';

/**
 * Scheduling: SCH and the AIS, AIG, AIL and AIP after it → Appointment, mapped once every segment
 * is read (SIU puts SCH before PID, so the patient is known only later).
 */

/** AIS-8/SCH-10 (duration units) → minutes. */
const DURATION_MINUTES: Record<string, number> = { MIN: 1, min: 1, M: 1, H: 60, h: 60, HR: 60, S: 1 / 60, s: 1 / 60 };

/** SCH → Appointment: SCH-1/SCH-2 ids, SCH-25 or the trigger for status, AIS start and service, AIP/AIL/AIG participants. */
function mapAppointment({ sch, resources }: ScheduleGroup, context: MappingContext): Appointment {
  const named = (name: string) => resources.filter((segment) => segment.name === name);
  const ais = named('AIS')[0];
  const start = at(ais?.get(4) || sch.get(11, 4), context);
  const duration = decimal(ais?.get(7) ?? '') ?? decimal(sch.get(9));
  const minutes = duration === undefined ? undefined : Math.round(duration * (DURATION_MINUTES[ais?.get(8, 1) || sch.get(10, 1) || 'MIN'] ?? 1));
  // SCH-25 (filler status code, table 0278) when sent, else what the trigger means.
  const status = table0278[sch.get(25, 1)] ?? table0003AppointmentStatus[context.event] ?? 'booked';
  const people = [
    ...named('AIP').flatMap((aip) => {
      const actor = practitionerReference(aip.field(3).first);
      return actor ? [{ actor, status: 'accepted' as const }] : [];
    }),
    ...named('AIL').flatMap((ail) => {
      const display = placeDisplay(ail.field(3).first);
      return display ? [{ actor: { type: 'Location', display }, status: 'accepted' as const }] : [];
    }),
    // AIG (general resource): a participant named by its resource id or type (IG: AIG → Appointment.participant).
    ...named('AIG').flatMap((aig) => {
      const display = aig.get(3, 2) || aig.get(3, 1) || aig.get(4, 2) || aig.get(4, 1);
      return display ? [{ actor: { display }, status: 'accepted' as const }] : [];
    }),
  ];
  return compact<Appointment>({
    resourceType: 'Appointment',
    identifier: nonEmpty([entityIdentifier(sch.field(1).first, 'PLAC'), entityIdentifier(sch.field(2).first, 'FILL')]),
    status,
    cancelationReason: status === 'cancelled' && sch.field(6).present ? codeableConcept(sch.field(6).first) : undefined,
    serviceType: ais ? conceptList(ais.field(3).first) : undefined,
    appointmentType: sch.field(8).present ? codeableConcept(sch.field(8).first, 'http://terminology.hl7.org/CodeSystem/v2-0276') : undefined,
    reasonCode: conceptList(sch.field(7).first),
    description: sch.get(7, 2) || undefined,
    start,
    end: start && minutes !== undefined ? addMinutes(start, minutes) : undefined,
    minutesDuration: minutes && minutes > 0 ? minutes : undefined,
    participant: [...(context.patient ? [{ actor: context.patient, status: 'accepted' as const }] : []), ...people],
  });
}

export const schedulingSegments: SegmentHandlers = {
  SCH: (segment, state) => state.scheduleStarted(segment),
  AIS: (segment, state) => state.scheduleResource(segment),
  AIG: (segment, state) => state.scheduleResource(segment),
  AIL: (segment, state) => state.scheduleResource(segment),
  AIP: (segment, state) => state.scheduleResource(segment),
};

/** Each appointment, once its resources and the patient are known; an appointment leads the message's focus. */
export function mapAppointments(state: MessageState): void {
  for (const schedule of state.schedules) {
    const appointment = mapAppointment(schedule, state);
    if (appointment.participant.length) state.focus.subjects.unshift(state.mapped(schedule.sch, appointment)!);
  }
}
