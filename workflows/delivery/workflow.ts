import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import { refuse } from '../../platform/workflow-refusal';
import type { CarriedDelivery } from '../../webhooks/claim-check';
import { type AttemptTrigger, type DeliveryStatusValue, isTerminal } from '../../webhooks/vocabulary';
import { DeliveryStatus } from '../search-attributes';
import {
  cancelDeliveryUpdate,
  cannotCancel,
  cannotReplay,
  DELIVERY_STATE_CONFLICT,
  type DeliveryState,
  type DeliveryWorkflowInput,
  deliverySearchAttributes,
  deliveryStateQuery,
  deliveryWorkflowId,
  deliveryWorkflowInput,
  replayDeliveryUpdate,
} from './contract';
import { ATTEMPT_HEARTBEAT_TIMEOUT_MS, decideAfterAttempt, decideAfterReplay } from './policy';

/** The patch (workflow versioning) under which the first attempt, not a step before it, records a new delivery. */
const FIRST_ATTEMPT_RECORDS_DELIVERY = 'first-attempt-records-delivery';
/** The patch under which a cancel answers at once while an attempt is in flight, instead of waiting for it. */
const CANCEL_DURING_ATTEMPT = 'cancel-during-attempt';

// Replay checks an activity's type and id, not its timeouts: changing these is safe for running histories.
const { attemptDelivery } = proxyActivities<SandboxActivities>({
  // The attempt may first wait its turn behind its organization's other attempts on the worker
  // (platform/organization-lines.ts): 20 slots × 15 s receiver timeouts drain 400 waiting attempts to a silent
  // receiver in 5 minutes; then the 15 s timeout, a slow-chaos delay and the database writes. One that
  // waits longer times out and is retried at the back of the line.
  startToCloseTimeout: '10 minutes',
  // An attempt whose worker died is retried within this (it then finds its recorded intent and
  // resolves it as `unknown` rather than sending again).
  heartbeatTimeout: ATTEMPT_HEARTBEAT_TIMEOUT_MS,
  // Only infrastructure errors and timeouts reach this policy, and are retried within a second or
  // so; receiver answers are results, recorded once.
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// A short database write: run in the worker without a round trip through the server.
const { recordDeliveryState, recordNewDelivery, recordExhaustedDelivery } = proxyLocalActivities<SandboxActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/**
 * One webhook delivery (its id: deliveryWorkflowId in ./contract): an immediate attempt, then the retry schedule as
 * durable timers. Timers (not an activity retry policy) because the schedule is not geometric, a
 * 429 can stretch one delay, every attempt must be recorded as it happens, and a cancel must end a
 * wait at once: a timer raced against the cancel condition does all four plainly.
 */
export async function deliveryWorkflow(input: DeliveryWorkflowInput): Promise<DeliveryState> {
  let state: DeliveryState = {
    status: input.resumeFrom?.status ?? 'pending',
    attemptsMade: input.resumeFrom?.attemptsMade ?? 0,
    nextAttemptAt: null,
  };
  // Set while an attempt or a state write runs, so cancel and replay act between steps, never mid-step.
  let busy = false;
  // Set while an attempt's activity runs: a cancel then takes effect at once, and the attempt's answer is only logged.
  let sending = false;
  const revision = input.revision ?? 0;
  const cancelsDuringAttempt = revision >= 1 || patched(CANCEL_DURING_ATTEMPT);
  let replayRequested = false;

  async function setState(status: DeliveryStatusValue, nextAttemptAt: string | null): Promise<void> {
    state = { ...state, status, nextAttemptAt };
    await recordDeliveryState({ deliveryId: input.deliveryId, status, nextAttemptAt });
    upsertSearchAttributes([{ key: DeliveryStatus, value: status }]);
  }

  async function exclusively<T>(step: () => Promise<T>): Promise<T> {
    // A step that finds none running starts at once: every promise a workflow makes costs the SDK a
    // captured stack (for the `__stack_trace` query), and a delivery's steps almost never wait. Checked
    // again after each wait, so two steps woken by one release never both run.
    while (busy) await condition(() => !busy);
    busy = true;
    try {
      return await step();
    } finally {
      busy = false;
    }
  }

  setHandler(deliveryStateQuery, () => state);
  const refusesCancel = () => isTerminal(state.status);
  const refusesReplay = () => !isTerminal(state.status) || replayRequested;
  setHandler(
    cancelDeliveryUpdate,
    async () => {
      if (cancelsDuringAttempt && sending) {
        await setState('cancelled', null);
        return state;
      }
      return exclusively(async () => {
        refuseIf(refusesCancel(), cannotCancel(state.status));
        await setState('cancelled', null);
        return state;
      });
    },
    { validator: () => refuseIf(refusesCancel(), cannotCancel(state.status)) },
  );
  setHandler(
    replayDeliveryUpdate,
    () =>
      exclusively(async () => {
        refuseIf(refusesReplay(), cannotReplay(state.status));
        replayRequested = true;
        await setState('pending', null);
        return state;
      }),
    { validator: () => refuseIf(refusesReplay(), cannotReplay(state.status)) },
  );

  async function attempt(trigger: AttemptTrigger, retriesUsed: number, newDelivery?: CarriedDelivery) {
    return exclusively(async () => {
      const attemptNumber = state.attemptsMade + 1;
      sending = true;
      let result: Awaited<ReturnType<typeof attemptDelivery>>;
      try {
        result = await attemptDelivery({ deliveryId: input.deliveryId, attemptNumber, trigger, newDelivery });
      } catch (error) {
        // The delivery's own row could not be written (the activity refuses that for good): it ends
        // failed instead of being retried forever. Never seen in earlier histories (retries were unlimited).
        if (!isFinal(error)) throw error;
        result = { outcome: 'failed', responseStatus: null, retryAfterMs: null, final: true };
      } finally {
        sending = false;
      }
      state = { ...state, attemptsMade: attemptNumber };
      // Cancelled while the attempt was in flight: its answer is in the attempt log; the delivery stays cancelled.
      if (state.status === 'cancelled') return { status: 'cancelled' as const };
      const decision = trigger === 'replay' ? decideAfterReplay(result) : decideAfterAttempt(result, retriesUsed, input.retryScheduleMs);
      // The attempt's own write marked the row succeeded: only this run's state and search attribute follow. Decided by
      // the recorded result, so histories from before attempts did this (no such field) replay their state step as they ran.
      if (decision.status === 'succeeded' && result.recordedSucceeded) {
        state = { ...state, status: 'succeeded', nextAttemptAt: null };
        upsertSearchAttributes([{ key: DeliveryStatus, value: 'succeeded' }]);
        return decision;
      }
      // Date.now() in a workflow is the deterministic workflow clock.
      await setState(decision.status, decision.status === 'retrying' ? new Date(Date.now() + decision.delayMs).toISOString() : null);
      return decision;
    });
  }

  // The first attempt records the new delivery itself: a step of its own cost the first workflow task
  // a round trip through the worker before anything was sent. Runs that began before keep that step.
  const recordedByAttempt = revision >= 1 || patched(FIRST_ATTEMPT_RECORDS_DELIVERY);
  if (input.newDelivery && !recordedByAttempt) await recordNewDelivery(input.newDelivery);
  if (!input.resumeFrom) {
    let decision = await attempt('initial', 0, recordedByAttempt ? input.newDelivery : undefined);
    for (let retriesUsed = 1; decision.status === 'retrying'; retriesUsed += 1) {
      const cancelled = await condition(() => state.status === 'cancelled', decision.delayMs);
      if (cancelled) break;
      decision = await attempt('retry', retriesUsed);
    }
    if (decision.status === 'failed') await reportExhausted(input);
  }
  const canMoveOn = () => replayRequested || allHandlersFinished();
  for (;;) {
    // Most runs have nothing left to wait for here: they return at once, without a wait's promises.
    if (!canMoveOn()) await condition(canMoveOn);
    if (!replayRequested) return state;
    await attempt('replay', 0);
    replayRequested = false;
  }
}

/**
 * A delivery that failed for good (retries spent, or 410) is reported by a `webhook.delivery.exhausted`
 * delivery of its own, a separate run that outlives this one. The activity records the report once,
 * and this workflow's history starts its run once.
 */
async function reportExhausted(input: DeliveryWorkflowInput): Promise<void> {
  const report = await recordExhaustedDelivery({ deliveryId: input.deliveryId });
  if (!report) return;
  await startDeliveryChild(report, input.retryScheduleMs);
}

/**
 * Starts a delivery from inside a workflow (a scenario step, an aggregator completion, an exhausted
 * report): a child that outlives its parent (ABANDON), so a cancelled run or a finished parent never
 * cuts a delivery short; the same id and search attributes as a delivery the API starts. Its
 * fairness key is its parent's: a child inherits the starting run's priority, every run is started
 * with its organization's (platform/workflow-gateway.ts), and every parent here is of the
 * delivery's own organization.
 */
export function startDeliveryChild(delivery: CarriedDelivery, retryScheduleMs: number[], summary?: string) {
  return startChild(deliveryWorkflow, {
    workflowId: deliveryWorkflowId(delivery.id),
    args: [deliveryWorkflowInput({ deliveryId: delivery.id, retryScheduleMs, newDelivery: delivery })],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: deliverySearchAttributes({ ...delivery, status: 'pending' }),
    ...(summary === undefined ? {} : { staticSummary: summary }),
  });
}

function isFinal(error: unknown): boolean {
  return error instanceof ActivityFailure && error.cause instanceof ApplicationFailure && error.cause.nonRetryable === true;
}

/** Checked twice: by the validator, and again once the handler holds the lock, as the state may have moved. */
function refuseIf(refused: boolean, message: string): void {
  if (refused) throw refuse(DELIVERY_STATE_CONFLICT, message);
}
