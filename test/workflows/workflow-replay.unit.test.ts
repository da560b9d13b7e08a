import { readFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundle } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { installQuietRuntime } from '../../runtime/worker';
import { WORKFLOWS_PATH } from '../../runtime/workflow-bundle';

/**
 * Runs already going keep working when their workflow changes: a history recorded by an earlier
 * version replays against today's code without a nondeterminism error. Histories are kept
 * as binary protobuf (History.encode of WorkflowHandle.fetchHistory()): the SDK's JSON reader fails in
 * this install, whose @temporalio/common and @temporalio/proto each carry their own protobufjs.
 * A replay needs the workflow code only, no Temporal server: the test bundles it itself.
 */
let workflowBundle: WorkflowBundle;
beforeAll(async () => {
  installQuietRuntime();
  workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
}, 120_000);

const { History, EventType } = { History: proto.temporal.api.history.v1.History, EventType: proto.temporal.api.enums.v1.EventType };

function history(name: string) {
  return History.decode(readFileSync(new URL(`./histories/${name}.binpb`, import.meta.url)));
}

describe('delivery workflow versions', () => {
  it('replays a delivery begun when a step before the first attempt recorded it (patch first-attempt-records-delivery)', async () => {
    const recorded = history('delivery-recorded-before-first-attempt');
    const types = recorded.events.map((event) => event.eventType);
    // That version's first workflow task ran the recording step (a local activity's marker) before scheduling the attempt.
    expect(types.indexOf(EventType.EVENT_TYPE_MARKER_RECORDED)).toBeLessThan(types.indexOf(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED));
    expect(types.at(-1)).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'delivery-recorded-before-first-attempt')).resolves.toBeUndefined();
  });

  it('replays a delivery whose input carried a claim check for its envelope instead of the envelope', async () => {
    const recorded = history('delivery-claim-check');
    const started = recorded.events[0]!.workflowExecutionStartedEventAttributes!;
    const input = JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString('utf8'));
    expect(input.newDelivery).toMatchObject({ envelopeStaged: true });
    expect(input.newDelivery).not.toHaveProperty('envelopeBody');
    expect(recorded.events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'delivery-claim-check')).resolves.toBeUndefined();
  });

  it('replays a delivery cancelled while its attempt was in flight (patch cancel-during-attempt)', async () => {
    const recorded = history('delivery-cancelled-mid-attempt');
    const types = recorded.events.map((event) => event.eventType);
    const patches = recorded.events
      .filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_patch')
      .map((event) => Buffer.from(event.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0]!.data!).toString('utf8'));
    expect(patches.some((data) => data.includes('cancel-during-attempt'))).toBe(true);
    // The cancel was accepted and answered while the attempt's activity was still running.
    const completed = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED);
    expect(completed).toBeGreaterThan(-1);
    expect(completed).toBeLessThan(types.indexOf(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED));
    expect(types.at(-1)).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'delivery-cancelled-mid-attempt')).resolves.toBeUndefined();
  });

  it('replays a delivery whose attempt recorded it succeeded itself, with no state step after it', async () => {
    const recorded = history('delivery-attempt-records-success');
    const completed = recorded.events.find((event) => event.activityTaskCompletedEventAttributes)!.activityTaskCompletedEventAttributes!;
    const result = JSON.parse(Buffer.from(completed.result!.payloads![0]!.data!).toString('utf8'));
    expect(result).toMatchObject({ outcome: 'succeeded', recordedSucceeded: true });
    const markers = recorded.events.map((event) => event.markerRecordedEventAttributes?.markerName).filter(Boolean);
    // Only the two patches' markers: no local activity wrote the state.
    expect(markers).toEqual(['core_patch', 'core_patch']);
    expect(recorded.events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'delivery-attempt-records-success')).resolves.toBeUndefined();
  });

  it('replays a delivery started at revision 1, which took its behaviours from its input with no patch marker', async () => {
    const recorded = history('delivery-retried-at-revision-1');
    const started = recorded.events[0]!.workflowExecutionStartedEventAttributes!;
    expect(JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString('utf8'))).toMatchObject({ revision: 1 });
    const markers = recorded.events.map((event) => event.markerRecordedEventAttributes?.markerName).filter(Boolean);
    // The first attempt got a 500: one local activity wrote the retrying state, then a timer, a second attempt, success.
    expect(markers).toEqual(['core_local_activity']);
    expect(recorded.events.filter((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)).toHaveLength(2);
    expect(recorded.events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'delivery-retried-at-revision-1')).resolves.toBeUndefined();
  });
});

describe('prior-authorization workflow versions', () => {
  it('replays an authorization whose first assessment was an activity through the server (patch assess-locally)', async () => {
    const recorded = history('prior-auth-assessed-by-activity');
    const scheduled = recorded.events.find((event) => event.activityTaskScheduledEventAttributes)!.activityTaskScheduledEventAttributes!;
    expect(scheduled.activityType!.name).toBe('assessAuthorization');
    // Recorded by $submit with an immediate approval: the first answer went out, the run waits for updates.
    expect(recorded.events.map((event) => event.eventType)).toContain(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED);
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'prior-auth-assessed-by-activity')).resolves.toBeUndefined();
  });
});
