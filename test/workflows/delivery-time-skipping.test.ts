import type { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../platform/retry-schedule';
import { attemptsOf } from '../../webhooks/delivery-records';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { deliveryWorkflow } from '../../workflows/delivery/workflow';
import { startReceiver } from '../support/receiver';
import { durationMillis, useTimeSkipping } from '../support/time-skipping';

const suite = useTimeSkipping();

const instant = (event: temporal.api.history.v1.IHistoryEvent) =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + Math.round((event.eventTime?.nanos ?? 0) / 1e6);

describe('the delivery workflow on the real default schedule', () => {
  // 42.5 minutes of waiting in workflow time; the test's own 30 s timeout is what holds it to seconds.
  it('waits 30 s, 2 min, 10 min and 30 min of workflow time between five failed attempts, then fails', async () => {
    const receiver = await startReceiver(() => ({ status: 503 }));
    try {
      const organization = await createOrganization(suite.db, { name: 'Time-skipping Health (synthetic)', webhookUrl: receiver.url });
      const id = newId('dlv');
      const newDelivery = {
        id,
        organizationId: organization.id,
        connectionId: null,
        scenarioId: null,
        event: 'adt.patient.admitted',
        environment: 'sandbox',
        envelopeBody: JSON.stringify({ id: newId('evt'), event: 'adt.patient.admitted', note: 'synthetic' }),
        createdAt: new Date().toISOString(),
      };

      const handle = await suite.environment.start(deliveryWorkflow, {
        workflowId: deliveryWorkflowId(id),
        args: [{ deliveryId: id, retryScheduleMs: [...DEFAULT_RETRY_SCHEDULE_MS], newDelivery }],
      });
      const final = await handle.result();

      expect(final).toMatchObject({ status: 'failed', attemptsMade: 5 });
      // Its `webhook.delivery.exhausted` report goes to the same receiver, as a delivery of its own.
      expect(receiver.requests.filter((request) => request.headers['x-service-delivery-id'] === id)).toHaveLength(5);
      expect((await attemptsOf(suite.db, [id])).get(id)!.map((attempt) => [attempt.trigger, attempt.outcome])).toEqual([
        ['initial', 'failed'],
        ...DEFAULT_RETRY_SCHEDULE_MS.map(() => ['retry', 'failed']),
      ]);

      // Each wait is a durable timer of the schedule's length that ran out in full, in workflow time.
      const events = (await handle.fetchHistory()).events ?? [];
      const started = events.filter((event) => event.timerStartedEventAttributes);
      const fired = events.filter((event) => event.timerFiredEventAttributes);
      expect(started.map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout))).toEqual(DEFAULT_RETRY_SCHEDULE_MS);
      expect(fired).toHaveLength(DEFAULT_RETRY_SCHEDULE_MS.length);
      for (const [index, event] of fired.entries()) {
        expect(instant(event) - instant(started[index]!)).toBeGreaterThanOrEqual(DEFAULT_RETRY_SCHEDULE_MS[index]!);
      }
    } finally {
      await receiver.close();
    }
  });
});
