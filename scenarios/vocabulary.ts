/**
 * The scenario domain's vocabulary: run and step states and pace modes, written once for the schema,
 * the API, the activities and the workflows. It imports nothing, so every layer may use it, the
 * drizzle schema included (CONVENTIONS.md, Layers).
 */

/** Scenario run states: `running` until every step is done (`completed`), or `cancelled`, or `failed` (an error stopped it). */
export const SCENARIO_RUN_STATUSES = ['running', 'completed', 'cancelled', 'failed'] as const;
export type ScenarioRunStatus = (typeof SCENARIO_RUN_STATUSES)[number];

export function isRunEnded(status: ScenarioRunStatus): boolean {
  return status !== 'running';
}

/** A step's state: `waiting` while its delay runs (or, at manual pace, until advanced). */
export const SCENARIO_STEP_STATUSES = ['pending', 'waiting', 'done', 'skipped', 'cancelled'] as const;
export type ScenarioStepStatus = (typeof SCENARIO_STEP_STATUSES)[number];

/** How a run's clock moves: typical delays as they are, divided by `time_scale`, or only when advanced. */
export const PACE_MODES = ['realtime', 'accelerated', 'manual'] as const;
export type PaceMode = (typeof PACE_MODES)[number];
