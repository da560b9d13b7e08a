/**
 * Slots per organization (issue 23, fair sharing): at most `perOrganization` attempts of one
 * organization run at once in a worker process, so a receiver that never answers (or a slow chaos
 * profile) holds that many of the worker's activity slots, never all of them, and every other
 * organization's deliveries keep theirs. An attempt past the bound waits for one of its
 * organization's slots, in the order the attempts came, and never fails for it (issue 32: the
 * delivery activity waits outside the worker's activity slot, activities/deliveries.ts). Counted per
 * process: N workers allow N × the bound.
 */
export interface OrganizationSlots {
  /** Whether an attempt of the organization would run at once. */
  isFree(organizationId: string): boolean;
  /**
   * Runs `work` in one of the organization's slots: at once when one is free, else once the attempts
   * waiting before it have had theirs. Aborting `signal` while it waits takes it out of the line
   * (rejected with the signal's reason, never run).
   */
  run<T>(organizationId: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

export function createOrganizationSlots(perOrganization: number): OrganizationSlots {
  /** Per organization with an attempt running: how many run, and the attempts waiting, first in line first. */
  const organizations = new Map<string, { running: number; waiting: Array<() => void> }>();

  function take(organizationId: string, signal?: AbortSignal): Promise<void> | undefined {
    const held = organizations.get(organizationId);
    if (!held) {
      organizations.set(organizationId, { running: 1, waiting: [] });
      return;
    }
    if (held.running < perOrganization) {
      held.running += 1;
      return;
    }
    return new Promise<void>((resolve, reject) => {
      signal?.throwIfAborted();
      const start = () => {
        signal?.removeEventListener('abort', leave);
        resolve();
      };
      const leave = () => {
        held.waiting.splice(held.waiting.indexOf(start), 1);
        reject(signal!.reason);
      };
      held.waiting.push(start);
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  /** A finished attempt's slot goes to the first one waiting, if any. */
  function give(organizationId: string): void {
    const held = organizations.get(organizationId)!;
    const next = held.waiting.shift();
    if (next) next();
    else if (held.running === 1) organizations.delete(organizationId);
    else held.running -= 1;
  }

  return {
    isFree: (organizationId) => (organizations.get(organizationId)?.running ?? 0) < perOrganization,
    async run(organizationId, work, signal) {
      await take(organizationId, signal);
      try {
        return await work();
      } finally {
        give(organizationId);
      }
    },
  };
}
