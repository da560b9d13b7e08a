// The worker's workflow bundle: every workflow type the task queue serves.
export { deliveryWorkflow } from './delivery/workflow';
export { retentionWorkflow } from './retention/workflow';
export { selfCheckWorkflow } from './self-check/workflow';
