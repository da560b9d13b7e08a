// The worker's workflow bundle: every workflow type the task queue serves.
export { deliveryWorkflow } from './delivery/workflow';
export { scenarioWorkflow } from './scenario/workflow';
export { selfCheckWorkflow } from './self-check/workflow';
