import { DAY, defineScenario } from './definition';

export const practitionerCredentialing = defineScenario({
  id: 'practitioner_credentialing',
  name: 'Practitioner credentialing',
  description: 'A new clinician’s NPI, licence and taxonomy are verified at the primary sources.',
  steps: [
    { id: 'application_received', description: 'The credentialing application arrives.', emits: [], typicalDelaySeconds: 0 },
    {
      id: 'verified',
      description: 'Primary-source verification completes.',
      emits: ['credentialing.practitioner.verified'],
      typicalDelaySeconds: 10 * DAY,
    },
  ],
  plan: { kind: 'plain', service: null },
  story: { setting: 'family_practice', diagnosis: null, order: null, result: null },
});
