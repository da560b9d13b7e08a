import { defineScenario, HOUR } from './definition';

export const labOrderToResult = defineScenario({
  id: 'lab_order_to_result',
  name: 'Lab order to result',
  description: 'A lipid panel is ordered, drawn and resulted.',
  steps: [
    { id: 'order_placed', description: 'The clinician orders a lipid panel.', emits: ['orders.service_request.placed'], typicalDelaySeconds: 0 },
    {
      id: 'results_final',
      description: 'The laboratory finalises the results and the report.',
      emits: ['results.observation.final', 'results.report.final'],
      typicalDelaySeconds: 6 * HOUR,
    },
  ],
  plan: { kind: 'plain', service: 'lipidPanel' },
  story: { setting: 'family_practice', diagnosis: 'hyperlipidemia', order: 'lab', result: 'ldl' },
});
