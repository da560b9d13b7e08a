import { simulatedOffsetsSeconds } from '../../scenarios/clock';
import type { PlannedStep } from '../../scenarios/plan';
import type { EmittedEvent, ScenarioPace, ScenarioProgress, StepProgress } from '../../scenarios/run';

/**
 * The scenario workflow's decisions, pure so they are tested apart from Temporal: how long each
 * step waits at the run's pace, and how the progress moves from step to step.
 */

/**
 * How long a manual-pace run waits for an advance before it expires (issue 23, fair sharing): a run
 * nobody advances would otherwise hold its workflow, and its organization's share, forever.
 */
export const MANUAL_RUN_IDLE_MS = 24 * 60 * 60 * 1000;

export function runExpired(progress: ScenarioProgress): ScenarioProgress {
  return runCancelled(progress, `Expired: no advance for ${MANUAL_RUN_IDLE_MS / 3_600_000} hours (manual pace). Start a new run to continue.`);
}

/** Real milliseconds to wait before a step: `null` waits for an advance, 0 does not wait. */
export function waitBeforeStep(steps: readonly PlannedStep[], index: number, pace: ScenarioPace): number | null {
  const step = steps[index]!;
  const first = steps.findIndex((candidate) => !candidate.skipped) === index;
  if (pace.mode === 'manual') return first ? 0 : null;
  const ms = (step.delay_seconds * 1000) / (pace.mode === 'accelerated' ? pace.time_scale! : 1);
  // A positive delay never rounds down to "no wait": the step still comes after a timer.
  return step.delay_seconds > 0 ? Math.max(1, Math.round(ms)) : 0;
}

export function initialProgress(steps: readonly PlannedStep[], simulatedStart: string): ScenarioProgress {
  const start = Date.parse(simulatedStart);
  const offsets = simulatedOffsetsSeconds(steps);
  return {
    status: 'running',
    current_step: null,
    steps: steps.map((step, index) => ({
      id: step.id,
      status: step.skipped ? 'skipped' : 'pending',
      due_at: null,
      simulated_due_at: new Date(start + offsets[index]! * 1000).toISOString(),
      emitted: [],
    })),
    stopped_reason: null,
  };
}

function withStep(progress: ScenarioProgress, index: number, change: Partial<StepProgress>): ScenarioProgress {
  return { ...progress, steps: progress.steps.map((step, at) => (at === index ? { ...step, ...change } : step)) };
}

export function stepWaiting(progress: ScenarioProgress, index: number, dueAt: string | null): ScenarioProgress {
  return { ...withStep(progress, index, { status: 'waiting', due_at: dueAt }), current_step: progress.steps[index]!.id };
}

export function stepEmitted(progress: ScenarioProgress, index: number, emitted: EmittedEvent): ScenarioProgress {
  return withStep(progress, index, { emitted: [...progress.steps[index]!.emitted, emitted] });
}

export function stepDone(progress: ScenarioProgress, index: number): ScenarioProgress {
  return { ...withStep(progress, index, { status: 'done' }), current_step: progress.steps[index]!.id };
}

/** Every step not yet done is cancelled; the ones that already happened stay as they were. */
export function runCancelled(progress: ScenarioProgress, reason: string): ScenarioProgress {
  return {
    ...progress,
    status: 'cancelled',
    stopped_reason: reason,
    steps: progress.steps.map((step) => (step.status === 'pending' || step.status === 'waiting' ? { ...step, status: 'cancelled' } : step)),
  };
}

export function runCompleted(progress: ScenarioProgress): ScenarioProgress {
  return { ...progress, status: 'completed' };
}

/** A readable line for the Web UI: what the run waits for, and for how long in simulated and real time. */
export function waitSummary(step: PlannedStep, pace: ScenarioPace, ms: number | null): string {
  const simulated = humanDuration(step.delay_seconds * 1000);
  if (ms === null) return `Step ${step.id} waits for an advance (manual pace; typically ${simulated} later)`;
  const scaled = pace.mode === 'accelerated' ? ` = ${humanDuration(ms)} at ×${pace.time_scale}` : '';
  return `Step ${step.id} in ${simulated} simulated${scaled}: ${step.description}`;
}

function humanDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  const parts: string[] = [];
  let rest = Math.round(ms / 1000) * 1000;
  for (const [size, unit] of units) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)} ${unit}`);
      rest %= size;
    }
  }
  return parts.slice(0, 2).join(' ');
}
