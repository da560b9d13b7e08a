import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import type { ChaosEffect } from './chaos';
import { signEnvelope } from './signing';
import { type CheckedTarget, checkWebhookTarget, pinnedLookup, type ResolveHost } from './targets';
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
  try {
    // undici's request, not fetch: no WHATWG streams and Response to build for an answer read once.
    // Neither follows redirects unless told to.
    const response = await request(checked.url, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(remainingMs),
      dispatcher: connectionsTo(checked),
    });
    const status = response.statusCode;
    const responseBody = (await readLimited(response.body)).slice(0, RESPONSE_BODY_LIMIT);
    if (status >= 200 && status < 300) {
      return { outcome: 'succeeded', responseStatus: status, responseBody, retryAfterMs: null, error: null };
    }
    if (status === 410) {
      return failure('The receiver answered 410 Gone: the delivery is stopped.', { outcome: 'gone', responseStatus: 410, responseBody });
    }
    const location = status >= 300 && status < 400 ? headerValue(response.headers.location) : null;
    if (location) {
      return failure(
        `The receiver answered ${status}, a redirect to ${location}; redirects are not followed, so point the webhook URL at the final address.`,
        {
          responseStatus: status,
          responseBody,
        },
      );
    }
    return failure(`The receiver answered ${status}.`, {
      responseStatus: status,
      responseBody,
      retryAfterMs: status === 429 ? parseRetryAfter(headerValue(response.headers['retry-after'])) : null,
    });
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') return failure(`Timed out: no answer within ${options.timeoutMs} ms.`);
    // A connection error is the error itself, or its cause when wrapped.
    const reason = (error as { cause?: { code?: string; message?: string } }).cause ?? (error as { code?: string; message: string });
    return failure(`Could not reach the receiver: ${reason.code ?? reason.message}.`);
  }
}

/** A response header as one value (the first, if the receiver sent it twice). */
function headerValue(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

/** How many receivers' connection pools are kept; the least recently used one beyond that is closed. */
const POOLED_TARGETS = 100;
/**
 * How long a connection stays open, idle, for the next attempt to the same receiver: short, so that
 * a receiver closing idle connections itself (Node's server after 5 s, most after a minute or more)
 * does not close one under a new attempt.
 */
const IDLE_CONNECTION_MS = 2_000;
const pools = new Map<string, Agent>();

/**
 * The connection pool for a checked target: its connections go only to the addresses the check
 * resolved (its DNS lookup answers those alone), so it is kept by origin and those addresses, and a
 * name that resolves elsewhere at a later attempt gets a pool of its own. Attempts to the same
 * receiver reuse its connections, as any HTTP client does, instead of connecting and closing one per
 * attempt (figures: docs/benchmarks.md, Webhook deliveries).
 */
function connectionsTo(checked: CheckedTarget): Agent {
  const key = `${checked.url.origin} ${checked.addresses.map((entry) => `${entry.family}/${entry.address}`).join(' ')}`;
  let pool = pools.get(key);
  if (pool) {
    pools.delete(key);
  } else {
    pool = new Agent({
      connect: { lookup: pinnedLookup(checked.addresses) },
      keepAliveTimeout: IDLE_CONNECTION_MS,
      keepAliveMaxTimeout: IDLE_CONNECTION_MS,
    });
    if (pools.size >= POOLED_TARGETS) {
      const [oldestKey, oldest] = pools.entries().next().value!;
      pools.delete(oldestKey);
      // Its attempts in flight finish first.
      void oldest.close();
    }
  }
  pools.set(key, pool);
  return pool;
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

/** Reads at most a little more than we keep, so a huge response body cannot exhaust memory; the rest is not read (that connection then closes). */
async function readLimited(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size > RESPONSE_BODY_LIMIT) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}
