import type { PaceMode, ScenarioRunStatus, ScenarioStepStatus } from './vocabulary';

/**
 * A scenario run's shape, the same for the API that creates it, the workflow that plays it and the
 * records that store it (run-records.ts): its pace, its progress, and the run as first recorded.
 */

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
