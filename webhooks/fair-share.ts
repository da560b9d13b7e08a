/**
 * Slots per organization (issue 23, fair sharing): at most `perOrganization` attempts of one
 * organization run at once in a worker process, so a receiver that never answers (or a slow chaos
 * profile) holds that many of the worker's activity slots, never all of them, and every other
 * organization's deliveries keep theirs. Counted per process: N workers allow N × the bound.
 */
export interface OrganizationSlots {
  /** Takes a slot for the organization; false when it already holds all of its own. */
  tryAcquire(organizationId: string): boolean;
  release(organizationId: string): void;
}

export function createOrganizationSlots(perOrganization: number): OrganizationSlots {
  const inFlight = new Map<string, number>();
  return {
    tryAcquire(organizationId) {
      const held = inFlight.get(organizationId) ?? 0;
      if (held >= perOrganization) return false;
      inFlight.set(organizationId, held + 1);
      return true;
    },
    release(organizationId) {
      const held = inFlight.get(organizationId) ?? 0;
      if (held <= 1) inFlight.delete(organizationId);
      else inFlight.set(organizationId, held - 1);
    },
  };
}

/** The failure type of an attempt put off because its organization holds all its slots (retried by Temporal, never recorded). */
export const ORGANIZATION_BUSY = 'OrganizationBusy';

/**
 * When an attempt put off for its organization's bound tries again: doubling from half a second to
 * 15 s by the activity's attempt number, with ±25 % jitter so waiting attempts do not come back
 * together. Short enough that a recovered receiver is served soon, long enough that thousands of
 * waiting attempts cost the task queue little.
 */
export function busyRetryDelayMs(activityAttempt: number, random = Math.random): number {
  const base = Math.min(500 * 2 ** Math.max(0, activityAttempt - 1), 15_000);
  return Math.round(base * (0.75 + random() * 0.5));
}
