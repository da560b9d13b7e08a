import type { Bundle, Parameters } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { createSubscription, readSubscription } from '../../fhir/subscriptions/records';
import { PAS_TOPIC } from '../../fhir/subscriptions/vocabulary';
import { createOrganization } from '../../platform/organizations';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../platform/retry-schedule';
import { subscriptionWorkflowId } from '../../workflows/subscription/contract';
import { subscriptionWorkflow } from '../../workflows/subscription/workflow';
import { fhirErrors } from '../support/fhir-validator';
import { startReceiver } from '../support/receiver';
import { durationMillis, useTimeSkipping } from '../support/time-skipping';
import { waitUntil } from '../support/wait';

const suite = useTimeSkipping();

const HOUR_MS = 3_600_000;
const typeOf = (body: string) =>
  ((JSON.parse(body) as Bundle).entry![0]!.resource as Parameters).parameter!.find((parameter) => parameter.name === 'type')!.valueCode;

async function subscribed(endpoint: string, options: { heartbeatSeconds: number; end: Date | null }) {
  const organization = await createOrganization(suite.db, { name: 'Time-skipping Subscriber Clinic (synthetic)', webhookUrl: null });
  const row = await createSubscription(suite.db, organization.id, {
    topic: PAS_TOPIC,
    filters: [],
    endpoint,
    headers: [],
    payloadMime: 'application/fhir+json',
    content: 'id-only',
    heartbeatSeconds: options.heartbeatSeconds,
    end: options.end,
    reason: 'Heartbeats on the time-skipping server (synthetic)',
  });
  const handle = await suite.environment.start(subscriptionWorkflow, {
    workflowId: subscriptionWorkflowId(row.id),
    args: [
      {
        organizationId: organization.id,
        subscriptionId: row.id,
        heartbeatSeconds: options.heartbeatSeconds,
        end: options.end?.toISOString() ?? null,
        retryScheduleMs: [...DEFAULT_RETRY_SCHEDULE_MS],
      },
    ],
  });
  return { organization, row, handle };
}

describe('a subscription’s workflow on the time-skipping server', () => {
  // 3.5 hours of workflow time; the test's own timeout holds it to seconds.
  it('sends the handshake, then a heartbeat every period as a durable timer, and turns off at its end', async () => {
    const receiver = await startReceiver();
    try {
      const { organization, row, handle } = await subscribed(receiver.url, { heartbeatSeconds: 3600, end: new Date(Date.now() + 3.5 * HOUR_MS) });
      expect(await handle.result()).toBe('off');
      const requests = await receiver.waitForRequests(4);
      expect(requests.map((request) => typeOf(request.body))).toEqual(['handshake', 'heartbeat', 'heartbeat', 'heartbeat']);
      for (const request of requests) expect(fhirErrors(JSON.parse(request.body))).toEqual([]);
      expect((await readSubscription(suite.db, organization.id, row.id))!.status).toBe('off');

      const timers = ((await handle.fetchHistory()).events ?? [])
        .filter((event) => event.timerStartedEventAttributes)
        .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
      expect(timers.slice(0, 3)).toEqual([HOUR_MS, HOUR_MS, HOUR_MS]);
    } finally {
      await receiver.close();
    }
  });

  // The heartbeat's delivery waits its 42.5-minute retry schedule in workflow time.
  it('falls into error when a heartbeat’s delivery fails for good, and stops its heartbeats', async () => {
    const receiver = await startReceiver((_request, index) => ({ status: index === 0 ? 200 : 503 }));
    try {
      const { organization, row, handle } = await subscribed(receiver.url, { heartbeatSeconds: 3600, end: null });
      await receiver.waitForRequests(1 + 1 + DEFAULT_RETRY_SCHEDULE_MS.length, 30_000);
      const failed = await waitUntil(
        async () => {
          const current = await readSubscription(suite.db, organization.id, row.id);
          return current?.status === 'error' ? current : undefined;
        },
        { what: 'the subscription in error', timeoutMs: 30_000 },
      );
      expect(failed.error).toMatch(/failed for good after 5 attempt\(s\).*503/);
      expect(await handle.result()).toBe('stopped');
      expect(receiver.requests).toHaveLength(1 + 1 + DEFAULT_RETRY_SCHEDULE_MS.length);
    } finally {
      await receiver.close();
    }
  });
});
