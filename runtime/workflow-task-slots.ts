import type { CustomSlotSupplier, SlotPermit, WorkflowSlotInfo } from '@temporalio/worker';

/**
 * The worker's workflow task slots as a Temporal slot supplier with room kept for eager starts.
 * Pollers hold at most `polled` slots (WORKER_WORKFLOW_TASK_SLOTS, few so that waiting tasks stay in
 * the server's backlog, where fairness orders them). A workflow started by this process's API on
 * this worker's connection may have its first task handed straight back in the start's answer
 * (runtime/process.ts); the SDK asks for that slot without waiting (`tryReserveSlot`), and gets one
 * of `eager` more, which pollers never take. So a start still finds one free while every polled
 * slot is busy with one organization's burst: the API asks for it only for an organization with
 * nothing else starting (platform/workflow-gateway.ts), whose first task then skips the backlog
 * the burst fills.
 */
export function createWorkflowTaskSlots(polled: number, eager: number): CustomSlotSupplier<WorkflowSlotInfo> {
  let polledHeld = 0;
  let eagerHeld = 0;
  /** Reservations the SDK waits on (a poller wanting a slot before it polls), first come first. */
  const pending: Array<() => void> = [];
  const eagerPermit: SlotPermit = { eager: true };
  const polledPermit = (): SlotPermit => {
    polledHeld += 1;
    return {};
  };

  return {
    type: 'custom',
    reserveSlot(_context, abortSignal) {
      if (polledHeld < polled && pending.length === 0) return Promise.resolve(polledPermit());
      return new Promise<SlotPermit>((resolve, reject) => {
        const take = () => {
          abortSignal.removeEventListener('abort', abort);
          resolve(polledPermit());
        };
        const abort = () => {
          pending.splice(pending.indexOf(take), 1);
          reject(abortSignal.reason);
        };
        pending.push(take);
        abortSignal.addEventListener('abort', abort, { once: true });
      });
    },
    tryReserveSlot() {
      if (eagerHeld >= eager) return null;
      eagerHeld += 1;
      return eagerPermit;
    },
    markSlotUsed() {},
    releaseSlot({ permit }) {
      if (permit === eagerPermit || (permit as { eager?: boolean }).eager) {
        eagerHeld -= 1;
        return;
      }
      polledHeld -= 1;
      while (pending.length > 0 && polledHeld < polled) pending.shift()!();
    },
  };
}
