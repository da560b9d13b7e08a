import { ApplicationFailure, Context } from '@temporalio/activity';
import { DELIVERY_EXHAUSTED_EVENT } from '../catalog/events';
import { recordSubscriptionStatus } from '../fhir/subscriptions/records';
import { DEFAULT_DELIVERY_SLOTS_PER_ORGANIZATION } from '../platform/config';
import { type Database, isDatabaseUnavailable } from '../platform/database';
import { createOrganizationLines } from '../platform/organization-lines';
import type { AttemptResult } from '../webhooks/attempt-result';
import { type ChaosEffect, pickChaos } from '../webhooks/chaos';
import type { CarriedDelivery } from '../webhooks/claim-check';
import {
  asResult,
  attemptContext,
  attemptsOf,
  databaseReason,
  deliveryById,
  findExhaustedReport,
  recordAttemptIntent,
  recordAttemptOutcome,
  recordDeliveryState,
  recordNewDelivery,
  recordRefusedAttempt,
  resolveUnknownAttempt,
} from '../webhooks/delivery-records';
import { exhaustedReport } from '../webhooks/exhausted-report';
import { type NewDelivery, newDelivery } from '../webhooks/new-delivery';
import { exchangeWithReceiver } from '../webhooks/receiver-exchange';
import { type ResolveHost, resolveWithSystem } from '../webhooks/targets';
import type { AttemptTrigger, DeliveryStatusValue } from '../webhooks/vocabulary';

export interface DeliveryActivityDependencies {
  db: Database;
  allowPrivateTargets: boolean;
  timeoutMs: number;
  /** The DNS lookup every attempt checks the target with (and sends to what it answered); tests hand in their own. */
  resolveHost?: ResolveHost;
  /** At most this many attempts of one organization at once in this worker (DELIVERY_SLOTS_PER_ORGANIZATION, platform/organization-lines.ts). */
  slotsPerOrganization?: number;
  /**
   * Lends the running activity's worker slot while it waits for its organization's, and gives back
   * the function that takes it back (runtime/activity-slots.ts, composed by runtime/worker.ts).
   * Absent (activities called directly, in tests), a waiting attempt keeps its slot.
   */
  lendWorkerSlot?: () => () => void;
}

type AttemptInput = { deliveryId: string; attemptNumber: number; trigger: AttemptTrigger; newDelivery?: CarriedDelivery };
type AttemptContext = Awaited<ReturnType<typeof attemptContext>>;
/** What an attempt needs to be sent, or its answer when it is recorded already or cannot be prepared. */
type Prepared = { context: AttemptContext } | { answer: AttemptResult };

/**
 * How often an attempt tells the SDK its worker is alive, so a cancellation (a timeout, the worker
 * stopping) reaches it within about a second; the SDK sends the server at most one heartbeat per
 * 0.8 × the heartbeat timeout (workflows/delivery).
 */
const HEARTBEAT_EVERY_MS = 1_000;

/**
 * The delivery activities, built from their dependencies. They hold no SQL and no HTTP: the records
 * are webhooks/delivery-records.ts (which says how a delivery is created), the exchange with the
 * receiver webhooks/receiver-exchange.ts; here they run in order, with Temporal's heartbeats, the
 * organization's slots and the failures Temporal must see.
 */
export function createDeliveryActivities({
  db,
  allowPrivateTargets,
  timeoutMs,
  resolveHost = resolveWithSystem,
  slotsPerOrganization = DEFAULT_DELIVERY_SLOTS_PER_ORGANIZATION,
  lendWorkerSlot,
}: DeliveryActivityDependencies) {
  const lines = createOrganizationLines(slotsPerOrganization);

  /**
   * A step before the POST that fails for good (not an outage): the attempt is recorded as failed with
   * the reason, nothing is sent, and the delivery ends. Thrown to the workflow, which ends it, when
   * even that record cannot be made (the delivery's row itself could not be written).
   */
  async function refuseAttempt(input: AttemptInput, error: unknown): Promise<AttemptResult> {
    const reason = `This attempt was not sent: the delivery could not be prepared (${databaseReason(error)}). The delivery is stopped.`;
    try {
      await recordRefusedAttempt(db, input, reason);
    } catch (recordError) {
      if (isDatabaseUnavailable(recordError)) throw recordError;
      throw ApplicationFailure.nonRetryable(reason, 'DeliveryNotRecordable');
    }
    return { outcome: 'failed', responseStatus: null, retryAfterMs: null, final: true };
  }

  /** Reads what the attempt needs; the first attempt of a new delivery records the delivery unless the API has already (see attemptContext). */
  async function prepare(input: AttemptInput): Promise<Prepared> {
    try {
      const context = await attemptContext(db, input.deliveryId, input.attemptNumber, input.newDelivery);
      if (context.recorded?.outcome === 'sending') return { answer: await resolveUnknownAttempt(db, context.recorded.id) };
      if (context.recorded) return { answer: asResult(context.recorded) };
      return { context };
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      return { answer: await refuseAttempt(input, error) };
    }
  }

  /** The attempt itself, in one of its organization's slots: its intent recorded, the POST, its outcome recorded. */
  async function send(input: AttemptInput, context: AttemptContext): Promise<AttemptResult> {
    const startedAt = new Date();
    let chaos: ChaosEffect | null = null;
    let attemptId: string;
    try {
      chaos = pickChaos(context.reliabilityProfile, input.attemptNumber);
      const intent = await recordAttemptIntent(db, { ...input, startedAt, target: context.target, chaos: chaos?.mode ?? null });
      if (!intent) {
        const again = await attemptContext(db, input.deliveryId, input.attemptNumber);
        return again.recorded?.outcome === 'sending' ? resolveUnknownAttempt(db, again.recorded.id) : asResult(again.recorded!);
      }
      attemptId = intent;
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      return refuseAttempt(input, error);
    }
    const exchange = await exchangeWithReceiver(context.target, input.deliveryId, context.envelopeBody, chaos, {
      allowPrivateTargets,
      timeoutMs,
      resolveHost,
    });
    return recordAttemptOutcome(db, attemptId, { ...exchange, durationMs: Date.now() - startedAt.getTime() });
  }

  /**
   * Waits in the organization's line until one of its attempts ends and hands over its slot. The
   * worker slot is lent meanwhile, so waiting attempts never crowd out other organizations' tasks.
   * Leaves the line when Temporal no longer waits for this execution (the activity is cancelled:
   * timed out, or the worker stops), so a stale execution never sends beside its retry.
   */
  async function waitTurn(organizationId: string, input: AttemptInput): Promise<void> {
    const activity = currentActivity();
    const takeBack = activity ? lendWorkerSlot?.() : undefined;
    try {
      await lines.waitTurn(organizationId, { key: `${input.deliveryId}#${input.attemptNumber}`, signal: activity?.cancellationSignal });
    } finally {
      takeBack?.();
    }
  }

  return {
    /**
     * One attempt. HTTP outcomes are results, not errors, so Temporal never re-POSTs on its own. The
     * attempt records its intent (`sending`) before the POST and its outcome after, so the log holds
     * every send: an activity retried after a crash finds the intent and resolves it as `unknown`
     * instead of sending again, and one retried after the record answers from it. The first attempt
     * of a new delivery records the delivery unless the API has already (see attemptContext).
     * It runs in one of its organization's slots on this worker; when they are all taken it waits its
     * turn, never failed for it. It heartbeats, so an attempt whose worker died is retried at its
     * heartbeat timeout (workflows/delivery), not at its start-to-close timeout.
     */
    async attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
      return whileHeartbeating(async () => {
        let prepared: Prepared | undefined = await prepare(input);
        if ('answer' in prepared) return prepared.answer;
        const { organizationId } = prepared.context;
        if (!lines.tryTake(organizationId)) {
          // A waiting attempt keeps nothing of what it read (an envelope can be large) and reads it
          // again when its turn comes, so a target fixed meanwhile takes effect.
          prepared = undefined;
          await waitTurn(organizationId, input);
        }
        try {
          const ready = prepared ?? (await prepare({ ...input, newDelivery: undefined }));
          return 'answer' in ready ? ready.answer : await send(input, ready.context);
        } finally {
          lines.give(organizationId);
        }
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
      const recorded = await findExhaustedReport(db, input.deliveryId);
      if (recorded) return recorded;
      const failed = await deliveryById(db, input.deliveryId);
      if (!failed || failed.event === DELIVERY_EXHAUSTED_EVENT) return null;
      const attempts = (await attemptsOf(db, [failed.id])).get(failed.id)!;
      // A FHIR Subscription's notification that failed for good puts the subscription in error (the backport's
      // rest-hook): its status, GET and $status say so, in place of a report to the organization's webhook.
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
      return (await findExhaustedReport(db, input.deliveryId))!;
    },

    async recordDeliveryState(input: { deliveryId: string; status: DeliveryStatusValue; nextAttemptAt: string | null }): Promise<void> {
      await recordDeliveryState(db, input);
    },
  };
}

/** The running activity's context; undefined when called directly (tests call activities directly too). */
function currentActivity(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** Runs `work` heartbeating every HEARTBEAT_EVERY_MS when it runs as an activity. */
async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = currentActivity();
  if (!context) return work();
  // No heartbeat at the start: the SDK sends the first one to the server at once, a round trip and
  // a billed Temporal action on every attempt, while most attempts end well within the first interval.
  const beat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
