import { setTimeout as sleep } from 'node:timers/promises';
import { and, eq } from 'drizzle-orm';
import { connections, deliveries, deliveryAttempts, organizations, reliabilityProfiles } from '../drizzle/schema';
import type { AttemptOutcome, AttemptTrigger, DeliveryStatusValue, TargetSource } from '../drizzle/vocabulary';
import type { Database } from '../platform/database';
import { newId } from '../platform/ids';
import { type ChaosEffect, chaosProfileSchema, DEFAULT_CHAOS_PROFILE, pickChaos } from '../webhooks/chaos';
import { type NewDelivery, recordNewDelivery } from '../webhooks/delivery-records';
import { signEnvelope } from '../webhooks/signing';
import { webhookUrlProblem } from '../webhooks/targets';

export interface DeliveryActivityDependencies {
  db: Database;
  allowPrivateTargets: boolean;
  timeoutMs: number;
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

/** The delivery activities: one attempt (target, chaos, signature, POST, record) and state updates. */
export function createDeliveryActivities({ db, allowPrivateTargets, timeoutMs }: DeliveryActivityDependencies) {
  /**
   * What an attempt needs, read afresh at each attempt in one query: the envelope, the target (the
   * connection's URL and secret when set, else the organization's, each resolved on its own) and
   * the chaos profile.
   */
  async function loadAttemptContext(deliveryId: string) {
    const [row] = await db
      .select({
        envelopeBody: deliveries.envelopeBody,
        organizationUrl: organizations.webhookUrl,
        organizationSecret: organizations.webhookSecret,
        connectionUrl: connections.webhookUrl,
        connectionSecret: connections.webhookSecret,
        chaosProfile: reliabilityProfiles.profile,
      })
      .from(deliveries)
      .innerJoin(organizations, eq(organizations.id, deliveries.organizationId))
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
    return { envelopeBody: row.envelopeBody, target, chaosProfile };
  }

  return {
    /**
     * One attempt. HTTP outcomes are results, not errors, so Temporal never re-POSTs on its own; an
     * attempt already recorded (the activity retried after a crash) is answered from its record.
     */
    async attemptDelivery(input: { deliveryId: string; attemptNumber: number; trigger: AttemptTrigger }): Promise<AttemptResult> {
      const [recorded] = await db
        .select()
        .from(deliveryAttempts)
        .where(and(eq(deliveryAttempts.deliveryId, input.deliveryId), eq(deliveryAttempts.number, input.attemptNumber)));
      if (recorded) return { outcome: recorded.outcome, responseStatus: recorded.responseStatus, retryAfterMs: recorded.retryAfterMs };

      const { envelopeBody, target, chaosProfile } = await loadAttemptContext(input.deliveryId);
      const startedAt = new Date();
      const chaos = pickChaos(chaosProfile, input.attemptNumber);
      const exchange = await exchangeWithReceiver(target, input.deliveryId, envelopeBody, chaos, { allowPrivateTargets, timeoutMs });

      await db
        .insert(deliveryAttempts)
        .values({
          id: newId('att'),
          deliveryId: input.deliveryId,
          number: input.attemptNumber,
          trigger: input.trigger,
          startedAt,
          durationMs: Date.now() - startedAt.getTime(),
          targetUrl: target.url,
          targetSource: target.url ? target.source : null,
          outcome: exchange.outcome,
          responseStatus: exchange.responseStatus,
          responseBody: exchange.responseBody,
          retryAfterMs: exchange.retryAfterMs,
          error: exchange.error,
          chaos: chaos?.mode ?? null,
        })
        .onConflictDoNothing();
      return { outcome: exchange.outcome, responseStatus: exchange.responseStatus, retryAfterMs: exchange.retryAfterMs };
    },

    async recordNewDelivery(delivery: NewDelivery): Promise<void> {
      await recordNewDelivery(db, delivery);
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

/** Applies the chaos mode, signs and POSTs the stored envelope, and classifies the answer. */
async function exchangeWithReceiver(
  target: WebhookTarget,
  deliveryId: string,
  body: string,
  chaos: ChaosEffect | null,
  options: { allowPrivateTargets: boolean; timeoutMs: number },
): Promise<Exchange> {
  if (!target.url) {
    return failure('No webhook URL is configured: set one with PATCH /v1/settings/webhook or on the connection. The next attempt uses it.');
  }
  const refused = await webhookUrlProblem(target.url, options.allowPrivateTargets);
  if (refused) return failure(`The webhook URL ${refused}.`);
  if (chaos?.mode === 'transient_503') {
    return failure('Chaos: transient 503 injected; the receiver was not called.', { responseStatus: 503 });
  }
  if (chaos?.mode === 'rate_limit') {
    return failure('Chaos: rate limit injected (429); the receiver was not called.', { responseStatus: 429, retryAfterMs: chaos.retryAfterMs });
  }

  // Signed before any chaos delay, so a slow attempt arrives with an older webhook-timestamp, as it would.
  const headers = signEnvelope({ deliveryId, body, secret: target.secret, timestampSeconds: Math.floor(Date.now() / 1000) });
  const started = Date.now();
  if (chaos?.mode === 'slow') await sleep(Math.min(chaos.delayMs, options.timeoutMs));
  const remainingMs = options.timeoutMs - (Date.now() - started);
  if (remainingMs <= 0) return failure(`Timed out: no answer within ${options.timeoutMs} ms (chaos: slow).`);
  try {
    const response = await fetch(target.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(remainingMs) });
    const responseBody = (await readLimited(response)).slice(0, RESPONSE_BODY_LIMIT);
    if (response.status >= 200 && response.status < 300) {
      return { outcome: 'succeeded', responseStatus: response.status, responseBody, retryAfterMs: null, error: null };
    }
    if (response.status === 410) {
      return failure('The receiver answered 410 Gone: the delivery is stopped.', { outcome: 'gone', responseStatus: 410, responseBody });
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
  }
}

/** Reads at most a little more than we keep, so a huge response body cannot exhaust memory. */
async function readLimited(response: Response): Promise<string> {
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
