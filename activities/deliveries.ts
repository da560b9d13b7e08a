import { setTimeout as sleep } from 'node:timers/promises';
import { and, eq } from 'drizzle-orm';
import { Agent, fetch } from 'undici';
import { DELIVERY_EXHAUSTED_EVENT } from '../catalog/events';
import { connections, type Delivery, deliveries, deliveryAttempts, organizations, reliabilityProfiles } from '../drizzle/schema';
import type { AttemptOutcome, AttemptTrigger, DeliveryStatusValue, TargetSource } from '../drizzle/vocabulary';
import { asFhirJson } from '../fhir/resource-json';
import { type Database, retryWhileUnavailable } from '../platform/database';
import { newId } from '../platform/ids';
import { type ChaosEffect, chaosProfileSchema, DEFAULT_CHAOS_PROFILE, pickChaos } from '../webhooks/chaos';
import type { CarriedDelivery } from '../webhooks/claim-check';
import { attemptsOf, type NewDelivery, recordNewDelivery } from '../webhooks/delivery-records';
import type { WebhookEnvelope } from '../webhooks/envelope';
import { exhaustedReport } from '../webhooks/exhausted-report';
import { signEnvelope } from '../webhooks/signing';
import { checkWebhookTarget, pinnedLookup, type ResolveHost, resolveWithSystem } from '../webhooks/targets';

export interface DeliveryActivityDependencies {
  db: Database;
  allowPrivateTargets: boolean;
  timeoutMs: number;
  /** The DNS lookup every attempt checks the target with (and sends to what it answered); tests hand in their own. */
  resolveHost?: ResolveHost;
}

export interface AttemptResult {
  outcome: AttemptOutcome;
  responseStatus: number | null;
  /** A 429's Retry-After, which the next attempt must wait at least. */
  retryAfterMs: number | null;
}

interface WebhookTarget {
  url: string | null;
  secret: string;
  source: TargetSource;
}

const RESPONSE_BODY_LIMIT = 2048;
/** How long an attempt waits for the database to record it; within the attempt activity's 2 minutes. */
const RECORD_ATTEMPT_WITHIN_MS = 60_000;

/** The delivery activities: one attempt (target, chaos, signature, POST, record) and state updates. */
export function createDeliveryActivities({ db, allowPrivateTargets, timeoutMs, resolveHost = resolveWithSystem }: DeliveryActivityDependencies) {
  /**
   * What an attempt needs, read afresh at each attempt in one query: the attempt's record if it was
   * made already, the envelope, the target (the connection's URL and secret when set, else the
   * organization's, each resolved on its own) and the chaos profile.
   */
  async function loadAttemptContext(deliveryId: string, attemptNumber: number) {
    const [row] = await db
      .select({
        recorded: { outcome: deliveryAttempts.outcome, responseStatus: deliveryAttempts.responseStatus, retryAfterMs: deliveryAttempts.retryAfterMs },
        envelopeBody: deliveries.envelopeBody,
        organizationUrl: organizations.webhookUrl,
        organizationSecret: organizations.webhookSecret,
        connectionUrl: connections.webhookUrl,
        connectionSecret: connections.webhookSecret,
        chaosProfile: reliabilityProfiles.profile,
      })
      .from(deliveries)
      .innerJoin(organizations, eq(organizations.id, deliveries.organizationId))
      .leftJoin(deliveryAttempts, and(eq(deliveryAttempts.deliveryId, deliveries.id), eq(deliveryAttempts.number, attemptNumber)))
      .leftJoin(connections, and(eq(connections.id, deliveries.connectionId), eq(connections.organizationId, deliveries.organizationId)))
      .leftJoin(reliabilityProfiles, eq(reliabilityProfiles.organizationId, deliveries.organizationId))
      .where(eq(deliveries.id, deliveryId));
    if (!row) throw new Error(`Delivery ${deliveryId} does not exist`);
    const target: WebhookTarget = {
      url: row.connectionUrl ?? row.organizationUrl,
      secret: row.connectionSecret ?? row.organizationSecret,
      source: row.connectionUrl ? 'connection' : 'organization',
    };
    const chaosProfile = row.chaosProfile ? chaosProfileSchema.parse(row.chaosProfile) : DEFAULT_CHAOS_PROFILE;
    const attempt = row.recorded;
    const recorded: AttemptResult | null = attempt?.outcome
      ? { outcome: attempt.outcome, responseStatus: attempt.responseStatus, retryAfterMs: attempt.retryAfterMs }
      : null;
    return { recorded, envelopeBody: row.envelopeBody, target, chaosProfile };
  }

  return {
    /**
     * One attempt. HTTP outcomes are results, not errors, so Temporal never re-POSTs on its own; an
     * attempt already recorded (the activity retried after a crash) is answered from its record. The
     * first attempt of a new delivery records the delivery first (once, whoever comes first: see
     * recordNewDelivery).
     */
    async attemptDelivery(input: {
      deliveryId: string;
      attemptNumber: number;
      trigger: AttemptTrigger;
      newDelivery?: CarriedDelivery;
    }): Promise<AttemptResult> {
      if (input.newDelivery) await recordNewDelivery(db, input.newDelivery);
      const { recorded, envelopeBody, target, chaosProfile } = await loadAttemptContext(input.deliveryId, input.attemptNumber);
      if (recorded) return recorded;

      const startedAt = new Date();
      const chaos = pickChaos(chaosProfile, input.attemptNumber);
      const exchange = await exchangeWithReceiver(target, input.deliveryId, envelopeBody, chaos, { allowPrivateTargets, timeoutMs, resolveHost });

      const durationMs = Date.now() - startedAt.getTime();
      // The receiver has been called: losing this record would make a retried activity call it again.
      await retryWhileUnavailable(
        () =>
          db
            .insert(deliveryAttempts)
            .values({
              id: newId('att'),
              deliveryId: input.deliveryId,
              number: input.attemptNumber,
              trigger: input.trigger,
              startedAt,
              durationMs,
              targetUrl: target.url,
              targetSource: target.url ? target.source : null,
              outcome: exchange.outcome,
              responseStatus: exchange.responseStatus,
              responseBody: exchange.responseBody,
              retryAfterMs: exchange.retryAfterMs,
              error: exchange.error,
              chaos: chaos?.mode ?? null,
            })
            .onConflictDoNothing(),
        RECORD_ATTEMPT_WITHIN_MS,
      );
      return { outcome: exchange.outcome, responseStatus: exchange.responseStatus, retryAfterMs: exchange.retryAfterMs };
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
      const failedAt = new Date().toISOString();
      const envelope: WebhookEnvelope = {
        id: newId('evt'),
        event: DELIVERY_EXHAUSTED_EVENT,
        connection_id: null,
        environment: failed.environment,
        occurred_at: failedAt,
        resource: asFhirJson(
          exhaustedReport({
            deliveryId: failed.id,
            event: failed.event,
            connectionId: failed.connectionId,
            lastStatus: attempts.at(-1)?.responseStatus ?? null,
            attemptCount: attempts.length,
            failedAt,
          }),
        ),
      };
      // Two runs racing here insert one row between them (the source id is unique); both answer with it.
      await recordNewDelivery(db, {
        id: newId('dlv'),
        organizationId: failed.organizationId,
        connectionId: null,
        scenarioId: failed.scenarioId,
        event: DELIVERY_EXHAUSTED_EVENT,
        environment: failed.environment,
        envelopeBody: JSON.stringify(envelope),
        createdAt: failedAt,
        sourceDeliveryId: failed.id,
      });
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
  const headers = signEnvelope({ deliveryId, body, secret: target.secret, timestampSeconds: Math.floor(Date.now() / 1000) });
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
