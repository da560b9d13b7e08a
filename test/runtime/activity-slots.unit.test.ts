import type { SlotReserveContext } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createActivitySlots } from '../../runtime/activity-slots';

const context = {} as SlotReserveContext;
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('activity slots', () => {
  it('hands out at most its slots, and a slot lent by a waiting activity to the next task until it is taken back', async () => {
    const slots = createActivitySlots(2);
    const { supplier } = slots;
    if (supplier.type !== 'custom') throw new Error('a custom supplier');
    const never = new AbortController().signal;
    await supplier.reserveSlot(context, never);
    await supplier.reserveSlot(context, never);
    let third = false;
    void supplier.reserveSlot(context, never).then(() => {
      third = true;
    });
    await settled();
    expect(third).toBe(false);
    expect(supplier.tryReserveSlot(context)).toBeNull();

    // An activity starts waiting for its organization: the poller gets its slot.
    const takeBack = slots.lend();
    await settled();
    expect(third).toBe(true);
    expect(supplier.tryReserveSlot(context)).toBeNull();

    // Its turn comes as one of its organization's attempts ends: it takes the slot back (once,
    // however often it is called), and that attempt's slot is released: all 2 held again.
    takeBack();
    takeBack();
    supplier.releaseSlot({ permit: {} });
    expect(supplier.tryReserveSlot(context)).toBeNull();
    supplier.releaseSlot({ permit: {} });
    expect(supplier.tryReserveSlot(context)).not.toBeNull();
  });

  it('gives up a reservation the SDK no longer needs', async () => {
    const slots = createActivitySlots(1);
    const { supplier } = slots;
    if (supplier.type !== 'custom') throw new Error('a custom supplier');
    await supplier.reserveSlot(context, new AbortController().signal);
    const abandoned = new AbortController();
    const reservation = supplier.reserveSlot(context, abandoned.signal);
    abandoned.abort(new Error('AbortError'));
    await expect(reservation).rejects.toThrow('AbortError');
    // The abandoned reservation holds nothing: the slot the first one releases is free.
    supplier.releaseSlot({ permit: {} });
    expect(supplier.tryReserveSlot(context)).not.toBeNull();
    expect(supplier.tryReserveSlot(context)).toBeNull();
  });
});
