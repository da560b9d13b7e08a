import { describe, expect, it } from 'vitest';
import type { PlannedStep } from '../../scenarios/plan';
import { initialProgress, runCancelled, stepDone, stepWaiting, waitBeforeStep, waitSummary } from '../../workflows/scenario/policy';

const step = (id: string, delaySeconds: number, skipped = false): PlannedStep => ({
  id,
  description: `${id} happens`,
  emits: [],
  typical_delay_seconds: delaySeconds,
  delay_seconds: delaySeconds,
  skipped,
});
const steps = [step('first', 0), step('skipped', 3600, true), step('day', 86_400), step('second', 1)];

describe('scenario pacing', () => {
  it('waits the real delay at realtime, the delay divided by time_scale when accelerated, and for an advance at manual pace', () => {
    expect(waitBeforeStep(steps, 0, { mode: 'realtime', time_scale: null })).toBe(0);
    expect(waitBeforeStep(steps, 2, { mode: 'realtime', time_scale: null })).toBe(86_400_000);
    expect(waitBeforeStep(steps, 2, { mode: 'accelerated', time_scale: 1440 })).toBe(60_000);
    // A positive delay never rounds to no wait at all.
    expect(waitBeforeStep(steps, 3, { mode: 'accelerated', time_scale: 1_000_000 })).toBe(1);
    expect(waitBeforeStep(steps, 0, { mode: 'manual', time_scale: null })).toBe(0);
    expect(waitBeforeStep(steps, 2, { mode: 'manual', time_scale: null })).toBeNull();
  });

  it('starts every step pending (skipped ones skipped) on the simulated clock, skipped steps taking no time', () => {
    const progress = initialProgress(steps, '2026-03-02T09:00:00.000Z');
    expect(progress.status).toBe('running');
    expect(progress.steps.map((entry) => [entry.id, entry.status, entry.simulated_due_at])).toEqual([
      ['first', 'pending', '2026-03-02T09:00:00.000Z'],
      ['skipped', 'skipped', '2026-03-02T09:00:00.000Z'],
      ['day', 'pending', '2026-03-03T09:00:00.000Z'],
      ['second', 'pending', '2026-03-03T09:00:01.000Z'],
    ]);
  });

  it('moves steps through waiting and done; a cancel cancels what has not happened and keeps what has', () => {
    let progress = initialProgress(steps, '2026-03-02T09:00:00.000Z');
    progress = stepDone(progress, 0);
    progress = stepWaiting(progress, 2, '2026-03-02T09:01:00.000Z');
    expect(progress.current_step).toBe('day');
    const cancelled = runCancelled(progress, 'Cancelled through the API');
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.steps.map((entry) => entry.status)).toEqual(['done', 'skipped', 'cancelled', 'cancelled']);
  });

  it('summarizes a wait for the Web UI in simulated and real time', () => {
    expect(waitSummary(steps[2]!, { mode: 'accelerated', time_scale: 1440 }, 60_000)).toBe('Step day in 1 d simulated = 1 min at ×1440: day happens');
    expect(waitSummary(steps[2]!, { mode: 'manual', time_scale: null }, null)).toBe(
      'Step day waits for an advance (manual pace; typically 1 d later)',
    );
  });
});
