import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_SCHEDULE, DEFAULT_RETRY_SCHEDULE_MS, parseRetrySchedule, RETRY_SCHEDULE_PATTERN } from '../../platform/retry-schedule';

describe('the retry schedule', () => {
  it('defaults to 30 s, 2 min, 10 min and 30 min: four retries after the first attempt', () => {
    expect(DEFAULT_RETRY_SCHEDULE).toBe('30s,2m,10m,30m');
    expect(DEFAULT_RETRY_SCHEDULE_MS).toEqual([30_000, 120_000, 600_000, 1_800_000]);
  });

  it('reads ms, s, m and h entries, spaces allowed around them', () => {
    expect(parseRetrySchedule('250ms, 2s ,1m,1h')).toEqual([250, 2_000, 60_000, 3_600_000]);
  });

  it('describes what it accepts, so configuration can refuse anything else', () => {
    for (const good of ['1s', '30s,2m,10m,30m', ' 5ms , 6ms ']) expect(RETRY_SCHEDULE_PATTERN.test(good), good).toBe(true);
    for (const bad of ['', '30', '30s,', '1d', '1.5s', 's']) expect(RETRY_SCHEDULE_PATTERN.test(bad), bad).toBe(false);
  });
});
