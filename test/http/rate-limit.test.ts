import { randomUUID } from 'node:crypto';
import express from 'express';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { problemHandler } from '../../api/http/problem-handler';
import { perKeyRateLimit } from '../../api/http/rate-limit';
import { type DatabaseHandle, openDatabase } from '../../platform/database';
import { listen } from '../../runtime/services';
import { call } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * The shared budget with a limit large enough that each counter answers part of it on its own before
 * writing: two counters (as two API processes have) on one database, each behind its own server.
 */
const LIMIT = 40;
let database: DatabaseHandle;
const servers: { url: string; close(): Promise<void> }[] = [];

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: inject('databaseUrl'), dataDir: '.data' });
  for (let i = 0; i < 2; i += 1) {
    const app = express();
    app.use((req, res, next) => {
      res.locals.auth = { organizationId: 'org_test', apiKeyId: String(req.headers['x-key']) };
      next();
    });
    app.use(perKeyRateLimit(database.db, LIMIT));
    app.get('/', (_req, res) => {
      res.json({ ok: true });
    });
    app.use(problemHandler);
    const server = await listen(app, '127.0.0.1', 0, 1);
    servers.push({ url: `http://127.0.0.1:${server.port}`, close: server.close });
  }
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await database?.close();
});

describe('the per-key rate limit across two processes', () => {
  it('admits the budget and at most an eighth more in all, then refuses on both with Retry-After', async () => {
    await waitUntil(() => (new Date().getSeconds() < 40 ? true : undefined), { what: 'the start of a minute', timeoutMs: 25_000, intervalMs: 200 });
    const headers = { 'x-key': `key_${randomUUID()}` };
    let admitted = 0;
    for (let i = 0; i < LIMIT * 2; i += 1) {
      const response = await call(servers[i % 2]!.url, '/', { headers });
      if (response.status === 200) admitted += 1;
      else expect(response.status).toBe(429);
      // The IETF draft-8 headers on every answer: what is left of the budget, and the policy.
      expect(response.headers.get('ratelimit')).toMatch(/^"40-in-1min"; r=\d+; t=\d+$/);
      expect(response.headers.get('ratelimit-policy')).toMatch(/^"40-in-1min"; q=40; w=60; pk=:[A-Za-z0-9+/=]+:$/);
    }
    expect(admitted).toBeGreaterThanOrEqual(LIMIT);
    expect(admitted).toBeLessThanOrEqual(LIMIT + LIMIT / 8);
    for (const server of servers) {
      const refused = await call(server.url, '/', { headers });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('ratelimit')).toMatch(/^"40-in-1min"; r=0; t=\d+$/);
    }
  });
});
