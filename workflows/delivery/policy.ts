import type { AttemptResult } from '../../webhooks/attempt-result';

/**
 * How long an attempt's activity may go without a heartbeat reaching Temporal before it is taken for
 * lost (its worker died) and retried. The SDK sends one at most every 0.8 × this (24 s), which leaves
 * 6 s for one to arrive late on a loaded machine: an attempt waiting its turn (platform/organization-lines.ts)
 * heartbeats for as long as it waits, and 5 s (1 s of slack) let waiting attempts time out under load.
 * Longer would cost a dead worker's attempts more delay; shorter, more heartbeats per waiting attempt.
 */
export const ATTEMPT_HEARTBEAT_TIMEOUT_MS = 30_000;

/**
 * What follows an attempt (CONVENTIONS.md): 2xx succeeds; 410 fails at once; anything else is retried
 * after the next entry of the schedule, or after a 429's Retry-After when that is longer; when the
 * schedule is used up, or the attempt could not be prepared or recorded (`final`), the delivery fails. A replay is one attempt, never retried by itself.
 */
export type Decision = { status: 'succeeded' } | { status: 'failed' } | { status: 'retrying'; delayMs: number };

export function decideAfterAttempt(result: AttemptResult, retriesUsed: number, retryScheduleMs: readonly number[]): Decision {
  if (result.outcome === 'succeeded') return { status: 'succeeded' };
  const scheduled = retryScheduleMs[retriesUsed];
  if (result.outcome === 'gone' || result.final || scheduled === undefined) return { status: 'failed' };
  return { status: 'retrying', delayMs: Math.max(scheduled, result.retryAfterMs ?? 0) };
}

export function decideAfterReplay(result: AttemptResult): Decision {
  return { status: result.outcome === 'succeeded' ? 'succeeded' : 'failed' };
}
