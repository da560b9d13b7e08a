import { ApiProblem } from './problem';

/** Seconds a client over its bound is asked to wait: work in flight typically settles within them. */
const RETRY_AFTER_SECONDS = 10;

/**
 * Per-organization bounds on work that runs for a while (issue 23, fair sharing): an organization with
 * `limit` scenario runs or aggregator queries still running is answered 429 until one ends, so one
 * tenant cannot fill the worker with its own. `running` is counted from the recorded rows (by their
 * owner), so a burst that starts faster than its workflows record may pass the bound by what was in between.
 */
export function assertWithinInFlightBound(running: number, limit: number, what: string): void {
  if (running < limit) return;
  throw new ApiProblem(
    429,
    'too_many_in_flight',
    `Your organization already has ${limit} ${what} running, its bound. Wait for one to end (or cancel one), then try again.`,
    { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } },
  );
}
