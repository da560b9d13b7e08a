// The worker's workflow bundle: every workflow type the task queue serves.
export { selfCheckWorkflow } from './self-check';
