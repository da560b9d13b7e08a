import { and, asc, count, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { typeid } from 'typeid-js';
import { type FhirSubscription, fhirSubscriptions, subscriptionNotifications } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import type { SubscriptionRequest } from './request';
import type { NotificationType, SubscriptionStatusValue } from './vocabulary';

/**
 * The owner of `fhir_subscriptions` and `subscription_events`: every read and write of a subscription
 * goes through here, scoped to its organization wherever a caller names one.
 */

/** A Subscription's id: time-sortable like every id here, with a hyphen, since a FHIR id allows no underscore. */
export const newSubscriptionId = () => typeid('sub').toString().replace('_', '-');
const SUBSCRIPTION_ID = /^sub-[0-7][0-9a-hjkmnp-tv-z]{25}$/;
/** Checked before any query: anything else names no subscription. */
export const isSubscriptionId = (value: string) => SUBSCRIPTION_ID.test(value);

/** Subscriptions an organization may keep at once (deleted ones aside): each one holds a workflow and receives every event. */
export const SUBSCRIPTIONS_PER_ORGANIZATION = 50;

const live = isNull(fhirSubscriptions.deletedAt);

/** The columns a Subscription's request fills in (the rest are the subscription's own state). */
export function requestedColumns(request: SubscriptionRequest) {
  return {
    topic: request.topic,
    filters: request.filters,
    endpoint: request.endpoint,
    headers: request.headers,
    payloadMime: request.payloadMime,
    content: request.content,
    heartbeatSeconds: request.heartbeatSeconds,
    reason: request.reason,
    endAt: request.end,
  };
}

export async function createSubscription(db: Database, organizationId: string, request: SubscriptionRequest): Promise<FhirSubscription> {
  const [row] = await db
    .insert(fhirSubscriptions)
    .values({ id: newSubscriptionId(), organizationId, status: 'requested', ...requestedColumns(request) })
    .returning();
  return row!;
}

/** Removes a subscription whose workflow never started, so the client's retry leaves one, not two. */
export async function forgetSubscription(db: Database, id: string): Promise<void> {
  await db.delete(fhirSubscriptions).where(eq(fhirSubscriptions.id, id));
}

export async function countSubscriptions(db: Database, organizationId: string): Promise<number> {
  const [row] = await db
    .select({ subscriptions: count() })
    .from(fhirSubscriptions)
    .where(and(eq(fhirSubscriptions.organizationId, organizationId), live));
  return row?.subscriptions ?? 0;
}

/** The organization's subscription, or undefined: unknown, deleted and another organization's alike. */
export async function findSubscription(db: Database, organizationId: string, id: string): Promise<FhirSubscription | undefined> {
  if (!isSubscriptionId(id)) return undefined;
  const [row] = await db
    .select()
    .from(fhirSubscriptions)
    .where(and(eq(fhirSubscriptions.id, id), eq(fhirSubscriptions.organizationId, organizationId), live));
  return row;
}

/** The organization's subscriptions, oldest first, optionally of some statuses and ids; at most SUBSCRIPTIONS_PER_ORGANIZATION live. */
export async function listSubscriptions(
  db: Database,
  organizationId: string,
  filter: { statuses?: readonly SubscriptionStatusValue[]; ids?: readonly string[] } = {},
): Promise<FhirSubscription[]> {
  const rows = await db
    .select()
    .from(fhirSubscriptions)
    .where(and(eq(fhirSubscriptions.organizationId, organizationId), live))
    .orderBy(asc(fhirSubscriptions.id));
  return rows.filter((row) => (!filter.statuses || filter.statuses.includes(row.status)) && (!filter.ids || filter.ids.includes(row.id)));
}

/** DELETE: the subscription turns `off` and is no longer found; its row stays for the deliveries made for it. */
export async function deleteSubscription(db: Database, organizationId: string, id: string): Promise<FhirSubscription | undefined> {
  if (!isSubscriptionId(id)) return undefined;
  const now = new Date();
  const [row] = await db
    .update(fhirSubscriptions)
    .set({ status: 'off', deletedAt: now, updatedAt: now })
    .where(and(eq(fhirSubscriptions.id, id), eq(fhirSubscriptions.organizationId, organizationId), live))
    .returning();
  return row;
}

/**
 * The organization's subscription by id whoever asks (a workflow of the organization), deleted ones
 * included, so a step that runs after a DELETE sees it `off` rather than nothing.
 */
export async function readSubscription(db: Database, organizationId: string, id: string): Promise<FhirSubscription | undefined> {
  const [row] = await db
    .select()
    .from(fhirSubscriptions)
    .where(and(eq(fhirSubscriptions.id, id), eq(fhirSubscriptions.organizationId, organizationId)));
  return row;
}

/**
 * Moves a live subscription to `status` (the handshake's answer, a notification that failed for
 * good, its end), with the reason when it is `error`. A deleted one stays `off`; an `error` is not
 * undone by a late handshake answer. Answers the row as it now is.
 */
export async function recordSubscriptionStatus(
  db: Database,
  id: string,
  status: Exclude<SubscriptionStatusValue, 'requested'>,
  error: string | null = null,
): Promise<FhirSubscription | undefined> {
  const allowedFrom: Record<typeof status, SubscriptionStatusValue[]> = {
    active: ['requested'],
    error: ['requested', 'active'],
    off: ['requested', 'active', 'error'],
  };
  await db
    .update(fhirSubscriptions)
    .set({ status, error: status === 'error' ? error : null, updatedAt: new Date() })
    .where(and(eq(fhirSubscriptions.id, id), live, or(...allowedFrom[status].map((from) => eq(fhirSubscriptions.status, from)))));
  const [row] = await db.select().from(fhirSubscriptions).where(eq(fhirSubscriptions.id, id));
  return row;
}

/** The organization's subscriptions an event on `topic` goes to now: active, not deleted, not past their end. */
export async function activeSubscriptions(db: Database, organizationId: string, topic: string): Promise<FhirSubscription[]> {
  return db
    .select()
    .from(fhirSubscriptions)
    .where(
      and(
        eq(fhirSubscriptions.organizationId, organizationId),
        eq(fhirSubscriptions.topic, topic),
        eq(fhirSubscriptions.status, 'active'),
        live,
        or(isNull(fhirSubscriptions.endAt), gt(fhirSubscriptions.endAt, new Date())),
      ),
    )
    .orderBy(asc(fhirSubscriptions.id));
}

export interface SubscriptionNotice {
  type: NotificationType;
  /** An event's number among the subscription's events; null for a handshake or heartbeat. */
  eventNumber: number | null;
  deliveryId: string;
  /** When it was first recorded: the event's timestamp and the notification's. */
  createdAt: Date;
}

/**
 * The notification `noticeKey` of a subscription, recorded once with the delivery id given; an
 * event also takes the next events-since-start number, in the same transaction. Asked again (a
 * retried step), it answers as first recorded.
 */
export async function recordNotice(
  db: Database,
  subscriptionId: string,
  noticeKey: string,
  type: NotificationType,
  deliveryId: string,
): Promise<SubscriptionNotice> {
  const keyed = and(eq(subscriptionNotifications.subscriptionId, subscriptionId), eq(subscriptionNotifications.noticeKey, noticeKey));
  const recorded = () =>
    db
      .select({
        type: subscriptionNotifications.type,
        eventNumber: subscriptionNotifications.eventNumber,
        deliveryId: subscriptionNotifications.deliveryId,
        createdAt: subscriptionNotifications.createdAt,
      })
      .from(subscriptionNotifications)
      .where(keyed);
  const [existing] = await recorded();
  if (existing) return existing;
  await db.transaction(async (tx) => {
    // The key first: a concurrent execution waits on it, then finds it taken and counts nothing.
    const [claimed] = await tx
      .insert(subscriptionNotifications)
      .values({ subscriptionId, noticeKey, type, deliveryId })
      .onConflictDoNothing()
      .returning({ noticeKey: subscriptionNotifications.noticeKey });
    if (!claimed || type !== 'event-notification') return;
    const [counted] = await tx
      .update(fhirSubscriptions)
      .set({ eventsSinceStart: sql`${fhirSubscriptions.eventsSinceStart} + 1` })
      .where(eq(fhirSubscriptions.id, subscriptionId))
      .returning({ eventNumber: fhirSubscriptions.eventsSinceStart });
    await tx.update(subscriptionNotifications).set({ eventNumber: counted!.eventNumber }).where(keyed);
  });
  const [notice] = await recorded();
  return notice!;
}
