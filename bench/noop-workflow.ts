import { proxyActivities } from '@temporalio/workflow';

/** The engine's ceiling for the delivery benchmark: one workflow, one activity that does nothing. */
const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function noopWorkflow(): Promise<void> {
  await noop();
}
