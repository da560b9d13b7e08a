import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { bulkExportFiles, bulkExports, reliabilityProfiles } from '../../drizzle/schema';
import type { ExportRequest } from '../../interop/bulk-export/request';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { registerClient } from '../../smart/clients';
import { DEFAULT_RELIABILITY_PROFILE } from '../../webhooks/chaos';
import { exportWorkflowId } from '../../workflows/export/contract';
import { exportWorkflow } from '../../workflows/export/workflow';
import { durationMillis, useTimeSkipping } from '../support/time-skipping';

const suite = useTimeSkipping();

describe('the bulk export workflow with the slow chaos at its longest', () => {
  // 10 minutes of workflow time before each of three types; the test's own 30 s timeout holds it to seconds.
  it('waits its durable 10-minute timer before each type, writes every type, and ends completed with its expiry', async () => {
    const organization = await createOrganization(suite.db, { name: 'Time-skipping Export Health (synthetic)', webhookUrl: null });
    const delayMs = 600_000;
    await suite.db.insert(reliabilityProfiles).values({
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
    const { client } = await registerClient(suite.db, organization.id, {
      name: 'Time-skipping export client (synthetic)',
      redirectUris: [],
      scope: null,
      tokenEndpointAuthMethod: 'private_key_jwt',
      launchUri: null,
      jwks: { keys: [] },
      jwksUri: null,
    });
    const exportId = newId('exp');
    const transactionTime = new Date();
    await suite.db.insert(bulkExports).values({
      id: exportId,
      organizationId: organization.id,
      clientId: client.id,
      status: 'running',
      request,
      typesTotal: types.length,
      transactionTime,
      expiresAt: new Date(transactionTime.getTime() + 7 * 24 * 3_600_000),
    });

    const handle = await suite.environment.start(exportWorkflow, {
      workflowId: exportWorkflowId(exportId),
      args: [{ exportId, organizationId: organization.id, fileLifetimeHours: 24 }],
    });
    expect(await handle.result()).toBe('completed');

    const [row] = await suite.db.select().from(bulkExports).where(eq(bulkExports.id, exportId));
    expect(row).toMatchObject({ status: 'completed', typesWritten: types, error: null });
    expect(row!.expiresAt.getTime() - row!.completedAt!.getTime()).toBe(24 * 3_600_000);
    const files = await suite.db
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
