import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { and, eq } from 'drizzle-orm';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptWork } from '../../api/http/accepted-work';
import { idempotency } from '../../api/http/idempotency';
import { problemHandler } from '../../api/http/problem-handler';
import { requestContext } from '../../api/http/request-context';
import { idempotencyKeys } from '../../drizzle/schema';
import { newId } from '../../platform/ids';
import { createLogger } from '../../platform/logger';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

/**
 * The Idempotency-Key middleware as the API mounts it, in front of a route that accepts work the way
 * every workflow-starting route does (acceptWork), whose first request can be held between taking the
 * key and planning its work: the window in which a stalled request's claim is taken over.
 */
async function startAcceptingApp(organizationId: string) {
  const started: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const app = express();
  requestContext(app, createLogger('silent'));
  app.use(express.json());
  app.use((_req, res, next) => {
    res.locals.auth = { organizationId, apiKeyId: 'test' };
    next();
  });
  app.post('/work', idempotency(service.database.db), async (req, res) => {
    if (req.header('x-hold') === 'yes') await held;
    const answer = await acceptWork({
      res,
      plan: () => ({ id: newId('dlv') }),
      describe: (plan) => `work ${plan.id}`,
      start: async (plan) => {
        started.push(plan.id);
      },
      answer: async (plan) => plan,
      fallback: (plan) => plan,
    });
    res.status(202).json(answer);
  });
  app.use(problemHandler);
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/work`;
  return {
    started,
    release,
    send: async (key: string, hold = false, query = '') => {
      const response = await fetch(`${url}${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key, ...(hold ? { 'x-hold': 'yes' } : {}) },
        body: JSON.stringify({ what: 'synthetic work' }),
      });
      return { status: response.status, body: (await response.json()) as any };
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe('an Idempotency-Key whose first request stalls past the takeover', () => {
  it('starts one piece of work: the stalled request, its claim taken over, can no longer plan or answer', async () => {
    const tenant = await service.newTenant();
    const app = await startAcceptingApp(tenant.organizationId);
    try {
      const key = randomUUID();
      const thisKey = and(eq(idempotencyKeys.organizationId, tenant.organizationId), eq(idempotencyKeys.key, key));
      const first = app.send(key, true);
      await waitUntil(async () => ((await service.database.db.select().from(idempotencyKeys).where(thisKey)).length > 0 ? true : undefined), {
        what: 'the first request claiming the key',
      });
      // Forced: the claim looks abandoned (older than the takeover age), as if its request had stalled a minute.
      await service.database.db
        .update(idempotencyKeys)
        .set({ claimedAt: new Date(Date.now() - 5 * 60_000) })
        .where(thisKey);

      const second = await app.send(key);
      expect(second.status).toBe(202);
      app.release();
      const stalled = await first;
      expect(stalled.status).toBe(409);
      expect(stalled.body.code).toBe('idempotency_request_in_progress');

      expect(app.started).toEqual([second.body.id]);
      // A retry of either gets the answer the key holds, and starts nothing more.
      const retried = await app.send(key);
      expect(retried).toEqual(second);
      expect(app.started).toHaveLength(1);
    } finally {
      app.release();
      await app.close();
    }
  });

  it('tells requests apart by their query string too', async () => {
    const tenant = await service.newTenant();
    const app = await startAcceptingApp(tenant.organizationId);
    try {
      const key = randomUUID();
      expect((await app.send(key, false, '?connection_id=a')).status).toBe(202);
      const other = await app.send(key, false, '?connection_id=b');
      expect(other.status).toBe(422);
      expect(other.body.code).toBe('idempotency_key_reused');
      expect((await app.send(key, false, '?connection_id=a')).status).toBe(202);
      expect(app.started).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});
