import { ActivityFailure, CancellationScope, isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import { CHAOS_FAILURE, type ExportOutcome, type ExportWorkflowInput } from '../../interop/bulk-export/export';

const { planExport, writeExportType, endExport, discardExport } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * One bulk export (exportWorkflowId in ./contract), recorded by the API at kick-off: its chaos is
 * picked, each type's NDJSON files are written by one step, then it ends with its expiry set. Every step
 * answers from the stored record when retried, so a worker restart mid-export resumes where it was. A
 * cancel (DELETE on the status URL) deletes the export and its files; a step that finds the export
 * already deleted ends the run.
 */
export async function exportWorkflow(input: ExportWorkflowInput): Promise<ExportOutcome> {
  const { exportId, fileLifetimeHours } = input;
  try {
    const plan = await planExport(input);
    if (plan === 'discarded') return 'discarded';
    if (plan.chaos.fail) return await endExport({ exportId, fileLifetimeHours, failure: CHAOS_FAILURE });
    for (const type of plan.types) {
      // A durable timer: the slow chaos survives worker restarts like any other wait.
      if (plan.chaos.slowMs !== null) await sleep(plan.chaos.slowMs);
      const written = await writeExportType({ exportId, type });
      if (written === 'discarded') return 'discarded';
    }
    return await endExport({ exportId, fileLifetimeHours, failure: null });
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() => discardExport({ exportId }));
      throw error;
    }
    if (error instanceof ActivityFailure) {
      const cause = error.cause?.message ?? error.message;
      return await endExport({ exportId, fileLifetimeHours, failure: `The export could not be written (${cause}); kick off a new one.` });
    }
    throw error;
  }
}
