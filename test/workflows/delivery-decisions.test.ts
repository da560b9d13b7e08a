import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createWorkflowGateway } from '../../platform/workflow-gateway';
import {
  cancelDeliveryUpdate,
  DELIVERY_STATE_CONFLICT,
  deliverySearchAttributes,
  deliveryStateQuery,
  deliveryWorkflowId,
  replayDeliveryUpdate,
} from '../../workflows/delivery/contract';
import { deliveryWorkflow } from '../../workflows/delivery/workflow';
import { answers, createFakeActivities, fakeDelivery } from '../support/fake-activities';
import { durationMillis, useTimeSkippingWith } from '../support/time-skipping';
import { waitUntil } from '../support/wait';

/**
 * The delivery workflow's decisions with in-memory activities: no database, no receiver. Its waits
 * are the time-skipping server's, so a schedule of minutes or hours runs in seconds.
 */
const fakes = createFakeActivities();
const suite = useTimeSkippingWith(fakes.activities);

const newDeliveryId = () => `dlv-fake-${randomUUID()}`;

async function timersOf(handle: WorkflowHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  return events
    .filter((event) => event.timerStartedEventAttributes)
    .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
}

function start(id: string, retryScheduleMs: number[], options: { timeSkipping?: boolean } = {}) {
  return suite.environment.start(deliveryWorkflow, {
    workflowId: deliveryWorkflowId(id),
    args: [{ deliveryId: id, retryScheduleMs, newDelivery: fakeDelivery(id) }],
    ...options,
  });
}

describe('the delivery workflow, with fake activities', () => {
  it('retries a failed attempt after each entry of the schedule, and succeeds when the receiver does', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.unavailable, answers.unavailable, answers.ok);
    const handle = await start(id, [30_000, 120_000, 600_000]);

    expect(await handle.result()).toMatchObject({ status: 'succeeded', attemptsMade: 3 });
    expect(fakes.attemptsOf(id)).toEqual(['initial #1', 'retry #2', 'retry #3']);
    expect(await timersOf(handle)).toEqual([30_000, 120_000]);
    expect(fakes.statesOf(id).map((state) => state.status)).toEqual(['retrying', 'retrying', 'succeeded']);
    expect(fakes.exhausted).not.toContain(id);
  });

  it('waits a 429’s Retry-After when it is longer than the schedule’s next entry', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.tooManyRequests(3_600_000), answers.ok);
    const handle = await start(id, [30_000]);

    expect(await handle.result()).toMatchObject({ status: 'succeeded', attemptsMade: 2 });
    expect(await timersOf(handle)).toEqual([3_600_000]);
  });

  it('fails at once on 410 Gone, without retrying, and reports the delivery exhausted', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.gone);
    const handle = await start(id, [30_000, 120_000]);

    expect(await handle.result()).toMatchObject({ status: 'failed', attemptsMade: 1 });
    expect(fakes.attemptsOf(id)).toEqual(['initial #1']);
    expect(await timersOf(handle)).toEqual([]);
    expect(fakes.exhausted).toContain(id);
  });

  it('fails once the schedule is spent, and sends the exhausted report as a delivery of its own', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.unavailable);
    const handle = await start(id, [30_000, 120_000]);

    expect(await handle.result()).toMatchObject({ status: 'failed', attemptsMade: 3 });
    expect(fakes.attemptsOf(id)).toEqual(['initial #1', 'retry #2', 'retry #3']);
    const report = suite.environment.client.workflow.getHandle(deliveryWorkflowId(`report-${id}`));
    expect(await report.result()).toMatchObject({ status: 'succeeded', attemptsMade: 1 });
  });

  it('ends a retry wait at once when cancelled, and sends nothing more', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.unavailable);
    // In real time: the hour's wait is still running when the cancel arrives.
    const handle = await start(id, [3_600_000], { timeSkipping: false });
    await waitUntil(async () => ((await handle.query(deliveryStateQuery)).status === 'retrying' ? true : undefined), { what: 'the retry wait' });

    expect(await handle.executeUpdate(cancelDeliveryUpdate)).toMatchObject({ status: 'cancelled', attemptsMade: 1 });
    expect(await handle.result()).toMatchObject({ status: 'cancelled', attemptsMade: 1 });
    expect(fakes.attemptsOf(id)).toEqual(['initial #1']);
    expect(fakes.exhausted).not.toContain(id);
  });

  it('answers a cancel while an attempt is in flight at once, and a failed answer then retries nothing', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.unavailable);
    const held = fakes.hold(id, 1);
    const handle = await start(id, [30_000]);
    await held.reached;

    expect(await handle.executeUpdate(cancelDeliveryUpdate)).toMatchObject({ status: 'cancelled', attemptsMade: 0 });
    held.release();
    expect(await handle.result()).toMatchObject({ status: 'cancelled', attemptsMade: 1 });
    expect(fakes.attemptsOf(id)).toEqual(['initial #1']);
  });

  it('replays a finished delivery as one attempt on a new run, never retried by itself', async () => {
    const { client, taskQueue } = suite.environment;
    const workflows = createWorkflowGateway(client, taskQueue);
    for (const [answer, status] of [
      [answers.ok, 'succeeded'],
      [answers.unavailable, 'failed'],
    ] as const) {
      const id = newDeliveryId();
      fakes.receiverAnswers(id, answer);
      // What the API does for a delivery whose run has closed: update-with-start, resuming from the recorded state.
      const accepted = await workflows.updateWithStart(replayDeliveryUpdate, {
        workflow: deliveryWorkflow,
        workflowId: deliveryWorkflowId(id),
        args: [{ deliveryId: id, retryScheduleMs: [30_000, 120_000], resumeFrom: { status: 'failed', attemptsMade: 5 } }],
        organizationId: fakeDelivery(id).organizationId,
        searchAttributes: deliverySearchAttributes({ ...fakeDelivery(id), status: 'failed' }),
      });
      expect(accepted).toMatchObject({ status: 'pending' });

      expect(await client.workflow.getHandle(deliveryWorkflowId(id)).result()).toMatchObject({ status, attemptsMade: 6 });
      expect(fakes.attemptsOf(id)).toEqual(['replay #6']);
    }
  });

  it('refuses to replay a delivery that is still retrying', async () => {
    const id = newDeliveryId();
    fakes.receiverAnswers(id, answers.unavailable);
    const handle = await start(id, [3_600_000], { timeSkipping: false });
    await waitUntil(async () => ((await handle.query(deliveryStateQuery)).status === 'retrying' ? true : undefined), { what: 'the retry wait' });

    // Through the client the API uses, which turns the workflow's refusal into the 409's code and message.
    const workflows = createWorkflowGateway(suite.environment.client, suite.environment.taskQueue);
    await expect(workflows.update(deliveryWorkflowId(id), replayDeliveryUpdate)).rejects.toMatchObject({
      code: DELIVERY_STATE_CONFLICT,
      message: 'The delivery is retrying; only a finished delivery can be replayed.',
    });
    await handle.executeUpdate(cancelDeliveryUpdate);
    expect(await handle.result()).toMatchObject({ status: 'cancelled' });
  });
});
