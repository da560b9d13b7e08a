import { and, asc, desc, eq, getTableColumns, gte, inArray, lt, lte, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import { type Delivery, type DeliveryAttempt, deliveries, deliveryAttempts, stagedEnvelopes } from '../drizzle/schema';
import { type Database, storableText } from '../platform/database';
import { type CarriedDelivery, isStaged, needsClaimCheck } from './claim-check';
import type { DeliveryStatusValue } from './vocabulary';

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
  /** The FHIR Subscription it notifies (subscription notifications only): its endpoint is the target. */
  subscriptionId?: string | null;
  /** The scenario run and step that emitted it (scenario runs only). */
  runId?: string | null;
  stepId?: string | null;
}

/**
 * Records a new delivery once, whoever comes first: the workflow's first step, which owns it, or the
 * API after starting the workflow (so the 202 and a GET right after it find the row). Starting the
 * workflow before the row exists means a crash in between can never leave a delivery that looks
 * accepted but has no workflow. A claim check's staged envelope moves into the row within Postgres,
 * whether the caller holds the claim check or the envelope itself: at rest it is stored once, and
 * it crosses the network once, when staged.
 */
export async function recordNewDelivery(db: Database, delivery: CarriedDelivery): Promise<void> {
  if (isStaged(delivery) || needsClaimCheck(delivery.envelopeBody)) {
    if (await moveStagedEnvelope(db, delivery)) return;
    if (isStaged(delivery)) throw new Error(`Delivery ${delivery.id} was never recorded and its staged envelope is gone`);
  }
  const createdAt = new Date(delivery.createdAt);
  await db
    .insert(deliveries)
    // MSH-10 is the message's own text, which may decode to a NUL (`\X00\`): kept, made storable.
    .values({ ...delivery, hl7ControlId: storableText(delivery.hl7ControlId), status: 'pending', createdAt, updatedAt: createdAt })
    .onConflictDoNothing();
}

/**
 * Inserts the delivery's row with its staged envelope, in one statement that also drops the staged
 * copy (whether or not the row was there already). True when the row exists now.
 */
async function moveStagedEnvelope(db: Database, delivery: CarriedDelivery): Promise<boolean> {
  const createdAt = new Date(delivery.createdAt);
  const fields: [PgColumn, unknown][] = [
    [deliveries.id, delivery.id],
    [deliveries.organizationId, delivery.organizationId],
    [deliveries.connectionId, delivery.connectionId],
    [deliveries.scenarioId, delivery.scenarioId],
    [deliveries.event, delivery.event],
    [deliveries.environment, delivery.environment],
    [deliveries.status, 'pending'],
    [deliveries.hl7ControlId, storableText(delivery.hl7ControlId) ?? null],
    [deliveries.sourceDeliveryId, delivery.sourceDeliveryId ?? null],
    [deliveries.subscriptionId, delivery.subscriptionId ?? null],
    [deliveries.runId, delivery.runId ?? null],
    [deliveries.stepId, delivery.stepId ?? null],
    [deliveries.createdAt, createdAt.toISOString()],
    [deliveries.updatedAt, createdAt.toISOString()],
  ];
  const columns = sql.join(
    fields.map(([column]) => sql.identifier(column.name)),
    sql`, `,
  );
  // Parameters in a select list have no type of their own: each is cast to its column's.
  const values = sql.join(
    fields.map(([column, value]) => sql`cast(${value} as ${sql.raw(column.getSQLType())})`),
    sql`, `,
  );
  await db.execute(sql`
    with staged as (delete from ${stagedEnvelopes} where ${stagedEnvelopes.deliveryId} = ${delivery.id} returning ${sql.identifier(stagedEnvelopes.envelopeBody.name)} as body)
    insert into ${deliveries} (${columns}, ${sql.identifier(deliveries.envelopeBody.name)})
    select ${values}, staged.body from staged
    on conflict do nothing`);
  const [recorded] = await db.select({ id: deliveries.id }).from(deliveries).where(eq(deliveries.id, delivery.id));
  return recorded !== undefined;
}

/**
 * The organization's delivery with this id, or undefined (another organization's is not found either).
 * A caller that holds the envelope already (it just planned the delivery) passes it, and the
 * envelope, several MiB for a large HL7 message, is not read back.
 */
export async function findDelivery(db: Database, organizationId: string, id: string, knownEnvelopeBody?: string): Promise<Delivery | undefined> {
  const owned = and(eq(deliveries.organizationId, organizationId), eq(deliveries.id, id));
  if (knownEnvelopeBody === undefined) {
    const [delivery] = await db.select().from(deliveries).where(owned);
    return delivery;
  }
  const { envelopeBody: _, ...columns } = getTableColumns(deliveries);
  const [delivery] = await db.select(columns).from(deliveries).where(owned);
  return delivery && { ...delivery, envelopeBody: knownEnvelopeBody };
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

/**
 * The most envelope bytes one page of deliveries carries. A large HL7 v2 message's envelope is
 * several MiB, so 200 of them would be most of a GiB read, held and written at once (more than a
 * V8 string can hold); a page of them ends early instead, with a cursor to the rest.
 */
export const PAGE_ENVELOPE_BYTES = 16 * 1024 * 1024;

/**
 * Newest first: at most `limit` deliveries, fewer once their envelopes pass PAGE_ENVELOPE_BYTES
 * (always at least one); `more` when deliveries remain after them. Sizes are read first (Postgres
 * knows a stored text's length without reading it), then only the chosen envelopes.
 */
export async function listDeliveries(
  db: Database,
  organizationId: string,
  filter: DeliveryFilter,
  limit: number,
): Promise<{ deliveries: Delivery[]; more: boolean }> {
  const { envelopeBody: _, ...columns } = getTableColumns(deliveries);
  const candidates = await db
    .select({ ...columns, envelopeBytes: sql<number>`octet_length(${deliveries.envelopeBody})`.mapWith(Number) })
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
    .limit(limit + 1);
  let pageBytes = 0;
  let count = 0;
  while (count < Math.min(limit, candidates.length)) {
    pageBytes += candidates[count]!.envelopeBytes;
    if (count > 0 && pageBytes > PAGE_ENVELOPE_BYTES) break;
    count += 1;
  }
  const chosen = candidates.slice(0, count);
  const envelopes =
    count === 0
      ? []
      : await db
          .select({ id: deliveries.id, envelopeBody: deliveries.envelopeBody })
          .from(deliveries)
          .where(
            inArray(
              deliveries.id,
              chosen.map((row) => row.id),
            ),
          );
  const envelopeOf = new Map(envelopes.map((row) => [row.id, row.envelopeBody]));
  return {
    deliveries: chosen.map(({ envelopeBytes: _bytes, ...row }) => ({ ...row, envelopeBody: envelopeOf.get(row.id)! })),
    more: candidates.length > count,
  };
}

/** A new delivery as its row reads before its first attempt: how a 202 shows it when the row cannot be read. */
export function pendingDelivery(delivery: NewDelivery): Delivery {
  const createdAt = new Date(delivery.createdAt);
  return {
    ...delivery,
    hl7ControlId: delivery.hl7ControlId ?? null,
    sourceDeliveryId: delivery.sourceDeliveryId ?? null,
    subscriptionId: delivery.subscriptionId ?? null,
    runId: delivery.runId ?? null,
    stepId: delivery.stepId ?? null,
    status: 'pending',
    nextAttemptAt: null,
    createdAt,
    updatedAt: createdAt,
  };
}
