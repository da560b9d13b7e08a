/**
 * The retry schedule (CONVENTIONS.md, Webhooks): one immediate attempt, then one retry per entry,
 * each after the previous failure. `WEBHOOK_RETRY_SCHEDULE` overrides it for tests and demos.
 */
export const DEFAULT_RETRY_SCHEDULE = '30s,2m,10m,30m';

const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

export const RETRY_SCHEDULE_PATTERN = /^\s*\d+(ms|s|m|h)\s*(,\s*\d+(ms|s|m|h)\s*)*$/;

/** `30s,2m,10m,30m` → [30000, 120000, 600000, 1800000]; the value must match RETRY_SCHEDULE_PATTERN. */
export function parseRetrySchedule(value: string): number[] {
  return value.split(',').map((entry) => {
    const [, amount, unit] = /^(\d+)(ms|s|m|h)$/.exec(entry.trim())!;
    return Number(amount) * DURATION_UNITS_MS[unit as keyof typeof DURATION_UNITS_MS];
  });
}

export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE);
