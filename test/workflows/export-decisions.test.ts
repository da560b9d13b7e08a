import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { CHAOS_FAILURE } from '../../interop/bulk-export/export';
import { exportWorkflowId } from '../../workflows/export/contract';
import { exportWorkflow } from '../../workflows/export/workflow';
import { createFakeActivities, type ExportScript } from '../support/fake-activities';
import { durationMillis, useTimeSkippingWith } from '../support/time-skipping';
import { waitUntil } from '../support/wait';

/**
 * The bulk export workflow's decisions with in-memory activities: the fail and slow chaos, a type
 * that cannot be written, an export deleted while it runs, and the files' lifetime handed to its end.
 * No database.
 */
const fakes = createFakeActivities();
const suite = useTimeSkippingWith(fakes.activities);

const types = ['Patient', 'Coverage', 'Claim'];
const noChaos = { fail: false, slowMs: null, partialEveryNth: null };

function start(script: ExportScript, options: { timeSkipping?: boolean } = {}) {
  const exportId = `exp-fake-${randomUUID()}`;
  fakes.scriptExport(exportId, script);
  const handle = suite.environment.start(exportWorkflow, {
    workflowId: exportWorkflowId(exportId),
    args: [{ exportId, organizationId: 'org_fake', fileLifetimeHours: 24 }],
    ...options,
  });
  return { exportId, handle };
}

describe('the bulk export workflow, with fake activities', () => {
  it('writes every type in order, then ends completed with the files’ lifetime', async () => {
    const { exportId, handle } = start({ plan: { types, chaos: noChaos } });

    expect(await (await handle).result()).toBe('completed');
    expect(fakes.exportCallsOf(exportId)).toEqual(['plan', 'write Patient', 'write Coverage', 'write Claim', 'end after 24 h: completed']);
  });

  it('waits the slow chaos as a durable timer before each type', async () => {
    const { handle } = start({ plan: { types, chaos: { ...noChaos, slowMs: 600_000 } } });
    const run = await handle;

    expect(await run.result()).toBe('completed');
    const events = (await run.fetchHistory()).events ?? [];
    const timers = events.filter((event) => event.timerStartedEventAttributes);
    expect(timers.map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout))).toEqual([600_000, 600_000, 600_000]);
  });

  it('ends failed at once, writing nothing, when the fail chaos picks it', async () => {
    const { exportId, handle } = start({ plan: { types, chaos: { ...noChaos, fail: true } } });

    expect(await (await handle).result()).toBe('failed');
    expect(fakes.exportCallsOf(exportId)).toEqual(['plan', `end after 24 h: ${CHAOS_FAILURE}`]);
  });

  it('ends failed, saying why, when a type cannot be written', async () => {
    const { exportId, handle } = start({
      plan: { types, chaos: noChaos },
      onWrite: (type) => (type === 'Coverage' ? new Error('disk full') : 'written'),
    });

    expect(await (await handle).result()).toBe('failed');
    expect(fakes.exportCallsOf(exportId)).toEqual([
      'plan',
      'write Patient',
      'write Coverage',
      'end after 24 h: The export could not be written (disk full); kick off a new one.',
    ]);
  });

  it('stops without ending the export when it was deleted while a type was written', async () => {
    const { exportId, handle } = start({ plan: { types, chaos: noChaos }, onWrite: (type) => (type === 'Coverage' ? 'discarded' : 'written') });

    expect(await (await handle).result()).toBe('discarded');
    expect(fakes.exportCallsOf(exportId)).toEqual(['plan', 'write Patient', 'write Coverage']);
  });

  it('discards the export when its run is cancelled during a wait', async () => {
    // In real time: the hour's slow chaos is still running when the cancel arrives.
    const { exportId, handle } = start({ plan: { types, chaos: { ...noChaos, slowMs: 3_600_000 } } }, { timeSkipping: false });
    const run = await handle;
    await waitUntil(() => (fakes.exportCallsOf(exportId).includes('plan') ? true : undefined), { what: 'the export planned' });

    await run.cancel();
    await expect(run.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(fakes.exportCallsOf(exportId)).toEqual(['plan', 'discard']);
  });
});
