import { proxyActivities } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';

const { checkDatabase } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export interface SelfCheckReport {
  organizations: number;
}

/**
 * Run once at start-up: a round trip API → Temporal → worker → database → back, so a newcomer sees
 * at once that every part is wired, and finds the run in the Web UI.
 */
export async function selfCheckWorkflow(): Promise<SelfCheckReport> {
  return checkDatabase();
}
