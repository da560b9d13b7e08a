/**
 * Slots per organization (issue 23, fair sharing): at most `perOrganization` pieces of one
 * organization's work run at once in a process, and every other organization keeps its own slots.
 * Work past the bound waits in its organization's line, first come first served, and takes the slot
 * of the next of its organization's pieces to end; it is never refused for waiting. Counted per
 * process: N processes allow N × the bound. Webhook attempts on a worker use them (a receiver that
 * never answers holds that many attempts, never all of the worker's; activities/deliveries.ts), and
 * so do the API's workflow starts (platform/workflow-gateway.ts).
 */
export interface OrganizationLines {
  /** Takes one of the organization's slots when one is free and nobody waits for it. */
  tryTake(organizationId: string): boolean;
  /**
   * Joins the organization's line; settles once an ending piece of work hands over its slot, which the
   * caller then holds. Rejects, leaving the line, when `signal` aborts (with its reason), or when a
   * later waiter with the same `key` joins and takes its place (a webhook attempt's key: Temporal only
   * runs an attempt again once it gave up on the earlier execution). A waiter without a key keeps its place.
   */
  waitTurn(organizationId: string, turn?: { key?: string; signal?: AbortSignal }): Promise<void>;
  /** Gives a held slot back: to the first waiter in the organization's line, else it is free. */
  give(organizationId: string): void;
}

/** Why a waiter left the line: a later one with the same key took its place. */
export class TurnSuperseded extends Error {
  override name = 'TurnSuperseded';
}

interface Waiter {
  key: string | undefined;
  takeSlot(): void;
  leave(reason: unknown): void;
}

export function createOrganizationLines(perOrganization: number): OrganizationLines {
  /** Per organization with work running: how many run, and the line, first come first. */
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

    waitTurn(organizationId, { key, signal } = {}) {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        if (tryTake(organizationId)) return resolve();
        const held = organizations.get(organizationId)!;
        const onAbort = () => waiter.leave(signal!.reason);
        const waiter: Waiter = {
          key,
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
        const earlier = key === undefined ? -1 : held.line.findIndex((each) => each.key === key);
        if (earlier >= 0) {
          const superseded = held.line[earlier]!;
          held.line[earlier] = waiter;
          superseded.leave(new TurnSuperseded(`A later waiter with key ${key} took this one's place in line.`));
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
