import { DAY, defineScenario, HOUR, MINUTE } from './definition';

export const outpatientVisitToPayment = defineScenario({
  id: 'outpatient_visit_to_payment',
  name: 'Outpatient visit from registration to payment',
  description: 'A diabetic patient’s follow-up: registration, HbA1c result, prescription renewal, claim, adjudication and payment.',
  steps: [
    { id: 'patient_registered', description: 'The patient checks in at the clinic.', emits: ['adt.patient.registered'], typicalDelaySeconds: 0 },
    {
      id: 'eligibility_checked',
      description: 'The front desk confirms coverage and the copay.',
      emits: ['eligibility.check.completed'],
      typicalDelaySeconds: 2 * MINUTE,
    },
    {
      id: 'result_final',
      description: 'The point-of-care HbA1c result is final.',
      emits: ['results.observation.final', 'results.report.final'],
      typicalDelaySeconds: 30 * MINUTE,
    },
    {
      id: 'prescription_created',
      description: 'The clinician renews metformin.',
      emits: ['medications.prescription.created'],
      typicalDelaySeconds: 15 * MINUTE,
    },
    { id: 'claim_submitted', description: 'The practice bills the visit.', emits: ['claims.claim.submitted'], typicalDelaySeconds: 1 * DAY },
    {
      id: 'claim_acknowledged',
      description: 'The payer acknowledges the claim (277CA) and accepts it for adjudication.',
      emits: ['claims.claim.acknowledged'],
      typicalDelaySeconds: 1 * HOUR,
    },
    {
      id: 'claim_adjudicated',
      description: 'The payer adjudicates the claim.',
      emits: ['claims.claim.adjudicated'],
      typicalDelaySeconds: 10 * DAY,
    },
    {
      id: 'payment_issued',
      description: 'The weekly remittance pays the claim.',
      emits: ['remittance.payment.issued'],
      typicalDelaySeconds: 3 * DAY,
    },
  ],
  plan: {
    kind: 'claim',
    service: 'officeVisitModerate',
    secondLine: 'hba1c',
    natural: 'paid',
    denial: 'missingInformation',
    needsPriorAuthListing: false,
    adjudicationStep: 'claim_adjudicated',
    paymentStep: 'payment_issued',
  },
  story: { setting: 'family_practice', diagnosis: 'diabetes', order: null, result: 'hba1c' },
});
