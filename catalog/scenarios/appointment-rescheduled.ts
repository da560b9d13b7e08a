import { DAY, defineScenario, MINUTE } from './definition';

export const appointmentRescheduled = defineScenario({
  id: 'appointment_rescheduled',
  name: 'Appointment cancelled and rebooked',
  description: 'A follow-up is booked, cancelled by the patient and booked again.',
  steps: [
    { id: 'booked', description: 'The follow-up is booked.', emits: ['scheduling.appointment.booked'], typicalDelaySeconds: 0 },
    { id: 'cancelled', description: 'The patient cancels.', emits: ['scheduling.appointment.cancelled'], typicalDelaySeconds: 2 * DAY },
    { id: 'rebooked', description: 'The patient books another slot.', emits: ['scheduling.appointment.booked'], typicalDelaySeconds: 10 * MINUTE },
  ],
  plan: { kind: 'plain', service: 'officeVisitLow' },
  story: { setting: 'family_practice', diagnosis: null, order: null, result: null },
});
