import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  defineQuery,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import type { AttemptTrigger } from '../../activities/deliveries';
import type { DeliveryStatusValue } from '../../drizzle/schema';
import type { NewDelivery } from '../../webhooks/delivery-records';
import { decideAfterAttempt, decideAfterReplay } from './policy';
import { DeliveryStatus } from '../search-attributes';

export interface DeliveryWorkflowInput {
  deliveryId: string;
  /** Delays before each retry, in ms (WEBHOOK_RETRY_SCHEDULE, fixed when the delivery is created). */
  retryScheduleMs: number[];
  /** Set by the trigger: the delivery to record before the first attempt (if the API has not yet). */
  newDelivery?: NewDelivery;
  /** Set when a replay starts a new run for a delivery whose earlier run has closed. */
  resumeFrom?: { status: DeliveryStatusValue; attemptsMade: number };
}

export interface DeliveryState {
  status: DeliveryStatusValue;
  attemptsMade: number;
  nextAttemptAt: string | null;
}

export const DELIVERY_TERMINAL_FAILURE = 'DeliveryStateConflict';

export const deliveryStateQuery = defineQuery<DeliveryState>('deliveryState');
/** Answers once the delivery is cancelled; fails (DeliveryStateConflict) once it is terminal. */
export const cancelDeliveryUpdate = defineUpdate<DeliveryState>('cancelDelivery');
/** Answers once the replay is accepted (state `pending`); fails unless the delivery is terminal. */
export const replayDeliveryUpdate = defineUpdate<DeliveryState>('replayDelivery');

const TERMINAL: ReadonlySet<DeliveryStatusValue> = new Set(['succeeded', 'failed', 'cancelled']);

const { attemptDelivery } = proxyActivities<SandboxActivities>({
  // 15 s receiver timeout plus a slow-chaos delay and the database writes around it.
  startToCloseTimeout: '2 minutes',
  // Only infrastructure errors reach this policy; receiver answers are results, recorded once.
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// A short database write: run in the worker without a round trip through the server.
const { recordDeliveryState, recordNewDelivery } = proxyLocalActivities<SandboxActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/**
 * One webhook delivery, `delivery-<dlv id>`: an immediate attempt, then the retry schedule as
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
  let replayRequested = false;

  async function setState(status: DeliveryStatusValue, nextAttemptAt: string | null): Promise<void> {
    state = { ...state, status, nextAttemptAt };
    await recordDeliveryState({ deliveryId: input.deliveryId, status, nextAttemptAt });
    upsertSearchAttributes([{ key: DeliveryStatus, value: status }]);
  }

  async function exclusively<T>(step: () => Promise<T>): Promise<T> {
    await condition(() => !busy);
    busy = true;
    try {
      return await step();
    } finally {
      busy = false;
    }
  }

  setHandler(deliveryStateQuery, () => state);
  setHandler(
    cancelDeliveryUpdate,
    () =>
      exclusively(async () => {
        if (TERMINAL.has(state.status)) throw conflict(`The delivery is already ${state.status}; only pending or retrying deliveries can be cancelled.`);
        await setState('cancelled', null);
        return state;
      }),
    { validator: () => rejectIf(TERMINAL.has(state.status), `The delivery is already ${state.status}; only pending or retrying deliveries can be cancelled.`) },
  );
  setHandler(
    replayDeliveryUpdate,
    () =>
      exclusively(async () => {
        if (!TERMINAL.has(state.status) || replayRequested) throw conflict(`The delivery is ${state.status}; only a finished delivery can be replayed.`);
        replayRequested = true;
        await setState('pending', null);
        return state;
      }),
    { validator: () => rejectIf(!TERMINAL.has(state.status) || replayRequested, `The delivery is ${state.status}; only a finished delivery can be replayed.`) },
  );

  async function attempt(trigger: AttemptTrigger, retriesUsed: number) {
    return exclusively(async () => {
      const attemptNumber = state.attemptsMade + 1;
      const result = await attemptDelivery({ deliveryId: input.deliveryId, attemptNumber, trigger });
      state = { ...state, attemptsMade: attemptNumber };
      const decision = trigger === 'replay' ? decideAfterReplay(result) : decideAfterAttempt(result, retriesUsed, input.retryScheduleMs);
      // Date.now() in a workflow is the deterministic workflow clock.
      await setState(decision.status, decision.status === 'retrying' ? new Date(Date.now() + decision.delayMs).toISOString() : null);
      return decision;
    });
  }

  if (input.newDelivery) await recordNewDelivery(input.newDelivery);
  if (!input.resumeFrom) {
    let decision = await attempt('initial', 0);
    for (let retriesUsed = 1; decision.status === 'retrying'; retriesUsed += 1) {
      const cancelled = await condition(() => state.status === 'cancelled', decision.delayMs);
      if (cancelled) break;
      decision = await attempt('retry', retriesUsed);
    }
  }
  for (;;) {
    await condition(() => replayRequested || allHandlersFinished());
    if (!replayRequested) return state;
    await attempt('replay', 0);
    replayRequested = false;
  }
}

function conflict(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: DELIVERY_TERMINAL_FAILURE, message, nonRetryable: true });
}

function rejectIf(rejected: boolean, message: string): void {
  if (rejected) throw conflict(message);
}
