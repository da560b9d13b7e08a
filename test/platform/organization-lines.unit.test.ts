import { describe, expect, it } from 'vitest';
import { createOrganizationLines, TurnSuperseded } from '../../platform/organization-lines';

/** Lets every settled promise's callbacks run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

/** Joins the line and notes, by name, when the attempt got its turn or why it left. */
function join(lines: ReturnType<typeof createOrganizationLines>, log: string[], organizationId: string, name: string, signal?: AbortSignal) {
  return lines.waitTurn(organizationId, { key: name, signal }).then(
    () => log.push(name),
    (error: Error) => log.push(`${name} left: ${error.name}`),
  );
}

describe('organization lines', () => {
  it("runs an organization's attempts past its slots in the order they came, each as one of its attempts ends, and another organization's at once", async () => {
    const lines = createOrganizationLines(2);
    const turns: string[] = [];
    expect([lines.tryTake('a'), lines.tryTake('a'), lines.tryTake('a')]).toEqual([true, true, false]);
    for (const name of ['a3', 'a4', 'a5']) void join(lines, turns, 'a', name);
    expect(lines.tryTake('b')).toBe(true);
    await settled();
    expect(turns).toEqual([]);

    lines.give('a');
    await settled();
    expect(turns).toEqual(['a3']);
    // A newcomer never jumps the line, even with a slot about to be handed over.
    expect(lines.tryTake('a')).toBe(false);
    void join(lines, turns, 'a', 'a6');
    for (let ended = 0; ended < 3; ended += 1) lines.give('a');
    await settled();
    expect(turns).toEqual(['a3', 'a4', 'a5', 'a6']);

    // Once all have ended, the organization's slots are free again.
    for (let ended = 0; ended < 2; ended += 1) lines.give('a');
    expect([lines.tryTake('a'), lines.tryTake('a'), lines.tryTake('a')]).toEqual([true, true, false]);
  });

  it('takes an attempt out of the line when Temporal no longer waits for it, and never gives it a turn', async () => {
    const lines = createOrganizationLines(1);
    const turns: string[] = [];
    expect(lines.tryTake('a')).toBe(true);
    const timedOut = new AbortController();
    void join(lines, turns, 'a', 'stale', timedOut.signal);
    void join(lines, turns, 'a', 'next');
    timedOut.abort(Object.assign(new Error('TIMED_OUT'), { name: 'CancelledFailure' }));
    await settled();
    expect(turns).toEqual(['stale left: CancelledFailure']);
    lines.give('a');
    await settled();
    expect(turns).toEqual(['stale left: CancelledFailure', 'next']);
  });

  it("puts a retried attempt in its earlier execution's place, which leaves without a turn", async () => {
    const lines = createOrganizationLines(1);
    const turns: string[] = [];
    expect(lines.tryTake('a')).toBe(true);
    void join(lines, turns, 'a', 'dlv_1#1');
    void join(lines, turns, 'a', 'dlv_2#1');
    const retried = lines.waitTurn('a', { key: 'dlv_1#1' }).then(() => turns.push('dlv_1#1 (retry)'));
    await settled();
    expect(turns).toEqual([`dlv_1#1 left: ${TurnSuperseded.name}`]);
    // The retry has the first place in line, ahead of the attempt that came after the stale one.
    lines.give('a');
    await retried;
    await settled();
    expect(turns).toEqual([`dlv_1#1 left: ${TurnSuperseded.name}`, 'dlv_1#1 (retry)']);
    lines.give('a');
    await settled();
    expect(turns.at(-1)).toBe('dlv_2#1');
  });
});
