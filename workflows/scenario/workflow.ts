import {
  allHandlersFinished,
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import { refuse } from '../../platform/workflow-refusal';
import type { ScenarioProgress } from '../../scenarios/run';
import { isRunEnded } from '../../scenarios/vocabulary';
import { startDeliveryChild } from '../delivery/workflow';
import {
  type AdvanceRequest,
  advanceScenarioUpdate,
  cancelScenarioUpdate,
  runHasEnded,
  SCENARIO_RUN_ENDED,
  type ScenarioWorkflowInput,
  scenarioProgressQuery,
} from './contract';
import {
  initialProgress,
  MANUAL_RUN_IDLE_MS,
  runCancelled,
  runCompleted,
  runExpired,
  stepDone,
  stepEmitted,
  stepWaiting,
  waitBeforeStep,
  waitSummary,
} from './policy';

/** The patch (workflow versioning) under which a manual-pace run expires after MANUAL_RUN_IDLE_MS without an advance. */
const MANUAL_RUNS_EXPIRE = 'manual-runs-expire';

const { prepareStepDeliveries } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// Short database writes: run in the worker without a round trip through the server.
const { recordScenarioRun, recordScenarioProgress } = proxyLocalActivities<SandboxActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/**
 * One scenario run (its id: scenarioWorkflowId in ./contract). Each step waits its delay as a
 * durable timer scaled by the pace (or, at manual pace, until advanced), then emits its events:
 * an activity builds them with ids derived from run, step and event, and each becomes a delivery
 * workflow started as a child. The child start is in this run's history, so a worker that dies
 * mid-step resumes after it and never emits twice. The next step waits for the deliveries to
 * settle, so events reach the receiver in step order.
 */
export async function scenarioWorkflow(input: ScenarioWorkflowInput): Promise<ScenarioProgress> {
  let progress = initialProgress(input.steps, input.simulatedStart);
  let cancelRequested = false;
  let advanceRequested = false;
  let expired = false;
  let waitingIndex: number | null = null;
  // The last step whose wait an advance with `fromStep` released (AdvanceRequest).
  let releasedThrough = -1;
  const ended = () => isRunEnded(progress.status);

  setHandler(scenarioProgressQuery, () => progress);
  setHandler(
    cancelScenarioUpdate,
    async () => {
      refuseIfEnded(progress);
      cancelRequested = true;
      await condition(ended);
      return progress;
    },
    { validator: () => refuseIfEnded(progress) },
  );
  setHandler(
    advanceScenarioUpdate,
    async (request?: AdvanceRequest) => {
      refuseIfEnded(progress);
      // Keyed by the Update's own input (in the history), so histories of advances without it replay as before.
      const fromStep = request?.fromStep;
      if (fromStep === undefined) await condition(() => waitingIndex !== null || ended());
      else await condition(() => (waitingIndex !== null && waitingIndex >= fromStep) || releasedThrough >= fromStep || ended());
      refuseIfEnded(progress);
      // A retry of an advance that released this wait already: the run moves one step, not two.
      if (fromStep !== undefined && releasedThrough >= fromStep) return progress;
      if (fromStep !== undefined) releasedThrough = waitingIndex!;
      advanceRequested = true;
      await condition(() => waitingIndex === null || ended());
      return progress;
    },
    { validator: (_request?: AdvanceRequest) => refuseIfEnded(progress) },
  );

  async function record(): Promise<void> {
    await recordScenarioProgress({ runId: input.runId, progress });
  }

  /** Until the timer fires, an advance releases the step or a cancel stops the run. */
  async function waitOut(ms: number | null, summary: string): Promise<void> {
    const released = () => advanceRequested || cancelRequested;
    if (ms === null) {
      if (patched(MANUAL_RUNS_EXPIRE)) expired = !(await condition(released, MANUAL_RUN_IDLE_MS));
      else await condition(released);
      return;
    }
    const scope = new CancellationScope();
    const timer = scope.run(() => sleep(ms, { summary }));
    const fired = await Promise.race([
      timer.then(
        () => true,
        () => false,
      ),
      condition(released).then(() => false),
    ]);
    if (!fired) scope.cancel();
  }

  await recordScenarioRun(input.newRun);
  for (const [index, step] of input.steps.entries()) {
    if (step.skipped) continue;
    if (cancelRequested) break;
    const ms = waitBeforeStep(input.steps, index, input.pace);
    if (ms !== 0) {
      // Date.now() in a workflow is the deterministic workflow clock.
      progress = stepWaiting(progress, index, ms === null ? null : new Date(Date.now() + ms).toISOString());
      await record();
      waitingIndex = index;
      await waitOut(ms, waitSummary(step, input.pace, ms));
      waitingIndex = null;
      advanceRequested = false;
      if (cancelRequested || expired) break;
    }
    const deliveries = step.emits.length
      ? await prepareStepDeliveries.executeWithOptions(
          {
            startToCloseTimeout: '30 seconds',
            retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
            summary: `Build the events of step ${step.id}: ${step.emits.join(', ')}`,
          },
          [{ runId: input.runId, stepIndex: index }],
        )
      : [];
    for (const delivery of deliveries) {
      if (cancelRequested) break;
      const child = await startDeliveryChild(delivery, input.retryScheduleMs, `${delivery.event} (scenario ${input.scenarioId}, step ${step.id})`);
      progress = stepEmitted(progress, index, { event: delivery.event, delivery_id: delivery.id });
      const settled = child.result().then(
        () => true,
        (error) => {
          // A delivery that fails keeps its own state; the run goes on.
          if (error instanceof ChildWorkflowFailure) return true;
          throw error;
        },
      );
      await Promise.race([settled, condition(() => cancelRequested)]);
    }
    if (cancelRequested) break;
    progress = stepDone(progress, index);
    await record();
  }
  progress = cancelRequested ? runCancelled(progress, 'Cancelled through the API') : expired ? runExpired(progress) : runCompleted(progress);
  await record();
  await condition(allHandlersFinished);
  return progress;
}

/** Checked by the validator, and again by the handler, as the run may have ended in between. */
function refuseIfEnded(progress: ScenarioProgress): void {
  if (isRunEnded(progress.status)) throw refuse(SCENARIO_RUN_ENDED, runHasEnded(progress.status));
}
