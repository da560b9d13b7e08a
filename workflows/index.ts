// The worker's workflow bundle: every workflow type the task queue serves.
export { deliveryWorkflow } from './delivery';
export { selfCheckWorkflow } from './self-check';
