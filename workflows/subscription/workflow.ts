import { continueAsNew, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import { startDeliveryChild } from '../delivery/workflow';
import type { SubscriptionWorkflowInput, SubscriptionWorkflowResult } from './contract';

const { prepareSubscriptionNotice } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
const { recordHandshakeOutcome, endSubscription } = proxyLocalActivities<SandboxActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** Heartbeats one run sends before it continues as new, so its history stays short however long the subscription lives. */
const HEARTBEATS_PER_RUN = 100;

/**
 * One FHIR Subscription (R4 Subscriptions Backport, rest-hook): the handshake, then a heartbeat every
 * period as a durable timer, until the subscription ends, is deleted (the API cancels this workflow),
 * or falls into error. Every notification is a delivery workflow of its own (signed, logged,
 * replayable); a handshake is one attempt, since any handshake error puts the subscription in error.
 * Event notifications do not pass through here: notifySubscriptions hands them to the workflow of the event.
 */
export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionWorkflowResult> {
  const { organizationId, subscriptionId } = input;
  if (input.heartbeatsSent === undefined) {
    const handshake = await prepareSubscriptionNotice({ organizationId, subscriptionId, type: 'handshake', noticeKey: 'handshake' });
    if (!handshake) return 'stopped';
    const child = await startDeliveryChild(handshake, [], 'Subscription handshake');
    await child.result();
    const status = await recordHandshakeOutcome({ organizationId, subscriptionId, deliveryId: handshake.id });
    if (status !== 'active') return 'error';
  }
  const end = input.end === null ? null : Date.parse(input.end);
  let sent = input.heartbeatsSent ?? 0;
  for (;;) {
    // Date.now() in a workflow is the deterministic workflow clock.
    const untilEnd = end === null ? null : end - Date.now();
    const untilBeat = input.heartbeatSeconds === null ? null : input.heartbeatSeconds * 1000;
    if (untilEnd === null && untilBeat === null) return 'active';
    if (untilEnd !== null && (untilBeat === null || untilEnd <= untilBeat)) {
      if (untilEnd > 0) await sleep(untilEnd);
      await endSubscription({ subscriptionId });
      return 'off';
    }
    await sleep(untilBeat!);
    sent += 1;
    const beat = await prepareSubscriptionNotice({ organizationId, subscriptionId, type: 'heartbeat', noticeKey: `heartbeat-${sent}` });
    if (!beat) return 'stopped';
    await startDeliveryChild(beat, input.retryScheduleMs, 'Subscription heartbeat');
    if (sent % HEARTBEATS_PER_RUN === 0) await continueAsNew<typeof subscriptionWorkflow>({ ...input, heartbeatsSent: sent });
  }
}
