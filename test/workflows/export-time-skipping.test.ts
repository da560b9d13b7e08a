import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bulkExportFiles, bulkExports, reliabilityProfiles } from '../../drizzle/schema';
import type { ExportRequest } from '../../interop/bulk-export/request';
import { type DatabaseHandle, openDatabase } from '../../platform/database';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { DEFAULT_RELIABILITY_PROFILE } from '../../webhooks/chaos';
import { exportWorkflowId } from '../../workflows/export/contract';
import { exportWorkflow } from '../../workflows/export/workflow';
import { durationMillis, type TimeSkippingEnvironment, timeSkippingEnvironment } from '../support/time-skipping';

let database: DatabaseHandle;
let environment: TimeSkippingEnvironment;
beforeAll(async () => {
  database = await openDatabase({ databaseUrl: inject('databaseUrl'), dataDir: '.data' });
  environment = await timeSkippingEnvironment(database.db);
});
afterAll(async () => {
  await environment.stop();
  await database.close();
});

describe('the bulk export workflow with the slow chaos at its longest', () => {
  // 10 minutes of workflow time before each of three types; the test's own 30 s timeout holds it to seconds.
  it('waits its durable 10-minute timer before each type, writes every type, and ends completed with its expiry', async () => {
    const organization = await createOrganization(database.db, { name: 'Time-skipping Export Health (synthetic)', webhookUrl: null });
    const delayMs = 600_000;
    await database.db.insert(reliabilityProfiles).values({
      organizationId: organization.id,
      profile: { ...DEFAULT_RELIABILITY_PROFILE, bulk_export: { ...DEFAULT_RELIABILITY_PROFILE.bulk_export, slow: { rate: 1, delay_ms: delayMs } } },
    });
    const types = ['Patient', 'Coverage', 'Claim'];
    const request: ExportRequest = {
      level: 'system',
      groupId: null,
      types,
      since: null,
      typeFilters: {},
      url: 'http://sandbox.test/fhir/R4/$export',
    };
    const exportId = newId('exp');
    const transactionTime = new Date();
    await database.db.insert(bulkExports).values({
      id: exportId,
      organizationId: organization.id,
      status: 'running',
      request,
      typesTotal: types.length,
      transactionTime,
      expiresAt: new Date(transactionTime.getTime() + 7 * 24 * 3_600_000),
    });

    const handle = await environment.start(exportWorkflow, {
      workflowId: exportWorkflowId(exportId),
      args: [{ exportId, organizationId: organization.id, fileLifetimeHours: 24 }],
    });
    expect(await handle.result()).toBe('completed');

    const [row] = await database.db.select().from(bulkExports).where(eq(bulkExports.id, exportId));
    expect(row).toMatchObject({ status: 'completed', typesWritten: types, error: null });
    expect(row!.expiresAt.getTime() - row!.completedAt!.getTime()).toBe(24 * 3_600_000);
    const files = await database.db
      .select({ resourceType: bulkExportFiles.resourceType })
      .from(bulkExportFiles)
      .where(eq(bulkExportFiles.exportId, exportId));
    expect(new Set(files.map((file) => file.resourceType))).toEqual(new Set(types));

    const events = (await handle.fetchHistory()).events ?? [];
    const timers = events
      .filter((event) => event.timerStartedEventAttributes)
      .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
    expect(timers).toEqual(types.map(() => delayMs));
    expect(events.filter((event) => event.timerFiredEventAttributes)).toHaveLength(types.length);
  });
});
