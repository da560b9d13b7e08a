import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { and, eq, ne, sql } from 'drizzle-orm';
import { Agent, fetch } from 'undici';
import { DELIVERY_EXHAUSTED_EVENT } from '../catalog/events';
import {
  connections,
  type Delivery,
  type DeliveryAttempt,
  deliveries,
  deliveryAttempts,
  fhirSubscriptions,
  organizations,
  reliabilityProfiles,
} from '../drizzle/schema';
import { recordSubscriptionStatus } from '../fhir/subscriptions/records';
import { DEFAULT_DELIVERY_SLOTS_PER_ORGANIZATION } from '../platform/config';
import { type Database, isDatabaseUnavailable, retryWhileUnavailable, storableText } from '../platform/database';
import { newId } from '../platform/ids';
import { type ChaosEffect, DEFAULT_RELIABILITY_PROFILE, pickChaos, reliabilityProfileSchema } from '../webhooks/chaos';
import type { CarriedDelivery } from '../webhooks/claim-check';
import { attemptsOf, type NewDelivery, recordNewDelivery } from '../webhooks/delivery-records';
import { exhaustedReport } from '../webhooks/exhausted-report';
import { busyRetryDelayMs, createOrganizationSlots, ORGANIZATION_BUSY } from '../webhooks/fair-share';
import { newDelivery } from '../webhooks/new-delivery';
import { signEnvelope } from '../webhooks/signing';
import { checkWebhookTarget, pinnedLookup, type ResolveHost, resolveWithSystem } from '../webhooks/targets';
import type { AttemptOutcome, AttemptTrigger, DeliveryStatusValue, TargetSource } from '../webhooks/vocabulary';

export interface DeliveryActivityDependencies {
  db: Database;
  allowPrivateTargets: boolean;
  timeoutMs: number;
  /** The DNS lookup every attempt checks the target with (and sends to what it answered); tests hand in their own. */
  resolveHost?: ResolveHost;
  /** At most this many attempts of one organization at once in this worker (DELIVERY_SLOTS_PER_ORGANIZATION, webhooks/fair-share.ts). */
  slotsPerOrganization?: number;
}

export interface AttemptResult {
  outcome: AttemptOutcome;
  responseStatus: number | null;
  /** A 429's Retry-After, which the next attempt must wait at least. */
  retryAfterMs: number | null;
  /** Set when the attempt could not be prepared or recorded for good: the delivery ends as failed (the attempt's error says why). */
  final?: true;
  /** Set when this attempt's own write marked the delivery `succeeded` (with its outcome, in one statement): the workflow then writes no state of its own. */
  recordedSucceeded?: true;
}

/** What an attempt's record gets once the receiver has answered (or its intent is resolved). */
type StorableOutcome = Pick<DeliveryAttempt, 'outcome' | 'durationMs' | 'responseStatus' | 'responseBody' | 'retryAfterMs' | 'error'>;

interface WebhookTarget {
  url: string | null;
  secret: string;
  source: TargetSource;
  /** A FHIR Subscription's payload MIME type and channel headers, for its notifications. */
  contentType?: string;
  channelHeaders?: string[];
}

const RESPONSE_BODY_LIMIT = 2048;
/**
 * The longest wait a receiver's Retry-After can ask for. Longer ones (`Retry-After: 99999999999`) are
 * shortened to it: the value must fit its column (32-bit milliseconds, about 24.8 days) and a delivery
 * should not sleep for years.
 */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;
/** How often an attempt tells Temporal its worker is alive; its heartbeat timeout (workflows/delivery) is a few of these. */
const HEARTBEAT_EVERY_MS = 1_000;
/** How long an attempt waits for the database to record it; within the attempt activity's 2 minutes. */
const RECORD_ATTEMPT_WITHIN_MS = 60_000;

/** The delivery activities: one attempt (target, chaos, signature, POST, record) and state updates. */
export function createDeliveryActivities({
  db,
  allowPrivateTargets,
  timeoutMs,
  resolveHost = resolveWithSystem,
  slotsPerOrganization = DEFAULT_DELIVERY_SLOTS_PER_ORGANIZATION,
}: DeliveryActivityDependencies) {
  const slots = createOrganizationSlots(slotsPerOrganization);
  /** Put off, not failed: Temporal retries the attempt once a slot may be free; nothing is recorded or sent. */
  const organizationBusy = (organizationId: string) =>
    ApplicationFailure.create({
      type: ORGANIZATION_BUSY,
      message: `Organization ${organizationId} already has ${slotsPerOrganization} deliveries in flight on this worker; this attempt waits for one of them.`,
      nextRetryDelay: busyRetryDelayMs(Context.current().info.attempt),
    });

  /**
   * What an attempt needs, read afresh at each attempt in one query: the attempt's record if it was
   * made already, the envelope, the target (the connection's URL and secret when set, else the
   * organization's, each resolved on its own) and the chaos profile.
   */
  async function loadAttemptContext(deliveryId: string, attemptNumber: number) {
    const [row] = await db
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
      .leftJoin(deliveryAttempts, and(eq(deliveryAttempts.deliveryId, deliveries.id), eq(deliveryAttempts.number, attemptNumber)))
      .leftJoin(connections, and(eq(connections.id, deliveries.connectionId), eq(connections.organizationId, deliveries.organizationId)))
      .leftJoin(reliabilityProfiles, eq(reliabilityProfiles.organizationId, deliveries.organizationId))
      .leftJoin(
        fhirSubscriptions,
        and(eq(fhirSubscriptions.id, deliveries.subscriptionId), eq(fhirSubscriptions.organizationId, deliveries.organizationId)),
      )
      .where(eq(deliveries.id, deliveryId));
    if (!row) throw new Error(`Delivery ${deliveryId} does not exist`);
    const subscription = row.subscription?.id ? row.subscription : null;
    if (subscription?.deletedAt) throw new Error(`Subscription/${subscription.id} was deleted, so its notifications are no longer sent`);
    // A subscription's notification goes to its endpoint, with its headers, signed with the organization's secret like every webhook.
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
  async function recordOutcome(attemptId: string, outcome: StorableOutcome): Promise<AttemptResult> {
    const write = (values: StorableOutcome) =>
      retryWhileUnavailable(async () => {
        const attempt = db.$with('attempt').as(
          db
            .update(deliveryAttempts)
            .set(values)
            .where(and(eq(deliveryAttempts.id, attemptId), eq(deliveryAttempts.outcome, 'sending')))
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
            .set({ status: 'succeeded', nextAttemptAt: null, updatedAt: new Date() })
            .where(
              and(
                eq(deliveries.id, sql`(select ${sql.identifier('delivery_id')} from ${attempt} where ${sql.identifier('outcome')} = 'succeeded')`),
                ne(deliveries.status, 'cancelled'),
              ),
            )
            .returning({ id: deliveries.id }),
        );
        const [stored] = await db
          .with(attempt, succeeded)
          .select({
            outcome: attempt.outcome,
            responseStatus: attempt.responseStatus,
            retryAfterMs: attempt.retryAfterMs,
            recordedSucceeded: sql<boolean>`exists (select 1 from ${succeeded})`,
          })
          .from(attempt);
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
  async function resolveUnknown(attemptId: string): Promise<AttemptResult> {
    return recordOutcome(attemptId, {
      outcome: 'unknown',
      durationMs: null,
      responseStatus: null,
      responseBody: null,
      retryAfterMs: null,
      error: 'The worker making this attempt stopped before recording its answer: the receiver may or may not have received it.',
    });
  }

  /**
   * A step before the POST that fails for good (not an outage): the attempt is recorded as failed with
   * the reason, nothing is sent, and the delivery ends. Thrown to the workflow, which ends it, when
   * even that record cannot be made (the delivery's row itself could not be written).
   */
  async function refuseAttempt(
    input: { deliveryId: string; attemptNumber: number; trigger: AttemptTrigger },
    error: unknown,
  ): Promise<AttemptResult> {
    const reason = `This attempt was not sent: the delivery could not be prepared (${databaseReason(error)}). The delivery is stopped.`;
    try {
      await db
        .insert(deliveryAttempts)
        .values({
          id: newId('att'),
          deliveryId: input.deliveryId,
          number: input.attemptNumber,
          trigger: input.trigger,
          startedAt: new Date(),
          durationMs: 0,
          outcome: 'failed',
          error: reason,
        })
        .onConflictDoNothing();
    } catch (recordError) {
      if (isDatabaseUnavailable(recordError)) throw recordError;
      throw ApplicationFailure.nonRetryable(reason, 'DeliveryNotRecordable');
    }
    return { outcome: 'failed', responseStatus: null, retryAfterMs: null, final: true };
  }

  return {
    /**
     * One attempt. HTTP outcomes are results, not errors, so Temporal never re-POSTs on its own. The
     * attempt records its intent (`sending`) before the POST and its outcome after, so the log holds
     * every send: an activity retried after a crash finds the intent and resolves it as `unknown`
     * instead of sending again, and one retried after the record answers from it. The first attempt
     * of a new delivery records the delivery first (once, whoever comes first: see recordNewDelivery).
     * It heartbeats, so an attempt whose worker died is retried within seconds, not at its timeout.
     */
    async attemptDelivery(input: {
      deliveryId: string;
      attemptNumber: number;
      trigger: AttemptTrigger;
      newDelivery?: CarriedDelivery;
    }): Promise<AttemptResult> {
      // The organization whose slot this attempt holds, given back however the attempt ends.
      let slotHeldFor: string | null = null;
      return whileHeartbeating(async () => {
        let prepared: Awaited<ReturnType<typeof loadAttemptContext>>;
        let attemptId: string;
        const startedAt = new Date();
        const chaos = { effect: null as ChaosEffect | null };
        try {
          if (input.newDelivery) await recordNewDelivery(db, input.newDelivery);
          prepared = await loadAttemptContext(input.deliveryId, input.attemptNumber);
          if (prepared.recorded?.outcome === 'sending') return resolveUnknown(prepared.recorded.id);
          if (prepared.recorded) return asResult(prepared.recorded);
          if (!slots.tryAcquire(prepared.organizationId)) throw organizationBusy(prepared.organizationId);
          slotHeldFor = prepared.organizationId;
          chaos.effect = pickChaos(prepared.reliabilityProfile, input.attemptNumber);
          // The intent, before anything is sent: a worker dying after the POST still leaves the send in the log.
          const [intent] = await db
            .insert(deliveryAttempts)
            .values({
              id: newId('att'),
              deliveryId: input.deliveryId,
              number: input.attemptNumber,
              trigger: input.trigger,
              startedAt,
              durationMs: null,
              targetUrl: prepared.target.url,
              targetSource: prepared.target.url ? prepared.target.source : null,
              outcome: 'sending',
              chaos: chaos.effect?.mode ?? null,
            })
            .onConflictDoNothing()
            .returning({ id: deliveryAttempts.id });
          if (!intent) {
            // An execution Temporal gave up on (its heartbeat late) wrote the intent meanwhile: never send twice.
            const again = await loadAttemptContext(input.deliveryId, input.attemptNumber);
            return again.recorded?.outcome === 'sending' ? resolveUnknown(again.recorded.id) : asResult(again.recorded!);
          }
          attemptId = intent.id;
        } catch (error) {
          if (isDatabaseUnavailable(error) || (error instanceof ApplicationFailure && error.type === ORGANIZATION_BUSY)) throw error;
          return refuseAttempt(input, error);
        }

        const exchange = await exchangeWithReceiver(prepared.target, input.deliveryId, prepared.envelopeBody, chaos.effect, {
          allowPrivateTargets,
          timeoutMs,
          resolveHost,
        });
        return recordOutcome(attemptId, {
          outcome: exchange.outcome,
          durationMs: Date.now() - startedAt.getTime(),
          responseStatus: exchange.responseStatus,
          responseBody: exchange.responseBody,
          retryAfterMs: exchange.retryAfterMs,
          error: exchange.error,
        });
      }).finally(() => {
        if (slotHeldFor) slots.release(slotHeldFor);
      });
    },

    /** The step that recorded a new delivery before its first attempt, in runs begun before the attempt did it. */
    async recordNewDelivery(delivery: CarriedDelivery): Promise<void> {
      await recordNewDelivery(db, delivery);
    },

    /**
     * The `webhook.delivery.exhausted` delivery reporting that `deliveryId` failed for good, to the
     * organization's default target (no connection, so a connection's failing URL cannot swallow it).
     * Recorded once per failed delivery: a retried activity answers from that record. Null for a
     * delivery that is itself such a report, so reports never chain.
     */
    async recordExhaustedDelivery(input: { deliveryId: string }): Promise<NewDelivery | null> {
      const reportOf = async () => {
        const [report] = await db.select().from(deliveries).where(eq(deliveries.sourceDeliveryId, input.deliveryId));
        return report && asNewDelivery(report);
      };
      const recorded = await reportOf();
      if (recorded) return recorded;
      const [failed] = await db.select().from(deliveries).where(eq(deliveries.id, input.deliveryId));
      if (!failed || failed.event === DELIVERY_EXHAUSTED_EVENT) return null;
      const attempts = (await attemptsOf(db, [failed.id])).get(failed.id)!;
      // A FHIR Subscription's notification that failed for good puts the subscription in error (the backport's
      // rest-hook): its status, its $status and GET say so, in place of a report to the organization's webhook.
      if (failed.subscriptionId) {
        const last = attempts.at(-1);
        const why = last?.error ?? (last?.responseStatus ? `the endpoint answered ${last.responseStatus}` : 'no attempt reached the endpoint');
        await recordSubscriptionStatus(
          db,
          failed.subscriptionId,
          'error',
          `Notification ${failed.id} failed for good after ${attempts.length} attempt(s): ${why}`,
        );
        return null;
      }
      const failedAt = new Date().toISOString();
      const report = newDelivery({
        organizationId: failed.organizationId,
        connectionId: null,
        scenarioId: failed.scenarioId,
        event: DELIVERY_EXHAUSTED_EVENT,
        environment: failed.environment,
        occurredAt: failedAt,
        resource: exhaustedReport({
          deliveryId: failed.id,
          event: failed.event,
          connectionId: failed.connectionId,
          lastStatus: attempts.at(-1)?.responseStatus ?? null,
          attemptCount: attempts.length,
          failedAt,
        }),
        sourceDeliveryId: failed.id,
      });
      // Two runs racing here insert one row between them (the source id is unique); both answer with it.
      await recordNewDelivery(db, report);
      return (await reportOf())!;
    },

    async recordDeliveryState(input: { deliveryId: string; status: DeliveryStatusValue; nextAttemptAt: string | null }): Promise<void> {
      await db
        .update(deliveries)
        .set({ status: input.status, nextAttemptAt: input.nextAttemptAt ? new Date(input.nextAttemptAt) : null, updatedAt: new Date() })
        .where(eq(deliveries.id, input.deliveryId));
    },
  };
}

interface Exchange extends AttemptResult {
  responseBody: string | null;
  error: string | null;
}

const failure = (error: string, extra: Partial<Exchange> = {}): Exchange => ({
  outcome: 'failed',
  responseStatus: null,
  responseBody: null,
  retryAfterMs: null,
  error,
  ...extra,
});

/**
 * Checks the target again (a name may resolve elsewhere than when it was configured), applies the
 * chaos mode, signs and POSTs the stored envelope to the address the check resolved, and classifies
 * the answer. Redirects are answers, never followed.
 */
async function exchangeWithReceiver(
  target: WebhookTarget,
  deliveryId: string,
  body: string,
  chaos: ChaosEffect | null,
  options: { allowPrivateTargets: boolean; timeoutMs: number; resolveHost: ResolveHost },
): Promise<Exchange> {
  if (!target.url) {
    return failure('No webhook URL is configured: set one with PATCH /v1/settings/webhook or on the connection. The next attempt uses it.');
  }
  // The attempt's time limit covers resolving the name as it covers the exchange.
  const started = Date.now();
  const checked = await withinTime(
    checkWebhookTarget(target.url, { allowPrivate: options.allowPrivateTargets, resolveHost: options.resolveHost }),
    options.timeoutMs,
  );
  if (!checked) return failure(`Timed out: the receiver's name did not resolve within ${options.timeoutMs} ms.`);
  if ('refused' in checked) return failure(`Refused before sending: the webhook URL ${checked.refused}.`);
  if (checked.resolveError) return failure(`Could not reach the receiver: ${checked.resolveError}.`);
  if (chaos?.mode === 'transient_503') {
    return failure('Chaos: transient 503 injected; the receiver was not called.', { responseStatus: 503 });
  }
  if (chaos?.mode === 'rate_limit') {
    return failure('Chaos: rate limit injected (429); the receiver was not called.', { responseStatus: 429, retryAfterMs: chaos.retryAfterMs });
  }

  // Signed before any chaos delay, so a slow attempt arrives with an older webhook-timestamp, as it would.
  const headers = signEnvelope({
    deliveryId,
    body,
    secret: target.secret,
    timestampSeconds: Math.floor(Date.now() / 1000),
    ...(target.contentType ? { contentType: target.contentType } : {}),
    ...(target.channelHeaders ? { channelHeaders: target.channelHeaders } : {}),
  });
  if (chaos?.mode === 'slow') await sleep(Math.min(chaos.delayMs, options.timeoutMs));
  const remainingMs = options.timeoutMs - (Date.now() - started);
  if (remainingMs <= 0) return failure(`Timed out: no answer within ${options.timeoutMs} ms (chaos: slow).`);
  // One connection pool per attempt, whose DNS lookup answers only the checked addresses.
  const pinned = new Agent({ connect: { lookup: pinnedLookup(checked.addresses) } });
  try {
    const response = await fetch(checked.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(remainingMs),
      dispatcher: pinned,
    });
    const responseBody = (await readLimited(response)).slice(0, RESPONSE_BODY_LIMIT);
    if (response.status >= 200 && response.status < 300) {
      return { outcome: 'succeeded', responseStatus: response.status, responseBody, retryAfterMs: null, error: null };
    }
    if (response.status === 410) {
      return failure('The receiver answered 410 Gone: the delivery is stopped.', { outcome: 'gone', responseStatus: 410, responseBody });
    }
    const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
    if (location) {
      return failure(
        `The receiver answered ${response.status}, a redirect to ${location}; redirects are not followed, so point the webhook URL at the final address.`,
        {
          responseStatus: response.status,
          responseBody,
        },
      );
    }
    return failure(`The receiver answered ${response.status}.`, {
      responseStatus: response.status,
      responseBody,
      retryAfterMs: response.status === 429 ? parseRetryAfter(response.headers.get('retry-after')) : null,
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if ((error as Error).name === 'TimeoutError') return failure(`Timed out: no answer within ${options.timeoutMs} ms.`);
    return failure(`Could not reach the receiver: ${cause?.code ?? cause?.message ?? (error as Error).message}.`);
  } finally {
    await pinned.destroy();
  }
}

/** The work's result, or null when it takes longer than `ms` (the work itself cannot be cancelled: DNS lookups cannot). */
async function withinTime<T>(work: Promise<T>, ms: number): Promise<T | null> {
  const timer = new AbortController();
  try {
    return await Promise.race([work, sleep(ms, null, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}

/** Reads at most a little more than we keep, so a huge response body cannot exhaust memory. */
async function readLimited(response: Awaited<ReturnType<typeof fetch>>): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size <= RESPONSE_BODY_LIMIT) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => {});
  return Buffer.concat(chunks).toString('utf8');
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
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

/** The one place a receiver's answer is made storable: NUL replaced (storableText), Retry-After clamped to MAX_RETRY_AFTER_MS. */
function storable(outcome: StorableOutcome): StorableOutcome {
  return {
    ...outcome,
    responseBody: storableText(outcome.responseBody),
    error: storableText(outcome.error),
    retryAfterMs: outcome.retryAfterMs === null ? null : Math.min(Math.max(0, Math.round(outcome.retryAfterMs)), MAX_RETRY_AFTER_MS),
  };
}

function asResult(recorded: Pick<DeliveryAttempt, 'outcome' | 'responseStatus' | 'retryAfterMs'>): AttemptResult {
  return { outcome: recorded.outcome, responseStatus: recorded.responseStatus, retryAfterMs: recorded.retryAfterMs };
}

/** A database error as an attempt's record says it: the driver's message, without the query's parameters. */
function databaseReason(error: unknown): string {
  const message = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
  return storableText(message).slice(0, 300);
}

/** Runs `work` heartbeating every HEARTBEAT_EVERY_MS when it runs as an activity (tests call activities directly too). */
async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return work();
  }
  // No heartbeat at the start: the SDK sends the first one to the server at once, a round trip and
  // a billed Temporal action on every attempt, while most attempts end well within the first interval.
  const beat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
