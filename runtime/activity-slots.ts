import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit } from '@temporalio/worker';

/**
 * The worker's activity slots (WORKER_MAX_CONCURRENT_ACTIVITIES) as a Temporal slot supplier that
 * can lend one. A delivery attempt waiting in its organization's line (platform/organization-lines.ts) is a
 * running activity that does nothing; were its slot counted, one organization's waiting attempts
 * would fill the worker and no other organization's task would be polled (issue 23's starvation,
 * by waiting instead of by sending). So a waiting attempt lends its slot: the worker polls another
 * task in its place, and at most `slots` activities that do work run at once. The attempt takes
 * the slot back when its turn comes, which is when one of its organization's attempts ends and
 * gives its own slot up: a hand-over, so the count stays within `slots` but for that instant.
 */
export interface ActivitySlots {
  supplier: CustomSlotSupplier<ActivitySlotInfo>;
  /** Lends the calling activity's slot to the next task; the returned function takes it back (once). */
  lend(): () => void;
}

export function createActivitySlots(slots: number): ActivitySlots {
  /** Permits issued to the SDK and not yet released, including lent ones. */
  let issued = 0;
  let lent = 0;
  /** Reservations the SDK waits on (a poller wanting a slot before it polls), first come first. */
  const pending: Array<() => void> = [];

  /** Slots held by activities that do work (or reserved by a poller for its next task), lent ones not counted. */
  const held = () => issued - lent;
  const permit = (): SlotPermit => {
    issued += 1;
    return {};
  };
  /** Grants waiting reservations while slots are free. */
  const grant = () => {
    while (pending.length > 0 && held() < slots) pending.shift()!();
  };

  return {
    supplier: {
      type: 'custom',
      reserveSlot(_context, abortSignal) {
        if (held() < slots && pending.length === 0) return Promise.resolve(permit());
        return new Promise<SlotPermit>((resolve, reject) => {
          const take = () => {
            abortSignal.removeEventListener('abort', abort);
            resolve(permit());
          };
          const abort = () => {
            pending.splice(pending.indexOf(take), 1);
            reject(abortSignal.reason);
          };
          pending.push(take);
          abortSignal.addEventListener('abort', abort, { once: true });
        });
      },
      // Eager activities (a workflow task's completion bringing its new activity back to this
      // worker): only from a free slot, never waited for.
      tryReserveSlot: () => (held() < slots ? permit() : null),
      markSlotUsed() {},
      releaseSlot() {
        issued -= 1;
        grant();
      },
    },
    lend() {
      lent += 1;
      grant();
      let returned = false;
      return () => {
        if (returned) return;
        returned = true;
        lent -= 1;
      };
    },
  };
}
