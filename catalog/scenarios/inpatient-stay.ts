import { DAY, defineScenario, HOUR } from './definition';

export const inpatientStay = defineScenario({
  id: 'inpatient_stay',
  name: 'Inpatient stay from admission to discharge summary',
  description:
    'Community-acquired pneumonia: admitted through the emergency department, moved to the ward, treated, discharged home, summary filed and the stay billed.',
  steps: [
    {
      id: 'admitted',
      description: 'The patient is admitted from the emergency department.',
      emits: ['adt.patient.admitted'],
      typicalDelaySeconds: 0,
    },
    { id: 'transferred', description: 'The patient moves to the medical ward.', emits: ['adt.patient.transferred'], typicalDelaySeconds: 3 * HOUR },
    {
      id: 'labs_final',
      description: 'Admission labs are final.',
      emits: ['results.observation.final', 'results.report.final'],
      typicalDelaySeconds: 1 * HOUR,
    },
    {
      id: 'discharged',
      description: 'The patient goes home on oral antibiotics.',
      emits: ['adt.patient.discharged'],
      typicalDelaySeconds: 3 * DAY,
    },
    {
      id: 'summary_available',
      description: 'The discharge summary is signed.',
      emits: ['documents.document.available'],
      typicalDelaySeconds: 6 * HOUR,
    },
    {
      id: 'claim_submitted',
      description: 'The hospitalist’s services are billed.',
      emits: ['claims.claim.submitted'],
      typicalDelaySeconds: 2 * DAY,
    },
  ],
  plan: { kind: 'plain', service: 'hospitalInitial' },
  story: { setting: 'ward', diagnosis: 'pneumonia', order: null, result: 'wbc' },
});
