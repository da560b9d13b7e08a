import { describe, expect, it } from 'vitest';
import { decideAfterAttempt, decideAfterReplay } from '../../workflows/delivery/policy';

const SCHEDULE = [30_000, 120_000, 600_000, 1_800_000];
const failed = { outcome: 'failed' as const, responseStatus: 503, retryAfterMs: null };

describe('what follows a delivery attempt', () => {
  it('succeeds on a 2xx, at any point of the schedule', () => {
    expect(decideAfterAttempt({ outcome: 'succeeded', responseStatus: 200, retryAfterMs: null }, 3, SCHEDULE)).toEqual({ status: 'succeeded' });
  });

  it('retries after each entry of the schedule in turn, then fails when it is used up', () => {
    expect(SCHEDULE.map((_, retriesUsed) => decideAfterAttempt(failed, retriesUsed, SCHEDULE))).toEqual(
      SCHEDULE.map((delayMs) => ({ status: 'retrying', delayMs })),
    );
    expect(decideAfterAttempt(failed, SCHEDULE.length, SCHEDULE)).toEqual({ status: 'failed' });
  });

  it('fails at once on 410 Gone, whatever retries are left', () => {
    expect(decideAfterAttempt({ outcome: 'gone', responseStatus: 410, retryAfterMs: null }, 0, SCHEDULE)).toEqual({ status: 'failed' });
  });

  it("waits a 429's Retry-After when it is longer than the scheduled delay, never shorter", () => {
    expect(decideAfterAttempt({ ...failed, responseStatus: 429, retryAfterMs: 90_000 }, 0, SCHEDULE)).toEqual({
      status: 'retrying',
      delayMs: 90_000,
    });
    expect(decideAfterAttempt({ ...failed, responseStatus: 429, retryAfterMs: 5_000 }, 0, SCHEDULE)).toEqual({ status: 'retrying', delayMs: 30_000 });
  });

  it('treats a replay as one attempt, never retried by itself', () => {
    expect(decideAfterReplay(failed)).toEqual({ status: 'failed' });
    expect(decideAfterReplay({ outcome: 'succeeded', responseStatus: 204, retryAfterMs: null })).toEqual({ status: 'succeeded' });
  });
});
