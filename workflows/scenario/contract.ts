import type { SearchAttributePair } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { PlannedStep } from '../../scenarios/plan';
import type { NewScenarioRun, ScenarioPace, ScenarioProgress } from '../../scenarios/run';
import type { ScenarioRunStatus } from '../../scenarios/vocabulary';
import { ConnectionId, OrgId, ScenarioId } from '../search-attributes';

/**
 * The scenario workflow's contract, shared by the workflow, the API, the worker and the tests: its
 * id, input, progress, the Updates that steer it and the reason it refuses them.
 */

/** One workflow per run, found by its business id. */
export const scenarioWorkflowId = (runId: string) => `scenario-${runId}`;

export interface ScenarioWorkflowInput {
  runId: string;
  organizationId: string;
  scenarioId: string;
  connectionId: string | null;
  pace: ScenarioPace;
  steps: PlannedStep[];
  simulatedStart: string;
  /** The delivery retry schedule the run's deliveries use (WEBHOOK_RETRY_SCHEDULE, fixed at start). */
  retryScheduleMs: number[];
  newRun: NewScenarioRun;
}

export const scenarioProgressQuery = defineQuery<ScenarioProgress>('scenarioProgress');
/**
 * What an advance releases: the first wait, at or after `fromStep`, that no advance has released yet.
 * The API sends the first step it sees unfinished, so a retried advance (the same `fromStep`, or a later
 * one once that step is recorded) finds its wait released already and releases nothing more. Absent in
 * advances sent before it existed, which release the waiting step or the next one to wait.
 */
export interface AdvanceRequest {
  fromStep: number;
}

/** Releases the waiting step (or the next one to wait); answers once it is released. Refused once the run has ended. */
export const advanceScenarioUpdate = defineUpdate<ScenarioProgress, [AdvanceRequest]>('advanceScenario');

/**
 * The Update ids the API gives advances and cancels, so a retried request joins the Update it retries
 * (Temporal runs one Update per id and run): the request's Idempotency-Key when it sent one, which
 * tells a retry from a new advance for certain; else the step the advance moves past.
 */
export const advanceUpdateId = (request: AdvanceRequest, idempotencyKey: string | undefined) =>
  idempotencyKey === undefined ? `advance-from-${request.fromStep}` : `advance-key-${idempotencyKey}`;
/** A cancel needs none without a key: two cancels in flight both wait for the one cancellation, and one after it is refused (409). */
export const cancelUpdateId = (idempotencyKey: string | undefined) => (idempotencyKey === undefined ? undefined : `cancel-key-${idempotencyKey}`);
/** Stops the run: no step after this emits. Answers once the run is cancelled; refused once it has ended. */
export const cancelScenarioUpdate = defineUpdate<ScenarioProgress>('cancelScenario');

/** The refusal code of both Updates, which the API answers as 409. */
export const SCENARIO_RUN_ENDED = 'scenario_run_ended';

export const runHasEnded = (status: ScenarioRunStatus) => `The run is already ${status}; only a running run can be advanced or cancelled.`;

/** What the Web UI can find a run by. */
export function scenarioSearchAttributes(run: { organizationId: string; scenarioId: string; connectionId: string | null }): SearchAttributePair[] {
  return [
    { key: OrgId, value: run.organizationId },
    { key: ScenarioId, value: run.scenarioId },
    ...(run.connectionId ? [{ key: ConnectionId, value: run.connectionId }] : []),
  ];
}
