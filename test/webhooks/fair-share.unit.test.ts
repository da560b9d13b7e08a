import { describe, expect, it } from 'vitest';
import { createOrganizationSlots } from '../../webhooks/fair-share';

/** A piece of work the test finishes by hand, recording when it started. */
function pending(log: string[], name: string) {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const work = async () => {
    log.push(name);
    await finished;
    return name;
  };
  return { work, finish };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('slots per organization', () => {
  it("runs an organization's attempts past its bound in the order they came, as its slots free, and others' at once", async () => {
    const slots = createOrganizationSlots(2);
    const started: string[] = [];
    const [a1, a2, a3, a4, b1] = ['a1', 'a2', 'a3', 'a4', 'b1'].map((name) => pending(started, name));
    const results = [
      slots.run('a', a1!.work),
      slots.run('a', a2!.work),
      slots.run('a', a3!.work),
      slots.run('a', a4!.work),
      slots.run('b', b1!.work),
    ];
    await settled();
    expect(started).toEqual(['a1', 'a2', 'b1']);
    expect([slots.isFree('a'), slots.isFree('b')]).toEqual([false, true]);

    a2!.finish();
    await settled();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    for (const each of [a1, a3, a4, b1]) each!.finish();
    expect(await Promise.all(results)).toEqual(['a1', 'a2', 'a3', 'a4', 'b1']);
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
    expect(slots.isFree('a')).toBe(true);
  });

  it('takes an attempt out of the line when it is aborted while it waits, and never runs it', async () => {
    const slots = createOrganizationSlots(1);
    const started: string[] = [];
    const [first, dropped, next] = ['first', 'dropped', 'next'].map((name) => pending(started, name));
    const abort = new AbortController();
    const running = slots.run('a', first!.work);
    const waiting = slots.run('a', dropped!.work, abort.signal);
    const after = slots.run('a', next!.work);
    abort.abort(new Error('Temporal no longer waits for this attempt'));
    await expect(waiting).rejects.toThrow('Temporal no longer waits for this attempt');
    first!.finish();
    next!.finish();
    expect(await Promise.all([running, after])).toEqual(['first', 'next']);
    expect(started).toEqual(['first', 'next']);
  });
});
