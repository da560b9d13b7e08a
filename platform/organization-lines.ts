/**
 * Slots per organization (issue 23, fair sharing): at most `perOrganization` attempts of one
 * organization run at once in a worker process, so a receiver that never answers (or a slow chaos
 * profile) holds that many attempts, never all of the worker's, and every other organization's
 * deliveries keep theirs. An attempt past the bound waits in its organization's line, first come
 * first served, and takes the slot of the next of its organization's attempts to end (issue 32: it
 * is never failed for waiting, which would make Temporal retry it in a loop). Counted per process:
 * N workers allow N × the bound.
 */
export interface OrganizationLines {
  /** Takes one of the organization's slots when one is free and nobody waits for it. */
  tryTake(organizationId: string): boolean;
  /**
   * Joins the organization's line; settles once an ending attempt hands over its slot, which the
   * caller then holds. Rejects, leaving the line, when `signal` aborts (with its reason), or when a
   * later execution of the same attempt (`attemptKey`) joins: Temporal only runs an attempt again
   * once it gave up on the earlier execution, so the later one takes the earlier one's place.
   */
  waitTurn(organizationId: string, attemptKey: string, signal?: AbortSignal): Promise<void>;
  /** Gives a held slot back: to the first attempt in the organization's line, else it is free. */
  give(organizationId: string): void;
}

/** Why a waiting attempt left the line: a later execution of the same attempt took its place. */
export class AttemptSuperseded extends Error {
  override name = 'AttemptSuperseded';
}

interface Waiter {
  attemptKey: string;
  takeSlot(): void;
  leave(reason: unknown): void;
}

export function createOrganizationLines(perOrganization: number): OrganizationLines {
  /** Per organization with an attempt running: how many run, and the line, first come first. */
  const organizations = new Map<string, { running: number; line: Waiter[] }>();

  function tryTake(organizationId: string): boolean {
    const held = organizations.get(organizationId);
    if (!held) {
      organizations.set(organizationId, { running: 1, line: [] });
      return true;
    }
    if (held.running >= perOrganization || held.line.length > 0) return false;
    held.running += 1;
    return true;
  }

  return {
    tryTake,

    waitTurn(organizationId, attemptKey, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        if (tryTake(organizationId)) return resolve();
        const held = organizations.get(organizationId)!;
        const onAbort = () => waiter.leave(signal!.reason);
        const waiter: Waiter = {
          attemptKey,
          takeSlot() {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          leave(reason) {
            signal?.removeEventListener('abort', onAbort);
            const at = held.line.indexOf(waiter);
            if (at >= 0) held.line.splice(at, 1);
            reject(reason);
          },
        };
        const earlier = held.line.findIndex((each) => each.attemptKey === attemptKey);
        if (earlier >= 0) {
          const superseded = held.line[earlier]!;
          held.line[earlier] = waiter;
          superseded.leave(new AttemptSuperseded(`A later execution of attempt ${attemptKey} took this one's place in line.`));
        } else {
          held.line.push(waiter);
        }
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },

    give(organizationId) {
      const held = organizations.get(organizationId);
      if (!held) return;
      const next = held.line.shift();
      if (next) next.takeSlot();
      else if (held.running <= 1) organizations.delete(organizationId);
      else held.running -= 1;
    },
  };
}
