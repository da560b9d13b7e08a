import { DAY, defineScenario, HOUR } from './definition';

export const priorAuthDenied = defineScenario({
  id: 'prior_auth_denied',
  name: 'Prior authorization denied for medical necessity',
  description: 'A lumbar MRI is requested without documented conservative therapy; the payer denies it (X12 278 A3, not certified).',
  steps: [
    {
      id: 'order_placed',
      description: 'The surgeon orders an MRI of the lumbar spine.',
      emits: ['orders.service_request.placed'],
      typicalDelaySeconds: 0,
    },
    {
      id: 'request_submitted',
      description: 'The practice submits the prior authorization.',
      emits: ['prior_auth.request.submitted'],
      typicalDelaySeconds: 3 * HOUR,
    },
    {
      id: 'request_denied',
      description: 'The payer denies: the documentation does not meet the policy criteria.',
      emits: ['prior_auth.request.denied'],
      typicalDelaySeconds: 3 * DAY,
    },
  ],
  plan: {
    kind: 'prior_auth',
    service: 'mriLumbar',
    outcomes: ['approved', 'denied', 'modified'],
    natural: 'denied',
    submitStep: 'request_submitted',
    pendSteps: [],
    decisionStep: 'request_denied',
    afterApproval: [],
  },
  story: { setting: 'orthopaedics', diagnosis: 'lowBackPain', order: 'imaging', result: null },
});
