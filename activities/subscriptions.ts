import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { FhirResource } from 'fhir/r4';
import type { FhirSubscription } from '../drizzle/schema';
import { notificationBundle } from '../fhir/subscriptions/notification';
import { activeSubscriptions, readSubscription, recordNotice, recordSubscriptionStatus } from '../fhir/subscriptions/records';
import { filtersMatch } from '../fhir/subscriptions/request';
import { SUBSCRIPTION_EVENTS, type SubscriptionTopicUrl } from '../fhir/subscriptions/vocabulary';
import type { Database } from '../platform/database';
import { newId } from '../platform/ids';
import type { CarriedDelivery } from '../webhooks/claim-check';
import { attemptsOf, findDelivery, recordNewDelivery } from '../webhooks/delivery-records';
import { type NewDelivery, newDelivery } from '../webhooks/new-delivery';

/**
 * What an event's focus is, for its organization: the resource (a full-resource notification
 * carries it) and the identifiers of the provider organization it concerns (the `org-identifier`
 * filter compares them), each `system|value` or `value`. Undefined when the organization has no
 * such resource. The module that owns the focus's table provides it (PAS: its authorizations).
 */
export type FocusReader = (
  db: Database,
  organizationId: string,
  reference: string,
) => Promise<{ resource: FhirResource; orgIdentifiers: string[] } | undefined>;

export interface SubscriptionActivityDependencies {
  db: Database;
  /** The FHIR base URL notifications name the subscription and the focus by (`<PUBLIC_BASE_URL>/fhir/R4`). */
  fhirBase: string;
  readFocus: FocusReader;
}

/**
 * A delivery the activity recorded already, as a delivery workflow carries it: by its id alone, like
 * a claim check, so a notification's content (a full ClaimResponse) never enters a workflow's input
 * or history; the first attempt finds the row and reads the body from it.
 */
function recordedClaim(delivery: NewDelivery): CarriedDelivery {
  const { envelopeBody: _, ...claim } = delivery;
  return { ...claim, envelopeStaged: true };
}

/**
 * The subscription activities: each notification (handshake, heartbeat, event) is recorded once per
 * key with its delivery, then sent by the delivery workflow like every webhook (signed, retried on
 * the schedule, in the attempt log, replayable and cancellable); a retried step answers from the record.
 */
export function createSubscriptionActivities({ db, fhirBase, readFocus }: SubscriptionActivityDependencies) {
  const subscriptionUrl = (id: string) => `${fhirBase}/Subscription/${id}`;

  /**
   * Records the notification and its delivery (once per key), and answers the delivery to start: the
   * body is built from the subscription as it is now and the notification as first recorded.
   */
  async function notice(
    subscription: FhirSubscription,
    noticeKey: string,
    type: 'handshake' | 'heartbeat' | 'event-notification',
    focus?: { reference: string; resource: FhirResource },
  ): Promise<CarriedDelivery> {
    const recorded = await recordNotice(db, subscription.id, noticeKey, type, newId('dlv'));
    const existing = await findDelivery(db, subscription.organizationId, recorded.deliveryId);
    if (existing) return recordedClaim({ ...existing, createdAt: existing.createdAt.toISOString() });
    const timestamp = recorded.createdAt.toISOString();
    const bundle = notificationBundle({
      id: randomUUID(),
      timestamp,
      facts: {
        subscriptionUrl: subscriptionUrl(subscription.id),
        topic: subscription.topic,
        // A handshake is sent while the subscription is `requested`; what follows it, once it is active.
        status: type === 'handshake' ? 'requested' : 'active',
        type,
        eventsSinceStart: type === 'event-notification' ? recorded.eventNumber! : subscription.eventsSinceStart,
        content: subscription.content,
        ...(focus ? { event: { number: recorded.eventNumber!, timestamp, focus: `${fhirBase}/${focus.reference}` } } : {}),
      },
      ...(focus ? { focusResource: focus.resource } : {}),
    });
    const delivery = {
      ...newDelivery({
        organizationId: subscription.organizationId,
        connectionId: null,
        environment: 'sandbox',
        event: SUBSCRIPTION_EVENTS[type],
        occurredAt: timestamp,
        resource: bundle,
        ids: { event: newId('evt'), delivery: recorded.deliveryId },
        subscriptionId: subscription.id,
      }),
      // A notification is the Bundle itself (the backport's rest-hook body), not an envelope around it.
      envelopeBody: JSON.stringify(bundle),
    };
    await recordNewDelivery(db, delivery);
    return recordedClaim(delivery);
  }

  return {
    /**
     * A handshake (while `requested`) or a heartbeat (while `active`) for a subscription's workflow;
     * null when the subscription is in no state to be sent one (deleted, off, in error, or past its end).
     */
    async prepareSubscriptionNotice(input: {
      organizationId: string;
      subscriptionId: string;
      type: 'handshake' | 'heartbeat';
      noticeKey: string;
    }): Promise<CarriedDelivery | null> {
      const subscription = await readSubscription(db, input.organizationId, input.subscriptionId);
      const sendable = input.type === 'handshake' ? 'requested' : 'active';
      if (!subscription || subscription.deletedAt || subscription.status !== sendable) return null;
      if (subscription.endAt && subscription.endAt.getTime() <= Date.now()) return null;
      return notice(subscription, input.noticeKey, input.type);
    },

    /**
     * The handshake's answer settles the subscription: `active` once its delivery succeeded, else
     * `error` with the attempt's reason (the backport: any error in the handshake is an error).
     */
    async recordHandshakeOutcome(input: { subscriptionId: string; organizationId: string; deliveryId: string }): Promise<FhirSubscription['status']> {
      const delivery = await findDelivery(db, input.organizationId, input.deliveryId);
      if (delivery?.status === 'succeeded') return (await recordSubscriptionStatus(db, input.subscriptionId, 'active'))!.status;
      const last = delivery ? (await attemptsOf(db, [delivery.id])).get(delivery.id)!.at(-1) : undefined;
      const reason = `The handshake to the endpoint failed${last?.error ? `: ${last.error}` : last?.responseStatus ? `: it answered ${last.responseStatus}` : ''}. Create the subscription again once the endpoint answers 2xx.`;
      return (await recordSubscriptionStatus(db, input.subscriptionId, 'error', reason))!.status;
    },

    /** A subscription reached its end: it turns `off`. */
    async endSubscription(input: { subscriptionId: string }): Promise<void> {
      await recordSubscriptionStatus(db, input.subscriptionId, 'off');
    },

    /**
     * An event on `topic` about `focus` (`ClaimResponse/<id>`): one notification to each of the
     * organization's active subscriptions on the topic whose filters the focus passes, numbered in
     * the subscription's events. Answers the deliveries to start (startDeliveryChild), by id only.
     * `eventKey` names the event for good (a retried step sends nothing twice); run as an activity
     * without one, the calling workflow and this activity's id name it.
     */
    async notifySubscriptions(input: {
      organizationId: string;
      topic: SubscriptionTopicUrl;
      focus: string;
      eventKey?: string;
    }): Promise<CarriedDelivery[]> {
      const eventKey = input.eventKey ?? activityKey();
      const subscriptions = await activeSubscriptions(db, input.organizationId, input.topic);
      if (subscriptions.length === 0) return [];
      const focus = await readFocus(db, input.organizationId, input.focus);
      if (!focus) throw ApplicationFailure.nonRetryable(`${input.focus} is not a resource of organization ${input.organizationId}`, 'UnknownFocus');
      const deliveries: CarriedDelivery[] = [];
      for (const subscription of subscriptions) {
        if (!filtersMatch(subscription.filters, focus.orgIdentifiers)) continue;
        deliveries.push(await notice(subscription, `event:${eventKey}`, 'event-notification', { reference: input.focus, resource: focus.resource }));
      }
      return deliveries;
    },
  };
}

/** The event key of an activity run without one: its workflow and its id there, the same on every retry. */
function activityKey(): string {
  let info: ReturnType<typeof Context.current>['info'];
  try {
    info = Context.current().info;
  } catch {
    throw new Error('notifySubscriptions needs an eventKey when it runs outside an activity');
  }
  const execution = info.workflowExecution;
  if (!execution) throw new Error('notifySubscriptions needs an eventKey when no workflow calls it');
  return `${execution.workflowId}/${execution.runId}/${info.activityId}`;
}
