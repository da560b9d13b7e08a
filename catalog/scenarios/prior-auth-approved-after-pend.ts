import { DAY, defineScenario, HOUR, MINUTE, PRIOR_AUTH_OUTCOMES } from './definition';

export const priorAuthApprovedAfterPend = defineScenario({
  id: 'prior_auth_approved_after_pend',
  name: 'Prior authorization approved after a pend',
  description:
    'A knee MRI is ordered; the payer pends the request for radiograph results, then approves it within the standard time frame, and the scan is booked.',
  steps: [
    {
      id: 'order_placed',
      description: 'The orthopaedic surgeon orders an MRI of the knee.',
      emits: ['orders.service_request.placed'],
      typicalDelaySeconds: 0,
    },
    {
      id: 'eligibility_checked',
      description: 'The practice confirms coverage and benefits.',
      emits: ['eligibility.check.completed'],
      typicalDelaySeconds: 10 * MINUTE,
    },
    {
      id: 'request_submitted',
      description: 'The practice submits the prior authorization with the consultation note.',
      emits: ['prior_auth.request.submitted'],
      typicalDelaySeconds: 2 * HOUR,
    },
    {
      id: 'request_pended',
      description: 'The payer asks for the radiograph report.',
      emits: ['prior_auth.request.pended'],
      typicalDelaySeconds: 1 * DAY,
    },
    { id: 'documentation_sent', description: 'The practice sends the requested documentation.', emits: [], typicalDelaySeconds: 4 * HOUR },
    {
      id: 'request_approved',
      description: 'The payer approves, well inside the 7-day standard time frame.',
      emits: ['prior_auth.request.approved'],
      typicalDelaySeconds: 2 * DAY,
    },
    {
      id: 'scan_booked',
      description: 'The imaging center books the scan.',
      emits: ['scheduling.appointment.booked'],
      typicalDelaySeconds: 3 * HOUR,
    },
  ],
  plan: {
    kind: 'prior_auth',
    service: 'mriKnee',
    outcomes: PRIOR_AUTH_OUTCOMES,
    natural: 'pended_then_approved',
    submitStep: 'request_submitted',
    pendSteps: ['request_pended', 'documentation_sent'],
    decisionStep: 'request_approved',
    afterApproval: ['scan_booked'],
  },
  story: { setting: 'orthopaedics', diagnosis: 'kneeOsteoarthritis', order: 'imaging', result: null },
});
