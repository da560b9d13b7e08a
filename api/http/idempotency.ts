import { createHash, randomUUID } from 'node:crypto';
import { and, eq, isNull, lt } from 'drizzle-orm';
import type { Request, RequestHandler, Response } from 'express';
import { type IdempotencyKey, idempotencyKeys } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { ApiProblem } from './problem';

const RETENTION_MS = 24 * 60 * 60 * 1000;
/** A claim held this long belongs to a request, or a process, that died. */
const ABANDONED_AFTER_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** Tells this process's claims apart, so one it left behind (its answer never stored) is free at once. */
const PROCESS_ID = randomUUID();

/** What the request handling an Idempotency-Key offers the handler (res.locals.idempotency). */
export interface IdempotencyClaim {
  /**
   * The work this key's request planned: `plan()`'s value, stored with the key on first use and
   * returned as it was to every retry of the request, so a retry after a lost answer names the same
   * business ids (api/http/accepted-work.ts). `plan()` must return JSON.
   */
  reserve<T>(plan: () => T): Promise<T>;
}

/**
 * `Idempotency-Key` on POSTs that create work (CONVENTIONS.md): the same key and body within 24 h
 * answers the first response again (`Idempotent-Replayed: true`) and creates nothing; the same key
 * with another body is 422; a retry while the first is still running is 409. A server error gives
 * the key back so the request can be retried, keeping what it reserved. A route may store a replay
 * answer without its one-time secrets (`res.locals.replay`, see RouteDefinition.replayed).
 */
export function idempotency(db: Database): RequestHandler {
  // The keys this process is answering right now.
  const serving = new Set<string>();

  return async (req, res, next) => {
    const key = req.header('idempotency-key');
    if (key === undefined) return next();
    if (!KEY_PATTERN.test(key)) {
      throw new ApiProblem(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters, e.g. a UUID.');
    }
    // Mounted after authenticate (api/http/route.ts), so the key's organization is known.
    const { organizationId } = res.locals.auth!;
    const requestHash = hashRequest(req);
    const thisKey = and(eq(idempotencyKeys.organizationId, organizationId), eq(idempotencyKeys.key, key));
    const servingKey = `${organizationId}\n${key}`;
    const now = new Date();
    // This request's claim: every write it makes to the key checks it still holds it (compare and set),
    // so a request whose claim a retry took over (held past ABANDONED_AFTER_MS) can no longer plan or answer.
    const claimId = `${PROCESS_ID}/${randomUUID()}`;
    const thisClaim = and(thisKey, eq(idempotencyKeys.claimedBy, claimId));

    // An expired key is a new key (the retention schedule purges the others).
    await db.delete(idempotencyKeys).where(and(thisKey, lt(idempotencyKeys.expiresAt, now)));
    const claimed = await db
      .insert(idempotencyKeys)
      .values({
        organizationId,
        key,
        requestHash,
        state: 'in_progress',
        expiresAt: new Date(now.getTime() + RETENTION_MS),
        claimedBy: claimId,
        claimedAt: now,
      })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });

    let reservation: unknown = null;
    if (claimed.length === 0) {
      const [first] = await db.select().from(idempotencyKeys).where(thisKey);
      if (!first)
        throw new ApiProblem(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key has just finished; retry it.', {
          headers: { 'Retry-After': '1' },
        });
      const free = first.state === 'in_progress' && isFree(first, serving.has(servingKey), now);
      // A claim left behind with nothing planned holds nothing to protect: any request may take it.
      if (first.requestHash !== requestHash && !(free && first.reservation === null)) {
        throw new ApiProblem(
          422,
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
        );
      }
      if (first.state === 'completed') {
        res.setHeader('Idempotent-Replayed', 'true');
        res
          .status(first.responseStatus!)
          .type(first.responseContentType ?? 'application/json')
          .send(first.responseBody);
        return;
      }
      if (!(free && (await takeOver(db, first, requestHash, claimId, now)))) {
        throw new ApiProblem(
          409,
          'idempotency_request_in_progress',
          'The first request with this Idempotency-Key is still being processed; retry shortly.',
          {
            headers: { 'Retry-After': '1' },
          },
        );
      }
      reservation = first.reservation;
    }

    // Not given up when the client goes away: the handler still runs to its answer, which releases it.
    serving.add(servingKey);
    const claim: IdempotencyClaim = {
      async reserve<T>(plan: () => T): Promise<T> {
        if (reservation !== null) return reservation as T;
        const planned = plan();
        const stored = await db
          .update(idempotencyKeys)
          .set({ reservation: planned })
          .where(and(thisClaim, isNull(idempotencyKeys.reservation)))
          .returning({ key: idempotencyKeys.key });
        if (stored.length === 0) throw claimLost();
        reservation = planned;
        return planned;
      },
    };
    res.locals.idempotency = claim;

    recordBeforeSending(res, async (status, contentType, body) => {
      // Still served here until the answer is stored: a concurrent retry must not take the claim meanwhile.
      try {
        await recordAnswer(status, contentType, body);
      } finally {
        serving.delete(servingKey);
      }
    });

    async function recordAnswer(status: number, contentType: string, body: string) {
      // Each write only while this request still holds the key: one that lost it leaves the key to the retry that took it.
      if (status >= 500 && reservation === null) {
        await db.delete(idempotencyKeys).where(thisClaim);
      } else if (status >= 500) {
        await db.update(idempotencyKeys).set({ claimedBy: null, claimedAt: null }).where(thisClaim);
      } else {
        const stored = res.locals.replay ?? { status, contentType, body };
        await db
          .update(idempotencyKeys)
          .set({
            state: 'completed',
            responseStatus: stored.status,
            responseContentType: stored.contentType,
            responseBody: stored.body,
            claimedBy: null,
            claimedAt: null,
          })
          .where(thisClaim);
      }
    }
    next();
  };
}

/**
 * Whether a key still in progress can be taken: given back after a server error, left behind by this
 * process (a request whose answer could not be stored, the database being down), or held so long
 * that its request or process must have died.
 */
function isFree(record: IdempotencyKey, servedHere: boolean, now: Date): boolean {
  if (record.claimedBy === null || record.claimedAt === null) return true;
  if (record.claimedBy.startsWith(`${PROCESS_ID}/`) && !servedHere) return true;
  return record.claimedAt.getTime() < now.getTime() - ABANDONED_AFTER_MS;
}

/** Takes the claim unless another retry took it first. */
async function takeOver(db: Database, record: IdempotencyKey, requestHash: string, claimId: string, now: Date): Promise<boolean> {
  const taken = await db
    .update(idempotencyKeys)
    .set({ requestHash, claimedBy: claimId, claimedAt: now })
    .where(
      and(
        eq(idempotencyKeys.organizationId, record.organizationId),
        eq(idempotencyKeys.key, record.key),
        eq(idempotencyKeys.state, 'in_progress'),
        record.claimedBy === null ? isNull(idempotencyKeys.claimedBy) : eq(idempotencyKeys.claimedBy, record.claimedBy),
        record.claimedAt === null ? isNull(idempotencyKeys.claimedAt) : eq(idempotencyKeys.claimedAt, record.claimedAt),
      ),
    )
    .returning({ key: idempotencyKeys.key });
  return taken.length > 0;
}

/**
 * What a request is, for telling a retry from another request under the same key: its method, path,
 * query string (trigger-mock-event and the HL7 inject read theirs) and body. Without a query string it
 * hashes as before the query counted, so keys stored then still match their retries.
 */
function hashRequest(req: Request): string {
  const queryAt = req.originalUrl.indexOf('?');
  const query = queryAt === -1 ? '' : req.originalUrl.slice(queryAt);
  return createHash('sha256')
    .update(`${req.method} ${req.path}${query}\n${JSON.stringify(req.body ?? null)}`)
    .digest('hex');
}

function claimLost(): ApiProblem {
  return new ApiProblem(
    409,
    'idempotency_request_in_progress',
    'A retry with this Idempotency-Key took the request over while it was stalled; retry to get its answer.',
    { headers: { 'Retry-After': '1' } },
  );
}

/** Stores the response before it leaves, so a retry never sees a key whose first answer is lost. */
function recordBeforeSending(res: Response, record: (status: number, contentType: string, body: string) => Promise<void>): void {
  const send = res.send.bind(res);
  res.send = (body?: unknown) => {
    const text = typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('utf8') : JSON.stringify(body);
    res.send = send;
    record(res.statusCode, String(res.getHeader('content-type') ?? 'application/json'), text).then(
      () => send(text),
      (error: unknown) => {
        res.req.log.error({ err: error }, 'Could not store the Idempotency-Key response');
        send(text);
      },
    );
    return res;
  };
}
