import { and, asc, desc, eq, gte, inArray, lt, lte } from 'drizzle-orm';
import { type Delivery, type DeliveryAttempt, deliveries, deliveryAttempts } from '../drizzle/schema';
import type { DeliveryStatusValue } from '../drizzle/vocabulary';
import { type Database, storableText } from '../platform/database';

/** A delivery as the trigger creates it; also the delivery workflow's input, so either side can record it. */
export interface NewDelivery {
  id: string;
  organizationId: string;
  connectionId: string | null;
  scenarioId: string | null;
  event: string;
  environment: string;
  envelopeBody: string;
  createdAt: string;
  /** MSH-10 of the HL7 v2 message the delivery carries (HL7 inject only). */
  hl7ControlId?: string | null;
  /** The delivery a `webhook.delivery.exhausted` delivery reports on. */
  sourceDeliveryId?: string | null;
  /** The scenario run and step that emitted it (scenario runs only). */
  runId?: string | null;
  stepId?: string | null;
}

/**
 * Records a new delivery once, whoever comes first: the workflow's first step, which owns it, or the
 * API after starting the workflow (so the 202 and a GET right after it find the row). Starting the
 * workflow before the row exists means a crash in between can never leave a delivery that looks
 * accepted but has no workflow.
 */
export async function recordNewDelivery(db: Database, delivery: NewDelivery): Promise<void> {
  const createdAt = new Date(delivery.createdAt);
  await db
    .insert(deliveries)
    // MSH-10 is the message's own text, which may decode to a NUL (`\X00\`): kept, made storable.
    .values({ ...delivery, hl7ControlId: storableText(delivery.hl7ControlId), status: 'pending', createdAt, updatedAt: createdAt })
    .onConflictDoNothing();
}

/** The organization's delivery with this id, or undefined (another organization's is not found either). */
export async function findDelivery(db: Database, organizationId: string, id: string): Promise<Delivery | undefined> {
  const [delivery] = await db
    .select()
    .from(deliveries)
    .where(and(eq(deliveries.organizationId, organizationId), eq(deliveries.id, id)));
  return delivery;
}

/** Each delivery's attempts in order, keyed by delivery id (an entry for every id asked about). */
export async function attemptsOf(db: Database, deliveryIds: string[]): Promise<Map<string, DeliveryAttempt[]>> {
  const byDelivery = new Map<string, DeliveryAttempt[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return byDelivery;
  const rows = await db
    .select()
    .from(deliveryAttempts)
    .where(inArray(deliveryAttempts.deliveryId, deliveryIds))
    .orderBy(asc(deliveryAttempts.number));
  for (const row of rows) byDelivery.get(row.deliveryId)!.push(row);
  return byDelivery;
}

export interface DeliveryFilter {
  /** Only ids before this one (the page cursor); ids sort by creation time. */
  before?: string | undefined;
  status?: DeliveryStatusValue | undefined;
  event?: string | undefined;
  connectionId?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/** Newest first, at most `limit` rows. */
export async function listDeliveries(db: Database, organizationId: string, filter: DeliveryFilter, limit: number): Promise<Delivery[]> {
  return db
    .select()
    .from(deliveries)
    .where(
      and(
        eq(deliveries.organizationId, organizationId),
        filter.before ? lt(deliveries.id, filter.before) : undefined,
        filter.status ? eq(deliveries.status, filter.status) : undefined,
        filter.event ? eq(deliveries.event, filter.event) : undefined,
        filter.connectionId ? eq(deliveries.connectionId, filter.connectionId) : undefined,
        filter.createdAfter ? gte(deliveries.createdAt, filter.createdAfter) : undefined,
        filter.createdBefore ? lte(deliveries.createdAt, filter.createdBefore) : undefined,
      ),
    )
    .orderBy(desc(deliveries.id))
    .limit(limit);
}

/** A new delivery as its row reads before its first attempt: how a 202 shows it when the row cannot be read. */
export function pendingDelivery(delivery: NewDelivery): Delivery {
  const createdAt = new Date(delivery.createdAt);
  return {
    ...delivery,
    hl7ControlId: delivery.hl7ControlId ?? null,
    sourceDeliveryId: delivery.sourceDeliveryId ?? null,
    runId: delivery.runId ?? null,
    stepId: delivery.stepId ?? null,
    status: 'pending',
    nextAttemptAt: null,
    createdAt,
    updatedAt: createdAt,
  };
}
