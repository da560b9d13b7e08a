import type { SearchAttributePair } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { PaceMode, ScenarioRunStatus, ScenarioStepStatus } from '../../drizzle/vocabulary';
import type { PlannedStep } from '../../scenarios/plan';
import { ConnectionId, OrgId, ScenarioId } from '../search-attributes';

/**
 * The scenario workflow's contract, shared by the workflow, the API, the worker and the tests: its
 * id, input, progress, the Updates that steer it and the reason it refuses them.
 */

/** One workflow per run, found by its business id. */
export const scenarioWorkflowId = (runId: string) => `scenario-${runId}`;

/** How the run's clock moves; `time_scale` only for `accelerated` (1440: a simulated day per real minute). */
export interface ScenarioPace {
  mode: PaceMode;
  time_scale: number | null;
}

/** A run as the API creates it; also the workflow's input, so either side can record it first. */
export interface NewScenarioRun {
  id: string;
  organizationId: string;
  scenarioId: string;
  connectionId: string | null;
  environment: string;
  patientId: string;
  pace: ScenarioPace;
  outcome: string | null;
  seed: string | null;
  /** The plan (scenarios/plan.ts), stored as the API answers it. */
  plan: unknown;
  progress: ScenarioProgress;
  simulatedStart: string;
  createdAt: string;
}

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

export interface EmittedEvent {
  event: string;
  delivery_id: string;
}

export interface StepProgress {
  id: string;
  status: ScenarioStepStatus;
  /** When the step's wait ends in real time; null until it waits, and at manual pace. */
  due_at: string | null;
  /** When the step happens on the run's simulated clock. */
  simulated_due_at: string;
  emitted: EmittedEvent[];
}

export interface ScenarioProgress {
  status: ScenarioRunStatus;
  current_step: string | null;
  steps: StepProgress[];
  /** The reason the run stopped early (cancelled or failed). */
  stopped_reason: string | null;
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
