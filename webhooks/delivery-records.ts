import { and, asc, desc, eq, getTableColumns, gte, inArray, lt, lte, ne, notExists, or, sql } from 'drizzle-orm';
import {
  connections,
  type Delivery,
  type DeliveryAttempt,
  deliveries,
  deliveryAttempts,
  fhirSubscriptions,
  organizations,
  reliabilityProfiles,
  stagedEnvelopes,
} from '../drizzle/schema';
import { type Database, executeRows, isDatabaseUnavailable, retryWhileUnavailable, storableText } from '../platform/database';
import { newId } from '../platform/ids';
import type { AttemptResult } from './attempt-result';
import { DEFAULT_RELIABILITY_PROFILE, reliabilityProfileSchema } from './chaos';
import { type CarriedDelivery, isStaged, needsClaimCheck, type StagedDelivery } from './claim-check';
import type { NewDelivery } from './new-delivery';
import type { WebhookTarget } from './receiver-exchange';
import { type AttemptTrigger, type ChaosMode, type DeliveryStatusValue, TERMINAL_DELIVERY_STATUSES } from './vocabulary';

/**
 * The one module that writes a delivery and its attempts (the `deliveries`, `delivery_attempts` and
 * `staged_envelopes` tables): the row is inserted here (recordNewDelivery), each attempt's intent and
 * outcome are recorded here, and `status` is written only here (`pending` on insert, `succeeded` with
 * a 2xx's outcome, every other transition as the delivery workflow decides it, recordDeliveryState).
 * The HTTP exchange is webhooks/receiver-exchange.ts; activities/deliveries.ts runs the two in order.
 *
 * How to create a delivery (every emitter: mock events, HL7, scenario steps, aggregator answers,
 * exhausted reports, FHIR Subscription notifications):
 * 1. Build it with `newDelivery(request)` (webhooks/new-delivery.ts): the envelope, written once, and
 *    the record that carries it.
 * 2. Start its delivery workflow, which records the row before its first attempt and owns it from
 *    then on: from a request or listener, `startDelivery` (api/webhooks/start-delivery.ts, which
 *    checks a large envelope in first); from inside a workflow, `startDeliveryChild`
 *    (workflows/delivery/workflow.ts) with a delivery an activity built.
 * 3. A caller outside a workflow may then call `recordNewDelivery` itself, so that its answer and a
 *    GET right after it find the row; it inserts once, whoever comes first, and a failure there
 *    loses nothing (the workflow records it).
 * Adding a field to a delivery: the column in drizzle/schema.ts (and its migration), the field in
 * NewDelivery and DeliveryRequest (webhooks/new-delivery.ts), its default in pendingDelivery below
 * (the compiler asks for it), and the presenter (api/webhooks/delivery-presenter.ts) if partners see
 * it; both inserts write every column the record carries.
 */

/**
 * Records a new delivery once, whoever comes first: the workflow's first attempt, which owns it, or the
 * API after starting the workflow (so the 202 and a GET right after it find the row). Starting the
 * workflow before the row exists means a crash in between can never leave a delivery that looks
 * accepted but has no workflow. One statement inserts the row and drops the staged copy of its
 * envelope (webhooks/claim-check.ts), which a claim check's row and a large envelope's are made from
 * within Postgres: at rest the envelope is stored once, and a large one crosses the network once, when
 * staged. A second statement only when the first found nothing to insert from.
 */
export async function recordNewDelivery(db: Database, delivery: CarriedDelivery): Promise<void> {
  const inline = isStaged(delivery) || needsClaimCheck(delivery.envelopeBody) ? null : delivery.envelopeBody;
  // Inline, a row there already (or another delivery's with the same unique source) is all the insert can find.
  if ((await insertNewRow(db, delivery, inline)) || inline !== null) return;
  // The statement sees rows committed before it began: the other recorder's may have committed since.
  const [recorded] = await db.select({ id: deliveries.id }).from(deliveries).where(eq(deliveries.id, delivery.id));
  if (recorded) return;
  if (isStaged(delivery)) throw new Error(`Delivery ${delivery.id} was never recorded and its staged envelope is gone`);
  await insertNewRow(db, delivery, delivery.envelopeBody);
}

/** A new delivery's row but its envelope, as both ways of inserting it write it. */
function newRow(delivery: CarriedDelivery): Omit<Delivery, 'envelopeBody'> {
  const { envelopeBody: _, ...row } = pendingDelivery({ ...delivery, envelopeBody: '' });
  // MSH-10 is the message's own text, which may decode to a NUL (`\X00\`): kept, made storable.
  return { ...row, hl7ControlId: storableText(row.hl7ControlId) };
}

/** The columns a new row is inserted with, but its envelope: built once, not at every delivery. */
const ROW_COLUMNS = Object.entries(getTableColumns(deliveries)).filter(([key]) => key !== 'envelopeBody');
const ROW_COLUMN_NAMES = sql.join(
  ROW_COLUMNS.map(([, column]) => sql.identifier(column.name)),
  sql`, `,
);

/**
 * Inserts the delivery's row with its staged envelope, else with `inline` (null: the staged one only),
 * and drops the staged copy whether or not the row was there already. True when the row was inserted
 * or was there when the statement began.
 */
async function insertNewRow(db: Database, delivery: CarriedDelivery, inline: string | null): Promise<boolean> {
  const row: Record<string, unknown> = newRow(delivery);
  // Parameters in a select list have no type of their own: each is cast to its column's.
  const values = sql.join(
    ROW_COLUMNS.map(([key, column]) => {
      const value = row[key] ?? null;
      return sql`cast(${value instanceof Date ? value.toISOString() : value} as ${sql.raw(column.getSQLType())})`;
    }),
    sql`, `,
  );
  const [answer] = await executeRows<{ recorded: boolean }>(
    db,
    sql`
    with staged as (delete from ${stagedEnvelopes} where ${stagedEnvelopes.deliveryId} = ${delivery.id} returning ${sql.identifier(stagedEnvelopes.envelopeBody.name)} as body),
    inserted as (
      insert into ${deliveries} (${ROW_COLUMN_NAMES}, ${sql.identifier(deliveries.envelopeBody.name)})
      select ${values}, envelope.body from (select coalesce((select body from staged), cast(${inline} as text)) as body) envelope
      where envelope.body is not null
      on conflict do nothing
      returning 1
    )
    select exists (select 1 from inserted) or exists (select 1 from ${deliveries} where ${deliveries.id} = ${delivery.id}) as recorded`,
  );
  return answer?.recorded === true;
}

/**
 * The delivery as its workflow carries it, whatever its size: its envelope stored under its id first
 * (again on a retried request: the same id, kept once) and the claim check returned
 * (webhooks/claim-check.ts: what a partner sent never rides in a workflow input).
 */
export async function checkIn(db: Database, delivery: NewDelivery): Promise<StagedDelivery> {
  const { envelopeBody, ...claim } = delivery;
  // Not once the delivery is recorded (a retried request after the first one's workflow took it): nothing would take it again.
  await db.execute(sql`
    insert into ${stagedEnvelopes} (delivery_id, organization_id, envelope_body)
    select ${delivery.id}, ${delivery.organizationId}, ${envelopeBody}
    where not exists (select 1 from ${deliveries} where ${deliveries.id} = ${delivery.id})
    on conflict do nothing`);
  return { ...claim, envelopeStaged: true };
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

/**
 * The longest wait a receiver's Retry-After can ask for. Longer ones (`Retry-After: 99999999999`) are
 * shortened to it: the value must fit its column (32-bit milliseconds, about 24.8 days) and a delivery
 * should not sleep for years.
 */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;
/** How long an attempt waits for the database to record it; within the attempt activity's 2 minutes. */
const RECORD_ATTEMPT_WITHIN_MS = 60_000;

/** What an attempt's record gets once the receiver has answered (or its intent is resolved). */
export type StorableOutcome = Pick<DeliveryAttempt, 'outcome' | 'durationMs' | 'responseStatus' | 'responseBody' | 'retryAfterMs' | 'error'>;

/**
 * What an attempt needs, read afresh at each attempt in one query: the attempt's record if it was
 * made already, the envelope, the target (the connection's URL and secret when set, else the
 * organization's, each resolved on its own) and the chaos profile. The first attempt of a new
 * delivery passes it (`newDelivery`): the API has usually recorded it by then, right after starting
 * the workflow, and when it has not, it is recorded here (recordNewDelivery) and read again.
 */
export async function attemptContext(db: Database, deliveryId: string, attemptNumber: number, newDelivery?: CarriedDelivery) {
  let [row] = await readAttemptContext(db, deliveryId, attemptNumber);
  if (!row && newDelivery) {
    await recordNewDelivery(db, newDelivery);
    [row] = await readAttemptContext(db, deliveryId, attemptNumber);
  }
  if (!row) throw new Error(`Delivery ${deliveryId} does not exist`);
  const subscription = row.subscription?.id ? row.subscription : null;
  // The attempt is refused (and the delivery ends) rather than sent anywhere else.
  if (subscription?.deletedAt) throw new Error(`Subscription/${subscription.id} was deleted, so its notifications are no longer sent`);
  // A subscription's notification goes to its endpoint with its headers, signed with the organization's secret like every webhook.
  const target: WebhookTarget = subscription
    ? {
        url: subscription.endpoint,
        secret: row.organizationSecret,
        source: 'subscription',
        contentType: subscription.payloadMime,
        channelHeaders: subscription.headers,
      }
    : {
        url: row.connectionUrl ?? row.organizationUrl,
        secret: row.connectionSecret ?? row.organizationSecret,
        source: row.connectionUrl ? 'connection' : 'organization',
      };
  const reliabilityProfile = row.reliabilityProfile ? reliabilityProfileSchema.parse(row.reliabilityProfile) : DEFAULT_RELIABILITY_PROFILE;
  const recorded = row.recorded?.id ? row.recorded : null;
  return { recorded, envelopeBody: row.envelopeBody, target, reliabilityProfile, organizationId: row.organizationId };
}

/** attemptContext's one query. */
function readAttemptContext(db: Database, deliveryId: string, attemptNumber: number) {
  return attemptStatements(db).context.execute({ deliveryId, attemptNumber });
}

/**
 * An attempt's intent (`sending`), recorded before anything is sent, so a worker dying after the POST
 * still leaves the send in the log. Its id; null when this attempt's record exists already (an
 * execution Temporal gave up on wrote it meanwhile: never send twice).
 */
export async function recordAttemptIntent(
  db: Database,
  intent: { deliveryId: string; attemptNumber: number; trigger: AttemptTrigger; startedAt: Date; target: WebhookTarget; chaos: ChaosMode | null },
): Promise<string | null> {
  const [recorded] = await attemptStatements(db).intent.execute({
    id: newId('att'),
    deliveryId: intent.deliveryId,
    number: intent.attemptNumber,
    trigger: intent.trigger,
    startedAt: intent.startedAt,
    targetUrl: intent.target.url,
    targetSource: intent.target.url ? intent.target.source : null,
    chaos: intent.chaos,
  });
  return recorded?.id ?? null;
}

/**
 * Stores an attempt's outcome over its intent (only while it is still `sending`: a retried activity
 * may have resolved it as `unknown` meanwhile) and answers what the log holds. A 2xx also marks the
 * delivery `succeeded` in the same statement (whatever the trigger, a 2xx ends a delivery as
 * succeeded, workflows/delivery/policy.ts), unless a cancel came first, and says so
 * (`recordedSucceeded`): the workflow then writes no state of its own after a success, one statement
 * and one local activity (a billed Temporal action) fewer per delivery. A value
 * the database refuses for good (not an outage) is stored without the receiver's text, saying why,
 * and ends the delivery: the receiver is never sent the same attempt again because its answer could
 * not be kept.
 */
export async function recordAttemptOutcome(db: Database, attemptId: string, outcome: StorableOutcome): Promise<AttemptResult> {
  const write = (values: StorableOutcome) =>
    retryWhileUnavailable(async () => {
      const [stored] = await attemptStatements(db).outcome.execute({ ...values, attemptId, now: new Date().toISOString() });
      return stored;
    }, RECORD_ATTEMPT_WITHIN_MS);
  let final = false;
  let stored: Awaited<ReturnType<typeof write>>;
  try {
    stored = await write(storable(outcome));
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw error;
    final = true;
    stored = await write({
      ...storable(outcome),
      responseBody: null,
      error: `${outcome.error ?? 'The receiver answered.'} The answer could not be recorded (${databaseReason(error)}), so the delivery is stopped.`,
    });
  }
  if (stored) return { ...asResult(stored), ...(final ? { final } : {}), ...(stored.recordedSucceeded ? { recordedSucceeded: true } : {}) };
  // Not written: another execution resolved the intent meanwhile, and the log holds its outcome.
  const [resolved] = await db
    .select({ outcome: deliveryAttempts.outcome, responseStatus: deliveryAttempts.responseStatus, retryAfterMs: deliveryAttempts.retryAfterMs })
    .from(deliveryAttempts)
    .where(eq(deliveryAttempts.id, attemptId));
  return { ...asResult(resolved!), ...(final ? { final } : {}) };
}

/**
 * An intent left `sending` by an activity that stopped (its worker died) before recording the
 * answer: whether the receiver got it is unknown. Resolved once; the attempt counts as failed.
 */
export async function resolveUnknownAttempt(db: Database, attemptId: string): Promise<AttemptResult> {
  return recordAttemptOutcome(db, attemptId, {
    outcome: 'unknown',
    durationMs: null,
    responseStatus: null,
    responseBody: null,
    retryAfterMs: null,
    error: 'The worker making this attempt stopped before recording its answer: the receiver may or may not have received it.',
  });
}

/** An attempt that was never sent, recorded as failed with the reason (once: a retried activity adds nothing). */
export async function recordRefusedAttempt(
  db: Database,
  attempt: { deliveryId: string; attemptNumber: number; trigger: AttemptTrigger },
  reason: string,
): Promise<void> {
  await db
    .insert(deliveryAttempts)
    .values({
      id: newId('att'),
      deliveryId: attempt.deliveryId,
      number: attempt.attemptNumber,
      trigger: attempt.trigger,
      startedAt: new Date(),
      durationMs: 0,
      outcome: 'failed',
      error: reason,
    })
    .onConflictDoNothing();
}

/** The state the delivery workflow decided (every transition but `pending` on insert and `succeeded` with a 2xx's outcome). */
export async function recordDeliveryState(
  db: Database,
  state: { deliveryId: string; status: DeliveryStatusValue; nextAttemptAt: string | null },
): Promise<void> {
  await db
    .update(deliveries)
    .set({ status: state.status, nextAttemptAt: state.nextAttemptAt ? new Date(state.nextAttemptAt) : null, updatedAt: new Date() })
    .where(eq(deliveries.id, state.deliveryId));
}

/** A delivery by id alone, for the worker (its workflow holds the id: no organization to scope by). */
export async function deliveryById(db: Database, id: string): Promise<Delivery | undefined> {
  const [delivery] = await db.select().from(deliveries).where(eq(deliveries.id, id));
  return delivery;
}

/** The `webhook.delivery.exhausted` delivery recorded for a failed delivery, as its workflow takes it. */
export async function findExhaustedReport(db: Database, sourceDeliveryId: string): Promise<NewDelivery | undefined> {
  const [report] = await db.select().from(deliveries).where(eq(deliveries.sourceDeliveryId, sourceDeliveryId));
  return report && asNewDelivery(report);
}

/**
 * One retention batch (the retention Schedule, activities/retention.ts): finished deliveries older than
 * the cutoff with no work in flight, not one waiting on a retry, nor one replayed (or changed) since the
 * cutoff unless it arrived before `maximumCutoff` (a replay does not keep an envelope for ever,
 * docs/api/privacy.md), nor one whose attempt is still being sent. The rows are locked as they are picked, and a row
 * a replay is changing right now is skipped, so none is deleted under it. A claim check's staged
 * envelope that old is a start that never happened (webhooks/claim-check.ts): it goes too.
 */
export async function purgeFinishedDeliveries(
  db: Database,
  cutoff: Date,
  batchSize: number,
  maximumCutoff: Date = cutoff,
): Promise<{ rows: number; attempts: number }> {
  return db.transaction(async (tx) => {
    const orphans = tx
      .select({ deliveryId: stagedEnvelopes.deliveryId })
      .from(stagedEnvelopes)
      .where(lt(stagedEnvelopes.createdAt, cutoff))
      .limit(batchSize);
    await tx.delete(stagedEnvelopes).where(inArray(stagedEnvelopes.deliveryId, orphans));
    const sending = tx
      .select({ id: deliveryAttempts.id })
      .from(deliveryAttempts)
      .where(and(eq(deliveryAttempts.deliveryId, deliveries.id), eq(deliveryAttempts.outcome, 'sending')));
    const batch = await tx
      .select({ id: deliveries.id })
      .from(deliveries)
      .where(
        and(
          lt(deliveries.createdAt, cutoff),
          or(lt(deliveries.updatedAt, cutoff), lt(deliveries.createdAt, maximumCutoff)),
          inArray(deliveries.status, [...TERMINAL_DELIVERY_STATUSES]),
          notExists(sending),
        ),
      )
      .orderBy(asc(deliveries.createdAt))
      .limit(batchSize)
      .for('update', { skipLocked: true });
    if (batch.length === 0) return { rows: 0, attempts: 0 };
    const ids = batch.map((row) => row.id);
    const attempts = await tx.delete(deliveryAttempts).where(inArray(deliveryAttempts.deliveryId, ids)).returning({ id: deliveryAttempts.id });
    const gone = await tx.delete(deliveries).where(inArray(deliveries.id, ids)).returning({ id: deliveries.id });
    return { rows: gone.length, attempts: attempts.length };
  });
}

/**
 * The statements every attempt runs, prepared once per database handle: drizzle building them anew
 * at each attempt cost more CPU than sending them (docs/benchmarks.md, Webhook deliveries).
 */
const preparedAttemptStatements = new WeakMap<Database, ReturnType<typeof prepareAttemptStatements>>();

function attemptStatements(db: Database) {
  let statements = preparedAttemptStatements.get(db);
  if (!statements) {
    statements = prepareAttemptStatements(db);
    preparedAttemptStatements.set(db, statements);
  }
  return statements;
}

function prepareAttemptStatements(db: Database) {
  const context = db
    .select({
      recorded: {
        id: deliveryAttempts.id,
        outcome: deliveryAttempts.outcome,
        responseStatus: deliveryAttempts.responseStatus,
        retryAfterMs: deliveryAttempts.retryAfterMs,
      },
      envelopeBody: deliveries.envelopeBody,
      organizationId: deliveries.organizationId,
      organizationUrl: organizations.webhookUrl,
      organizationSecret: organizations.webhookSecret,
      connectionUrl: connections.webhookUrl,
      connectionSecret: connections.webhookSecret,
      reliabilityProfile: reliabilityProfiles.profile,
      subscription: {
        id: fhirSubscriptions.id,
        endpoint: fhirSubscriptions.endpoint,
        headers: fhirSubscriptions.headers,
        payloadMime: fhirSubscriptions.payloadMime,
        deletedAt: fhirSubscriptions.deletedAt,
      },
    })
    .from(deliveries)
    .innerJoin(organizations, eq(organizations.id, deliveries.organizationId))
    .leftJoin(deliveryAttempts, and(eq(deliveryAttempts.deliveryId, deliveries.id), eq(deliveryAttempts.number, sql.placeholder('attemptNumber'))))
    .leftJoin(connections, and(eq(connections.id, deliveries.connectionId), eq(connections.organizationId, deliveries.organizationId)))
    .leftJoin(reliabilityProfiles, eq(reliabilityProfiles.organizationId, deliveries.organizationId))
    .leftJoin(
      fhirSubscriptions,
      and(eq(fhirSubscriptions.id, deliveries.subscriptionId), eq(fhirSubscriptions.organizationId, deliveries.organizationId)),
    )
    .where(eq(deliveries.id, sql.placeholder('deliveryId')))
    .prepare('delivery_attempt_context');

  const intent = db
    .insert(deliveryAttempts)
    .values({
      id: sql.placeholder('id'),
      deliveryId: sql.placeholder('deliveryId'),
      number: sql.placeholder('number'),
      trigger: sql.placeholder('trigger'),
      startedAt: sql.placeholder('startedAt'),
      durationMs: null,
      targetUrl: sql.placeholder('targetUrl'),
      targetSource: sql.placeholder('targetSource'),
      outcome: 'sending',
      chaos: sql.placeholder('chaos'),
    })
    .onConflictDoNothing()
    .returning({ id: deliveryAttempts.id })
    .prepare('delivery_attempt_intent');

  const attempt = db.$with('attempt').as(
    db
      .update(deliveryAttempts)
      .set({
        outcome: sql`${sql.placeholder('outcome')}`,
        durationMs: sql`${sql.placeholder('durationMs')}`,
        responseStatus: sql`${sql.placeholder('responseStatus')}`,
        responseBody: sql`${sql.placeholder('responseBody')}`,
        retryAfterMs: sql`${sql.placeholder('retryAfterMs')}`,
        error: sql`${sql.placeholder('error')}`,
      } satisfies Record<keyof StorableOutcome, unknown>)
      .where(and(eq(deliveryAttempts.id, sql.placeholder('attemptId')), eq(deliveryAttempts.outcome, 'sending')))
      .returning({
        deliveryId: deliveryAttempts.deliveryId,
        outcome: deliveryAttempts.outcome,
        responseStatus: deliveryAttempts.responseStatus,
        retryAfterMs: deliveryAttempts.retryAfterMs,
      }),
  );
  const succeeded = db.$with('succeeded').as(
    db
      .update(deliveries)
      .set({ status: 'succeeded', nextAttemptAt: null, updatedAt: sql`${sql.placeholder('now')}` })
      .where(
        and(
          eq(deliveries.id, sql`(select ${sql.identifier('delivery_id')} from ${attempt} where ${sql.identifier('outcome')} = 'succeeded')`),
          ne(deliveries.status, 'cancelled'),
        ),
      )
      .returning({ id: deliveries.id }),
  );
  const outcome = db
    .with(attempt, succeeded)
    .select({
      outcome: attempt.outcome,
      responseStatus: attempt.responseStatus,
      retryAfterMs: attempt.retryAfterMs,
      recordedSucceeded: sql<boolean>`exists (select 1 from ${succeeded})`,
    })
    .from(attempt)
    .prepare('delivery_attempt_outcome');

  return { context, intent, outcome };
}

/** A database error as an attempt's record says it: the driver's message, without the query's parameters. */
export function databaseReason(error: unknown): string {
  const message = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
  return storableText(message).slice(0, 300);
}

export function asResult(recorded: Pick<DeliveryAttempt, 'outcome' | 'responseStatus' | 'retryAfterMs'>): AttemptResult {
  return { outcome: recorded.outcome, responseStatus: recorded.responseStatus, retryAfterMs: recorded.retryAfterMs };
}

/** The one place a receiver's answer is made storable: NUL replaced (storableText), Retry-After clamped to MAX_RETRY_AFTER_MS. */
function storable(outcome: StorableOutcome): StorableOutcome {
  return {
    ...outcome,
    responseBody: storableText(outcome.responseBody),
    error: storableText(outcome.error),
    retryAfterMs: outcome.retryAfterMs === null ? null : Math.min(Math.max(0, Math.round(outcome.retryAfterMs)), MAX_RETRY_AFTER_MS),
  };
}

/** A recorded delivery as the workflow that sends it takes it. */
function asNewDelivery(delivery: Delivery): NewDelivery {
  return {
    id: delivery.id,
    organizationId: delivery.organizationId,
    connectionId: delivery.connectionId,
    scenarioId: delivery.scenarioId,
    event: delivery.event,
    environment: delivery.environment,
    envelopeBody: delivery.envelopeBody,
    createdAt: delivery.createdAt.toISOString(),
    hl7ControlId: delivery.hl7ControlId,
    sourceDeliveryId: delivery.sourceDeliveryId,
  };
}
