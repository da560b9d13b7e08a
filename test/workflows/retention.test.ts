import { randomUUID } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aggregatorQueries,
  deliveries,
  deliveryAttempts,
  idempotencyKeys,
  smartAuthorizations,
  smartClientAssertions,
  smartClients,
  smartLaunches,
  smartTokens,
} from '../../drizzle/schema';
import { newId } from '../../platform/ids';
import { createLogger } from '../../platform/logger';
import { ensureRetentionSchedule } from '../../runtime/retention-schedule';
import type { AttemptOutcome, DeliveryStatusValue } from '../../webhooks/vocabulary';
import { retentionWorkflow } from '../../workflows/retention/workflow';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

const DAY_MS = 24 * 60 * 60 * 1000;
const logger = createLogger('silent', { pretty: false });

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ DELIVERY_RETENTION_DAYS: '30', DELIVERY_MAX_RETENTION_DAYS: '90' });
});
afterAll(() => service.stop());

/** One organization's rows, each either past its use (`expired`) or still live (`live`). */
async function seed() {
  const db = service.database.db;
  const tenant = await service.newTenant();
  const now = Date.now();
  const past = new Date(now - 60_000);
  const future = new Date(now + 3600_000);

  const clientId = newId('cli');
  await db.insert(smartClients).values({
    id: clientId,
    organizationId: tenant.organizationId,
    name: 'Retention app',
    redirectUris: ['http://127.0.0.1:9/callback'],
    tokenEndpointAuthMethod: 'none',
  });
  const authorization = (expiresAt: Date, exchangedAt: Date | null) => ({
    id: `auth_${randomUUID()}`,
    clientId,
    launchKind: 'standalone' as const,
    redirectUri: 'http://127.0.0.1:9/callback',
    state: 'synthetic',
    scope: 'patient/*.read',
    codeChallenge: 'synthetic',
    expiresAt,
    exchangedAt,
  });
  const codes = { expired: authorization(past, null), live: authorization(future, null), grant: authorization(past, past) };
  await db.insert(smartAuthorizations).values(Object.values(codes));

  const assertion = (expiresAt: Date) => ({ clientId, jti: randomUUID(), expiresAt });
  const assertions = { expired: assertion(past), live: assertion(future) };
  await db.insert(smartClientAssertions).values(Object.values(assertions));

  const launch = (expiresAt: Date) => ({ handleHash: randomUUID(), clientId, patientId: 'syn-pat-0001', expiresAt });
  const launches = { expired: launch(past), live: launch(future) };
  await db.insert(smartLaunches).values(Object.values(launches));

  const token = (expiresAt: Date, revokedAt: Date | null) => ({
    id: randomUUID(),
    authorizationId: codes.grant.id,
    kind: 'refresh' as const,
    scope: 'patient/*.read',
    expiresAt,
    revokedAt,
  });
  const tokens = { expired: token(past, null), revoked: token(future, past), live: token(future, null) };
  await db.insert(smartTokens).values(Object.values(tokens));

  const key = (expiresAt: Date) => ({
    organizationId: tenant.organizationId,
    key: randomUUID(),
    requestHash: 'synthetic',
    state: 'completed' as const,
    expiresAt,
  });
  const keys = { expired: [key(past), key(past), key(past)], live: key(future) };
  await db.insert(idempotencyKeys).values([...keys.expired, keys.live]);

  const delivery = async (
    ageDays: number,
    status: DeliveryStatusValue,
    attempts: number,
    { updatedAgeDays = ageDays, lastOutcome = 'failed' as AttemptOutcome } = {},
  ) => {
    const createdAt = new Date(now - ageDays * DAY_MS);
    const id = newId('dlv');
    await db.insert(deliveries).values({
      id,
      organizationId: tenant.organizationId,
      event: 'adt.patient.admitted',
      environment: 'sandbox',
      status,
      envelopeBody: '{}',
      createdAt,
      updatedAt: new Date(now - updatedAgeDays * DAY_MS),
    });
    for (let number = 1; number <= attempts; number += 1) {
      await db.insert(deliveryAttempts).values({
        id: newId('att'),
        deliveryId: id,
        number,
        trigger: 'initial',
        startedAt: createdAt,
        durationMs: 5,
        outcome: number === attempts ? lastOutcome : 'failed',
      });
    }
    return id;
  };
  const deliveryIds = {
    expired: await delivery(31, 'succeeded', 2),
    // Older than the retention age but still waiting on a retry: kept.
    stillRetrying: await delivery(31, 'retrying', 1),
    live: await delivery(29, 'failed', 1),
    // Old, but replayed just now: its replay may still be running.
    replayed: await delivery(31, 'succeeded', 2, { updatedAgeDays: 0 }),
    // Replayed just now too, but it arrived DELIVERY_MAX_RETENTION_DAYS ago: a replay does not keep it longer.
    replayedPastMaximum: await delivery(91, 'succeeded', 2, { updatedAgeDays: 0 }),
    // Old and cancelled, but its last attempt is still being sent (a cancel answers mid-attempt).
    stillSending: await delivery(31, 'cancelled', 1, { lastOutcome: 'sending' }),
  };
  const query = async (ageDays: number) => {
    const id = newId('aq');
    await db.insert(aggregatorQueries).values({
      id,
      organizationId: tenant.organizationId,
      status: 'completed',
      request: { patient: { family: 'Synthetic' } },
      createdAt: new Date(now - ageDays * DAY_MS),
    });
    return id;
  };
  const queryIds = { expired: await query(31), live: await query(29) };
  return { codes, launches, tokens, assertions, keys, deliveryIds, queryIds };
}

async function remaining(seeded: Awaited<ReturnType<typeof seed>>) {
  const db = service.database.db;
  const ids = <T>(rows: T[], pick: (row: T) => string) => rows.map(pick).sort();
  return {
    codes: ids(
      await db
        .select()
        .from(smartAuthorizations)
        .where(inArray(smartAuthorizations.id, [seeded.codes.expired.id, seeded.codes.live.id, seeded.codes.grant.id])),
      (row) => row.id,
    ),
    launches: ids(
      await db
        .select()
        .from(smartLaunches)
        .where(inArray(smartLaunches.handleHash, [seeded.launches.expired.handleHash, seeded.launches.live.handleHash])),
      (row) => row.handleHash,
    ),
    assertions: ids(
      await db
        .select()
        .from(smartClientAssertions)
        .where(inArray(smartClientAssertions.jti, [seeded.assertions.expired.jti, seeded.assertions.live.jti])),
      (row) => row.jti,
    ),
    tokens: ids(
      await db
        .select()
        .from(smartTokens)
        .where(
          inArray(
            smartTokens.id,
            Object.values(seeded.tokens).map((token) => token.id),
          ),
        ),
      (row) => row.id,
    ),
    keys: ids(
      await db
        .select()
        .from(idempotencyKeys)
        .where(
          inArray(
            idempotencyKeys.key,
            [...seeded.keys.expired, seeded.keys.live].map((key) => key.key),
          ),
        ),
      (row) => row.key,
    ),
    deliveries: ids(
      await db
        .select()
        .from(deliveries)
        .where(inArray(deliveries.id, Object.values(seeded.deliveryIds))),
      (row) => row.id,
    ),
    attemptsOfExpired: (await db.select().from(deliveryAttempts).where(eq(deliveryAttempts.deliveryId, seeded.deliveryIds.expired))).length,
    queries: ids(
      await db
        .select()
        .from(aggregatorQueries)
        .where(inArray(aggregatorQueries.id, Object.values(seeded.queryIds))),
      (row) => row.id,
    ),
  };
}

function expectOnlyLiveRows(left: Awaited<ReturnType<typeof remaining>>, seeded: Awaited<ReturnType<typeof seed>>): void {
  expect(left).toEqual({
    codes: [seeded.codes.live.id, seeded.codes.grant.id].sort(),
    launches: [seeded.launches.live.handleHash],
    tokens: [seeded.tokens.live.id],
    assertions: [seeded.assertions.live.jti],
    keys: [seeded.keys.live.key],
    deliveries: [seeded.deliveryIds.stillRetrying, seeded.deliveryIds.live, seeded.deliveryIds.replayed, seeded.deliveryIds.stillSending].sort(),
    attemptsOfExpired: 0,
    queries: [seeded.queryIds.live],
  });
}

describe('retention', () => {
  it('is a Temporal Schedule, created or updated at start, whose runs purge expired rows and keep live ones', async () => {
    const scheduleId = await ensureRetentionSchedule(service.temporal, service.config, logger);
    // A second process starting, with another retention age: the same Schedule, brought up to date.
    expect(await ensureRetentionSchedule(service.temporal, { ...service.config, DELIVERY_RETENTION_DAYS: 7 }, logger)).toBe(scheduleId);
    expect(await ensureRetentionSchedule(service.temporal, service.config, logger)).toBe(scheduleId);
    const schedule = service.temporal.schedule.getHandle(scheduleId);
    try {
      const described = await schedule.describe();
      expect(scheduleId).toBe(`retention-${service.taskQueue}`);
      expect(described.spec.intervals).toMatchObject([{ every: 3600_000 }]);
      expect(described.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'retentionWorkflow',
        taskQueue: service.taskQueue,
        args: [{ deliveryRetentionDays: 30, deliveryMaxRetentionDays: 90 }],
      });
      expect(described.policies.overlap).toBe('SKIP');

      const seeded = await seed();
      await schedule.trigger();
      const run = await waitUntil(async () => (await schedule.describe()).info.recentActions[0]?.action.workflow, {
        what: 'the Schedule starting a retention run',
      });
      const counts = await service.temporal.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result();
      // At least this organization's rows; other tests' expired rows may go in the same run.
      expect(counts.idempotency_keys).toBeGreaterThanOrEqual(3);
      expect(counts.authorization_codes).toBeGreaterThanOrEqual(1);
      expect(counts.launch_handles).toBeGreaterThanOrEqual(1);
      expect(counts.tokens).toBeGreaterThanOrEqual(2);
      expect(counts.client_assertions).toBeGreaterThanOrEqual(1);
      expect(counts.deliveries).toBeGreaterThanOrEqual(1);
      expect(counts.delivery_attempts).toBeGreaterThanOrEqual(2);
      expect(counts.aggregator_queries).toBeGreaterThanOrEqual(1);
      expectOnlyLiveRows(await remaining(seeded), seeded);
    } finally {
      await schedule.delete();
    }
  });

  it('purges in batches until a batch comes back short', async () => {
    const seeded = await seed();
    const workflowId = `retention-batches-${randomUUID()}`;
    const counts = await service.temporal.workflow.execute(retentionWorkflow, {
      workflowId,
      taskQueue: service.taskQueue,
      args: [{ deliveryRetentionDays: 30, deliveryMaxRetentionDays: 90, batchSize: 2 }],
    });
    expect(counts.idempotency_keys).toBeGreaterThanOrEqual(3);
    expectOnlyLiveRows(await remaining(seeded), seeded);
    const history = await service.temporal.workflow.getHandle(workflowId).fetchHistory();
    const batches = (history.events ?? []).filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'purgeBatch');
    // Three expired keys in batches of two take at least two batches; every other target at least one.
    expect(batches.length).toBeGreaterThanOrEqual(6);
  });
});
