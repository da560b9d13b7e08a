import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type DatabaseHandle, type Listen, openDatabase } from '../../platform/database';
import { createNotifiedCache, type NotifiedCacheOptions } from '../../platform/notified-cache';
import { waitUntil } from '../support/wait';

/**
 * The mechanics both per-process caches share (API keys, SMART access tokens), on the real
 * database's LISTEN/NOTIFY: each test has a channel of its own and notifies it by SQL.
 */
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-cache-test-'));
let database: DatabaseHandle;
beforeAll(async () => {
  database = await openDatabase({ databaseUrl: inject('databaseUrl'), dataDir: scratch });
});
afterAll(async () => {
  await database?.close();
  rmSync(scratch, { recursive: true, force: true });
});

type Answer = { found: true; key: string; ids: string[]; expiresAt?: number } | { found: false };
type Found = Extract<Answer, { found: true }>;

/**
 * A cache on a fresh channel whose lookups answer from `answers` (unknown keys are not found) and are
 * counted; `handled` lists the notifications it has acted on, `listened` how often LISTEN (re)started.
 */
function testCache(answers: Record<string, Omit<Found, 'found' | 'key'>>, options: Partial<NotifiedCacheOptions<Answer, Found>> = {}) {
  const channel = `test_${randomUUID().replaceAll('-', '')}`;
  const lookUps: string[] = [];
  const handled: string[] = [];
  let listened = 0;
  const listen: Listen = (name, onNotify, onListen) =>
    database.listen(
      name,
      (payload) => {
        onNotify(payload);
        handled.push(payload);
      },
      () => {
        onListen();
        listened += 1;
      },
    );
  const cache = createNotifiedCache<Answer, Found>({
    channel,
    listen,
    lookUp: async (key) => {
      lookUps.push(key);
      const answer = answers[key];
      return answer ? { found: true, key, ...answer } : { found: false };
    },
    keeps: (answer): answer is Found => answer.found,
    idsOf: (answer) => answer.ids,
    expiresAt: (answer) => answer.expiresAt ?? Number.POSITIVE_INFINITY,
    maxAgeMs: 60_000,
    maxEntries: 100,
    ...options,
  });
  return {
    cache,
    lookUps,
    listening: () => waitUntil(() => (listened > 0 ? true : undefined), { what: 'LISTEN' }),
    async notify(id: string) {
      await database.db.execute(sql`select pg_notify(${channel}, ${id})`);
      await waitUntil(() => (handled.includes(id) ? true : undefined), { what: `the notification ${id}`, timeoutMs: 1_000 });
    },
    /** How many times each key was looked up. */
    counts: () => Object.fromEntries(Object.keys(answers).map((key) => [key, lookUps.filter((looked) => looked === key).length])),
  };
}

describe('a cache of positive lookups invalidated by NOTIFY', () => {
  it('remembers nothing until LISTEN is in place, then positive answers only', async () => {
    const test = testCache({ active: { ids: ['a'] } });
    // Before the LISTEN's round trip: every lookup asks.
    await test.cache.get('active');
    await test.cache.get('active');
    expect(test.lookUps).toEqual(['active', 'active']);

    await test.listening();
    expect(await test.cache.get('active')).toMatchObject({ found: true, key: 'active' });
    expect(await test.cache.get('active')).toMatchObject({ found: true, key: 'active' });
    expect(await test.cache.get('unknown')).toEqual({ found: false });
    expect(await test.cache.get('unknown')).toEqual({ found: false });
    expect(test.lookUps).toEqual(['active', 'active', 'active', 'unknown', 'unknown']);
  });

  it('forgets the answers naming a notified id, and only those; forget(id) does the same at once', async () => {
    const test = testCache({ one: { ids: ['t1', 'grant'] }, two: { ids: ['t2', 'grant'] }, other: { ids: ['t3', 'another'] } });
    await test.listening();
    const getAll = async () => {
      for (const key of ['one', 'two', 'other']) await test.cache.get(key);
    };
    await getAll();
    await test.notify('t1');
    await getAll();
    expect(test.counts()).toEqual({ one: 2, two: 1, other: 1 });
    await test.notify('grant');
    await getAll();
    expect(test.counts()).toEqual({ one: 3, two: 2, other: 1 });
    test.cache.forget('another');
    await getAll();
    expect(test.counts()).toEqual({ one: 3, two: 2, other: 2 });
  });

  it('does not remember an answer whose lookup was under way when a notification came', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const lookUps: string[] = [];
    const test = testCache(
      {},
      {
        lookUp: async (key) => {
          lookUps.push(key);
          if (lookUps.length === 1) await gate;
          return { found: true, key, ids: [key] };
        },
      },
    );
    await test.listening();
    const racing = test.cache.get('slow');
    // Any row's change counts: the answer being read may predate it.
    await test.notify('some-other-row');
    release();
    await racing;
    await test.cache.get('slow');
    await test.cache.get('slow');
    expect(lookUps).toEqual(['slow', 'slow']);
  });

  it('sends one lookup for callers that miss together, and a new one for a caller after a change', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const lookUps: string[] = [];
    const test = testCache(
      {},
      {
        lookUp: async (key) => {
          lookUps.push(key);
          if (lookUps.length === 1) await gate;
          return { found: true, key, ids: [key] };
        },
      },
    );
    await test.listening();
    const together = Array.from({ length: 8 }, () => test.cache.get('busy'));
    expect(lookUps).toEqual(['busy']);
    // A caller after a change must not take the answer of a lookup begun before it.
    await test.notify('busy');
    const after = test.cache.get('busy');
    expect(lookUps).toEqual(['busy', 'busy']);
    release();
    for (const answer of [...(await Promise.all(together)), await after]) expect(answer).toMatchObject({ found: true, key: 'busy' });
  });

  it('never serves an answer at or past its own expiry, and asks again past the max age', async () => {
    const answers: Parameters<typeof testCache>[0] = { aging: { ids: ['a'] }, expiring: { ids: ['e'] } };
    const test = testCache(answers, { maxAgeMs: 1_000 });
    await test.listening();
    answers.expiring!.expiresAt = Date.now() + 100;
    await test.cache.get('aging');
    await test.cache.get('expiring');
    await test.cache.get('aging');
    await test.cache.get('expiring');
    expect(test.counts()).toEqual({ aging: 1, expiring: 1 });
    await sleep(150);
    await test.cache.get('aging');
    await test.cache.get('expiring');
    await test.cache.get('expiring');
    expect(test.counts()).toEqual({ aging: 1, expiring: 3 });
    await sleep(1_000);
    await test.cache.get('aging');
    expect(test.counts()).toEqual({ aging: 2, expiring: 3 });
  });

  it('hands out at once only an answer get would give without a lookup: none before LISTEN, after a notification or past its age', async () => {
    const test = testCache({ kept: { ids: ['k'] } }, { maxAgeMs: 300 });
    await test.cache.get('kept');
    expect(test.cache.remembered('kept')).toBeUndefined();
    await test.listening();
    expect(test.cache.remembered('kept')).toBeUndefined();
    await test.cache.get('kept');
    expect(test.cache.remembered('kept')).toMatchObject({ found: true, key: 'kept' });
    expect(test.cache.remembered('unknown')).toBeUndefined();
    await test.notify('k');
    expect(test.cache.remembered('kept')).toBeUndefined();
    await test.cache.get('kept');
    expect(test.cache.remembered('kept')).toMatchObject({ found: true });
    await sleep(350);
    expect(test.cache.remembered('kept')).toBeUndefined();
  });

  it('starts over when full', async () => {
    const test = testCache({ a: { ids: ['a'] }, b: { ids: ['b'] }, c: { ids: ['c'] } }, { maxEntries: 2 });
    await test.listening();
    for (const key of ['a', 'b', 'c', 'c', 'a']) await test.cache.get(key);
    expect(test.counts()).toEqual({ a: 2, b: 1, c: 1 });
  });
  it('asks the database again while LISTEN is down, and serves what it remembers only when the database is out of reach', async () => {
    let drop = () => {};
    let relisten = () => {};
    const listen: Listen = async (_channel, _onNotify, onListen, onDrop) => {
      onListen();
      drop = onDrop!;
      relisten = onListen;
    };
    let outage = false;
    let revoked = false;
    const lookUps: string[] = [];
    const cache = createNotifiedCache<Answer, Found>({
      channel: 'unused',
      listen,
      lookUp: async (key) => {
        lookUps.push(key);
        if (outage) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        return revoked ? { found: false } : { found: true, key, ids: [key] };
      },
      keeps: (answer): answer is Found => answer.found,
      idsOf: (answer) => answer.ids,
      maxAgeMs: 60_000,
      maxEntries: 10,
    });
    await cache.get('key');
    await cache.get('key');
    expect(lookUps).toHaveLength(1);

    drop();
    await cache.get('key');
    expect(lookUps).toHaveLength(2);
    outage = true;
    expect(await cache.get('key')).toMatchObject({ found: true });
    expect(lookUps).toHaveLength(3);
    await expect(cache.get('never-seen')).rejects.toThrow('ECONNREFUSED');

    // Back, but LISTEN is not yet: a revocation made meanwhile is seen by the next lookup.
    outage = false;
    revoked = true;
    expect(await cache.get('key')).toEqual({ found: false });
    outage = true;
    await expect(cache.get('key')).rejects.toThrow('ECONNREFUSED');

    outage = false;
    revoked = false;
    relisten();
    await cache.get('key');
    await cache.get('key');
    expect(lookUps).toHaveLength(7);
  });
});
