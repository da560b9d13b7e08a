import type { Appointment } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { loadFhirStore } from '../../../fixtures/store';
import { renderTemplate } from '../../../hl7/templates';
import { all, bundleOf, mapped, msh, one, PID } from './messages';

/** hl7/to-fhir/scheduling.ts: SCH, AIS, AIG, AIL, AIP. */

describe('scheduling', () => {
  it('SCH/AIS/AIG/AIL/AIP → Appointment, status from SCH-25 else the trigger', () => {
    const bundle = bundleOf(
      msh('SIU^S14^SIU_S12'),
      'SCH|AP1^EHR|AF1^SCHED|||||Checkup^Annual checkup|ROUTINE|||||||||||||||||Pending',
      PID,
      'AIS|1||99213^Office visit^C4|202503021000|||30|MIN',
      'AIG|1||ROOM3^Exam room 3',
      'AIL|1||CL1^^^LAKESIDE',
      'AIP|1||7777^Cedar^Gus^^^Dr',
    );
    const appointment = one<Appointment>(bundle, 'Appointment');
    expect(appointment).toMatchObject({ status: 'pending', start: '2025-03-02T10:00:00-05:00', end: '2025-03-02T15:30:00Z', minutesDuration: 30 });
    expect(appointment.participant.map((participant) => participant.actor!.type ?? participant.actor!.display)).toEqual([
      'Ada Q Testperson',
      'Practitioner',
      'Location',
      'Exam room 3',
    ]);
    const rescheduled = one<Appointment>(bundleOf(msh('SIU^S17^SIU_S12'), 'SCH|AP2^EHR', PID, 'AIS|1||99213|202503021000'), 'Appointment');
    expect(rescheduled.status).toBe('entered-in-error');
  });

  it('SCH/AIS → Appointment (booked with start and end; cancelled)', () => {
    const booked = all<Appointment>(mapped(renderTemplate('siu-s12')!.er7), 'Appointment')[0]!;
    const world = loadFhirStore()
      .listForPatient('Appointment', 'syn-pat-0001')
      .find((appointment) => (appointment as Appointment).status === 'booked') as Appointment;
    expect(booked).toMatchObject({ status: 'booked', start: world.start, end: world.end, minutesDuration: world.minutesDuration });
    expect(booked.participant.map((participant) => participant.actor?.type ?? 'Patient')).toEqual(['Patient', 'Practitioner', 'Location']);
    expect(all<Appointment>(mapped(renderTemplate('siu-s15')!.er7), 'Appointment')[0]!.status).toBe('cancelled');
  });
});
