/**
 * The vocabulary of FHIR Subscriptions as this server speaks them (R4 Subscriptions Backport 1.1.0,
 * http://hl7.org/fhir/uv/subscriptions-backport/, with the Da Vinci PAS Subscription profile), each
 * list written once. It imports nothing, so the drizzle schema derives its columns from it too.
 */

/** The one topic served: a pended PAS authorization was decided (PAS 2.2.1, Basic-PASSubscriptionTopic). */
export const PAS_TOPIC = 'http://hl7.org/fhir/us/davinci-pas/SubscriptionTopic/PASSubscriptionTopic';
export const SUBSCRIPTION_TOPICS = [PAS_TOPIC] as const;
export type SubscriptionTopicUrl = (typeof SUBSCRIPTION_TOPICS)[number];

/** The topic's one filter (`canFilterBy.filterParameter`), compared with `eq`: the requesting provider organization's identifier. */
export const ORG_IDENTIFIER_FILTER = 'org-identifier';

/** R4 `Subscription.status` (required binding): requested until the handshake, then active, error, or off once deleted or ended. */
export const SUBSCRIPTION_STATUSES = ['requested', 'active', 'error', 'off'] as const;
export type SubscriptionStatusValue = (typeof SUBSCRIPTION_STATUSES)[number];

/** How much a notification carries (backport-payload-content). */
export const PAYLOAD_CONTENTS = ['empty', 'id-only', 'full-resource'] as const;
export type PayloadContent = (typeof PAYLOAD_CONTENTS)[number];

/** The notification types a rest-hook channel is sent (R5 subscription-notification-type); query-status answers $status. */
export const NOTIFICATION_TYPES = ['handshake', 'heartbeat', 'event-notification', 'query-status'] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** The MIME types a notification can be sent as: FHIR JSON (the only format this server writes). */
export const PAYLOAD_MIME_TYPES = ['application/fhir+json', 'application/json'] as const;
export type PayloadMimeType = (typeof PAYLOAD_MIME_TYPES)[number];

const BACKPORT = 'http://hl7.org/fhir/uv/subscriptions-backport';
export const BACKPORT_IG = `${BACKPORT}/ImplementationGuide/hl7.fhir.uv.subscriptions-backport`;
export const BACKPORT_EXTENSIONS = {
  filterCriteria: `${BACKPORT}/StructureDefinition/backport-filter-criteria`,
  payloadContent: `${BACKPORT}/StructureDefinition/backport-payload-content`,
  heartbeatPeriod: `${BACKPORT}/StructureDefinition/backport-heartbeat-period`,
  timeout: `${BACKPORT}/StructureDefinition/backport-timeout`,
  maxCount: `${BACKPORT}/StructureDefinition/backport-max-count`,
  topicCanonical: `${BACKPORT}/StructureDefinition/capabilitystatement-subscriptiontopic-canonical`,
} as const;
export const BACKPORT_PROFILES = {
  subscription: `${BACKPORT}/StructureDefinition/backport-subscription`,
  notification: `${BACKPORT}/StructureDefinition/backport-subscription-notification-r4`,
  status: `${BACKPORT}/StructureDefinition/backport-subscription-status-r4`,
} as const;
export const BACKPORT_SERVER_CAPABILITIES = `${BACKPORT}/CapabilityStatement/backport-subscription-server-r4`;
export const STATUS_OPERATION = `${BACKPORT}/OperationDefinition/backport-subscription-status`;
export const PAS_SUBSCRIPTION_PROFILE = 'http://hl7.org/fhir/us/davinci-pas/StructureDefinition/profile-subscription';

/** The delivery events a subscription's notifications are logged under (one per notification type sent). */
export const SUBSCRIPTION_EVENTS = {
  handshake: 'fhir.subscription.handshake',
  heartbeat: 'fhir.subscription.heartbeat',
  'event-notification': 'fhir.subscription.notified',
} as const satisfies Partial<Record<NotificationType, string>>;
