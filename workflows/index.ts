// The worker's workflow bundle: every workflow type the task queue serves.

export { aggregatorWorkflow } from './aggregator/workflow';
export { deliveryWorkflow } from './delivery/workflow';
export { exportWorkflow } from './export/workflow';
export { priorAuthWorkflow } from './prior-auth/workflow';
export { retentionWorkflow } from './retention/workflow';
export { scenarioWorkflow } from './scenario/workflow';
export { selfCheckWorkflow } from './self-check/workflow';
export { subscriptionWorkflow } from './subscription/workflow';
