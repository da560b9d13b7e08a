import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, fetch } from 'undici';
import type { ChaosEffect } from './chaos';
import { signEnvelope } from './signing';
import { checkWebhookTarget, pinnedLookup, type ResolveHost } from './targets';
import type { AttemptOutcome, TargetSource } from './vocabulary';

/**
 * The HTTP side of an attempt, and nothing else: no database. The attempt's record (intent before,
 * outcome after) is webhooks/delivery-records.ts; the activity that runs the two in order is
 * activities/deliveries.ts.
 */

/** Where an attempt sends: the connection's URL and secret when set, else the organization's (each resolved on its own). */
export interface WebhookTarget {
  url: string | null;
  secret: string;
  source: TargetSource;
  /** A FHIR Subscription's payload MIME type and `channel.header` values, sent with its notifications. */
  contentType?: string;
  channelHeaders?: string[];
}

const RESPONSE_BODY_LIMIT = 2048;

/** The receiver's answer to one attempt, or why there was none: what the attempt's record stores. */
export interface Exchange {
  outcome: AttemptOutcome;
  responseStatus: number | null;
  responseBody: string | null;
  /** A 429's Retry-After, as the receiver asked (the record clamps it). */
  retryAfterMs: number | null;
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
export async function exchangeWithReceiver(
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
