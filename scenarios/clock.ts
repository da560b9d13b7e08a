/**
 * A run's simulated clock: each step that happens comes its delay after the previous one that
 * happened (skipped steps take no time). Pure and import-free, so the workflow bundle can use it.
 */
export interface ClockStep {
  delay_seconds: number;
  skipped: boolean;
}

/** Each step's simulated time, in seconds after the run's simulated start (a skipped step: the previous step's). */
export function simulatedOffsetsSeconds(steps: readonly ClockStep[]): number[] {
  let elapsed = 0;
  return steps.map((step) => {
    if (!step.skipped) elapsed += step.delay_seconds;
    return elapsed;
  });
}
