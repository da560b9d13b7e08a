import { DAY, defineScenario, HOUR } from './definition';

export const claimDeniedMissingAuth = defineScenario({
  id: 'claim_denied_missing_auth',
  name: 'Claim denied: authorization absent',
  description:
    'A service on the payer’s prior-authorization list is billed without an authorization; the line is denied (CARC 197) and the remittance pays nothing for it.',
  steps: [
    { id: 'claim_submitted', description: 'The hospital bills the MRI.', emits: ['claims.claim.submitted'], typicalDelaySeconds: 0 },
    {
      id: 'claim_acknowledged',
      description: 'The payer acknowledges the claim (277CA) and accepts it for adjudication.',
      emits: ['claims.claim.acknowledged'],
      typicalDelaySeconds: 1 * HOUR,
    },
    {
      id: 'claim_adjudicated',
      description: 'The payer denies the line: precertification absent.',
      emits: ['claims.claim.adjudicated'],
      typicalDelaySeconds: 9 * DAY,
    },
    {
      id: 'remittance_issued',
      description: 'The weekly remittance lists the denial with a zero payment.',
      emits: ['remittance.payment.issued'],
      typicalDelaySeconds: 3 * DAY,
    },
  ],
  plan: {
    kind: 'claim',
    service: 'mriKnee',
    secondLine: 'kneeInjection',
    natural: 'denied',
    denial: 'authorizationAbsent',
    needsPriorAuthListing: true,
    adjudicationStep: 'claim_adjudicated',
    paymentStep: 'remittance_issued',
  },
  story: { setting: 'imaging', diagnosis: 'kneeOsteoarthritis', order: null, result: null },
});
