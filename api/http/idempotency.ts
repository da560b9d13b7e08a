import { createHash } from 'node:crypto';
import { and, eq, lt, or } from 'drizzle-orm';
import type { RequestHandler, Response } from 'express';
import { idempotencyKeys } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { ApiProblem } from './problem';

const RETENTION_MS = 24 * 60 * 60 * 1000;
/** A request still in progress after this long belongs to a process that died. */
const ABANDONED_AFTER_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * `Idempotency-Key` on POSTs that create work (CONVENTIONS.md): the same key and body within 24 h
 * answers the first response again (`Idempotent-Replayed: true`) and creates nothing; the same key
 * with another body is 422; a retry while the first is still running is 409. Server errors release
 * the key so the request can be retried. A route may store a replay body without its one-time
 * secrets (`res.locals.replayBody`, see RouteDefinition.replayed).
 */
export function idempotency(db: Database): RequestHandler {
  return async (req, res, next) => {
    const key = req.header('idempotency-key');
    if (key === undefined) return next();
    if (!KEY_PATTERN.test(key)) {
      throw new ApiProblem(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters, e.g. a UUID.');
    }
    // Mounted after authenticate (api/http/route.ts), so the key's organization is known.
    const { organizationId } = res.locals.auth!;
    const requestHash = createHash('sha256')
      .update(`${req.method} ${req.path}\n${JSON.stringify(req.body ?? null)}`)
      .digest('hex');
    const thisKey = and(eq(idempotencyKeys.organizationId, organizationId), eq(idempotencyKeys.key, key));

    // Expired keys go, and so do claims a crashed process left in progress, which would block retries.
    await db
      .delete(idempotencyKeys)
      .where(
        and(
          eq(idempotencyKeys.organizationId, organizationId),
          or(
            lt(idempotencyKeys.expiresAt, new Date()),
            and(eq(idempotencyKeys.state, 'in_progress'), lt(idempotencyKeys.createdAt, new Date(Date.now() - ABANDONED_AFTER_MS))),
          ),
        ),
      );
    const claimed = await db
      .insert(idempotencyKeys)
      .values({ organizationId, key, requestHash, state: 'in_progress', expiresAt: new Date(Date.now() + RETENTION_MS) })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });

    if (claimed.length === 0) {
      const [first] = await db.select().from(idempotencyKeys).where(thisKey);
      if (!first)
        throw new ApiProblem(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key has just finished; retry it.', {
          headers: { 'Retry-After': '1' },
        });
      if (first.requestHash !== requestHash) {
        throw new ApiProblem(
          422,
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
        );
      }
      if (first.state === 'in_progress') {
        throw new ApiProblem(
          409,
          'idempotency_request_in_progress',
          'The first request with this Idempotency-Key is still being processed; retry shortly.',
          {
            headers: { 'Retry-After': '1' },
          },
        );
      }
      res.setHeader('Idempotent-Replayed', 'true');
      res
        .status(first.responseStatus!)
        .type(first.responseContentType ?? 'application/json')
        .send(first.responseBody);
      return;
    }

    recordBeforeSending(res, async (status, contentType, body) => {
      if (status >= 500) {
        await db.delete(idempotencyKeys).where(thisKey);
      } else {
        const stored = res.locals.replayBody ?? body;
        await db
          .update(idempotencyKeys)
          .set({ state: 'completed', responseStatus: status, responseContentType: contentType, responseBody: stored })
          .where(thisKey);
      }
    });
    next();
  };
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
