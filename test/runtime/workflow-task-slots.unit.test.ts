import type { SlotReserveContext } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createWorkflowTaskSlots } from '../../runtime/workflow-task-slots';

const context = {} as SlotReserveContext;
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('workflow task slots', () => {
  it('keeps room for eager starts that pollers never take, and gives a poller the next polled slot released', async () => {
    const supplier = createWorkflowTaskSlots(2, 1);
    if (supplier.type !== 'custom') throw new Error('a custom supplier');
    const never = new AbortController().signal;
    const first = await supplier.reserveSlot(context, never);
    await supplier.reserveSlot(context, never);
    let third = false;
    void supplier.reserveSlot(context, never).then(() => {
      third = true;
    });
    await settled();
    expect(third).toBe(false);

    // Every polled slot is busy: an eager start still gets the one kept for it, and only that one.
    const eager = supplier.tryReserveSlot(context);
    expect(eager).not.toBeNull();
    expect(supplier.tryReserveSlot(context)).toBeNull();

    // The eager slot released goes back to eager starts, not to the waiting poller.
    supplier.releaseSlot({ permit: eager! });
    await settled();
    expect(third).toBe(false);
    expect(supplier.tryReserveSlot(context)).not.toBeNull();

    supplier.releaseSlot({ permit: first });
    await settled();
    expect(third).toBe(true);
  });

  it('gives up a reservation the SDK no longer needs', async () => {
    const supplier = createWorkflowTaskSlots(1, 1);
    if (supplier.type !== 'custom') throw new Error('a custom supplier');
    const held = await supplier.reserveSlot(context, new AbortController().signal);
    const abandoned = new AbortController();
    const reservation = supplier.reserveSlot(context, abandoned.signal);
    abandoned.abort(new Error('AbortError'));
    await expect(reservation).rejects.toThrow('AbortError');
    supplier.releaseSlot({ permit: held });
    await expect(supplier.reserveSlot(context, new AbortController().signal)).resolves.toBeDefined();
  });
});
