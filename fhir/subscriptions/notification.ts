import type { Bundle, BundleEntry, FhirResource, Parameters, ParametersParameter } from 'fhir/r4';
import { BACKPORT_PROFILES, type NotificationType, type PayloadContent, type SubscriptionStatusValue } from './vocabulary';

/**
 * The backport's R4 notification shapes (R4 Subscriptions Backport 1.1.0): the SubscriptionStatus as
 * a `Parameters` (backport-subscription-status-r4) and the `history` Bundle a rest-hook channel is
 * POSTed (backport-subscription-notification-r4), led by that status. Pure: ids and times come in.
 */

/** What a status says about one subscription at one moment. */
export interface SubscriptionStatusFacts {
  /** Absolute URL of the Subscription (`<FHIR base>/Subscription/<id>`). */
  subscriptionUrl: string;
  topic: string;
  status: SubscriptionStatusValue;
  type: NotificationType;
  /** Events since the subscription started, this one included; handshakes and heartbeats do not count. */
  eventsSinceStart: number;
  content: PayloadContent;
  /** The event this notification carries (event-notification only). */
  event?: { number: number; timestamp: string; focus: string };
  /** Why the subscription is in error, when it is. */
  error?: string | null;
}

/** The SubscriptionStatus (R4: Parameters). An `empty` payload names no resource: no topic, no focus. */
export function subscriptionStatus(id: string, facts: SubscriptionStatusFacts): Parameters {
  const parameter: ParametersParameter[] = [{ name: 'subscription', valueReference: { reference: facts.subscriptionUrl } }];
  if (facts.content !== 'empty') parameter.push({ name: 'topic', valueCanonical: facts.topic });
  parameter.push(
    { name: 'status', valueCode: facts.status },
    { name: 'type', valueCode: facts.type },
    { name: 'events-since-subscription-start', valueString: String(facts.eventsSinceStart) },
  );
  if (facts.event) {
    parameter.push({
      name: 'notification-event',
      part: [
        { name: 'event-number', valueString: String(facts.event.number) },
        { name: 'timestamp', valueInstant: facts.event.timestamp },
        ...(facts.content === 'empty' ? [] : [{ name: 'focus', valueReference: { reference: facts.event.focus } }]),
      ],
    });
  }
  if (facts.status === 'error' && facts.error) parameter.push({ name: 'error', valueCodeableConcept: { text: facts.error } });
  return { resourceType: 'Parameters', id, meta: { profile: [BACKPORT_PROFILES.status] }, parameter };
}

/**
 * A notification: the status first (its request a GET of the subscription's `$status`, as the
 * backport's examples fill it to satisfy bdl-3 and bdl-4), then, for an event, the focus: its URL
 * alone (`id-only`) or the resource (`full-resource`), as an update of it. `empty` carries nothing more.
 */
export function notificationBundle(input: { id: string; timestamp: string; facts: SubscriptionStatusFacts; focusResource?: FhirResource }): Bundle {
  const { id, timestamp, facts } = input;
  const entry: BundleEntry[] = [
    {
      fullUrl: `urn:uuid:${id}`,
      resource: subscriptionStatus(id, facts),
      request: { method: 'GET', url: `${facts.subscriptionUrl}/$status` },
      response: { status: '200' },
    },
  ];
  if (facts.event && facts.content !== 'empty') {
    const focus = facts.event.focus;
    const relative = focus.split('/').slice(-2).join('/');
    const resource = facts.content === 'full-resource' ? input.focusResource : undefined;
    if (facts.content === 'full-resource' && !resource) throw new Error(`A full-resource notification needs its focus, ${relative}`);
    entry.push({ fullUrl: focus, ...(resource ? { resource } : {}), request: { method: 'PUT', url: relative }, response: { status: '200' } });
  }
  return { resourceType: 'Bundle', id, meta: { profile: [BACKPORT_PROFILES.notification] }, type: 'history', timestamp, entry };
}

/** What `$status` answers: a searchset of SubscriptionStatus resources (type `query-status`), one per subscription. */
export function statusSearchset(input: { id: string; timestamp: string; self: string; statuses: Parameters[] }): Bundle {
  return {
    resourceType: 'Bundle',
    id: input.id,
    meta: { lastUpdated: input.timestamp },
    type: 'searchset',
    total: input.statuses.length,
    link: [{ relation: 'self', url: input.self }],
    entry: input.statuses.map((status) => ({ fullUrl: `urn:uuid:${status.id}`, resource: status, search: { mode: 'match' } })),
  };
}
