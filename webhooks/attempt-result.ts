import type { AttemptOutcome } from './vocabulary';

/**
 * What one attempt answers the delivery workflow, as its record holds it (webhooks/delivery-records.ts):
 * all the retry policy (workflows/delivery/policy.ts) decides from.
 */
export interface AttemptResult {
  outcome: AttemptOutcome;
  responseStatus: number | null;
  /** A 429's Retry-After, which the next attempt must wait at least. */
  retryAfterMs: number | null;
  /** Set when the attempt could not be prepared or recorded for good: the delivery ends as failed (the attempt's error says why). */
  final?: true;
  /** Set when this attempt's own write marked the delivery `succeeded` (with its outcome, in one statement): the workflow then writes no state of its own. */
  recordedSucceeded?: true;
}
