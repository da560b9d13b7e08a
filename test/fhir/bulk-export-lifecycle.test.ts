import { count, eq } from 'drizzle-orm';
import type { OperationOutcome } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRetentionActivities } from '../../activities/retention';
import { bulkExportFiles, bulkExports } from '../../drizzle/schema';
import { exportWorkflowId } from '../../workflows/export/contract';
import { systemToken } from '../support/backend-services';
import { ASYNC, finalStatus, get, kickOff, linesOf, manifestOf } from '../support/bulk-export';
import { fhirErrors } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';
import { bearer } from '../support/smart';
import { waitUntil } from '../support/wait';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

/** A new organization's system token (SMART Backend Services) with, when given, its bulk export chaos (set through the reliability settings). */
async function tenantWithChaos(bulkExport?: Record<string, unknown>): Promise<string> {
  const tenant = await service.newTenant();
  if (bulkExport) {
    const patched = await service.call('/v1/sandbox/webhook-reliability', { key: tenant.key, method: 'PATCH', body: { bulk_export: bulkExport } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.bulk_export).toMatchObject(bulkExport);
  }
  return (await systemToken(service, 'system/*.rs', tenant.key)).accessToken;
}

const exportIdOf = (statusUrl: string) => statusUrl.split('/').pop()!;

async function filesStored(exportId: string): Promise<number> {
  const [row] = await service.database.db.select({ files: count() }).from(bulkExportFiles).where(eq(bulkExportFiles.exportId, exportId));
  return row!.files;
}

/** Waits until the running export reports this X-Progress. */
async function progressReaches(statusUrl: string, token: string, progress: string): Promise<void> {
  let seen: string | null = null;
  await waitUntil(
    async () => {
      const response = await get(statusUrl, token);
      expect(response.status).toBe(202);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      seen = response.headers.get('x-progress');
      return seen === progress ? true : undefined;
    },
    { what: `X-Progress: ${progress}`, intervalMs: 100, lastSeen: () => seen },
  );
}

describe('the bounds on an organization’s exports', () => {
  it('hold under concurrency: of 50 kick-offs at once, exactly the running bound is accepted, the rest 429 with Retry-After', async () => {
    // Slow enough that none ends during the test, so the running bound is what decides.
    const token = await tenantWithChaos({ slow: { rate: 1, delay_ms: 60_000 } });
    const bound = service.config.BULK_EXPORTS_IN_FLIGHT_PER_ORGANIZATION;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => service.call('/fhir/R4/Patient/$export?_type=Patient', { headers: { ...ASYNC, ...bearer(token) } })),
    );
    const accepted = answers.filter((answer) => answer.status === 202);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(accepted).toHaveLength(bound);
    expect(refused).toHaveLength(50 - bound);
    for (const answer of refused) {
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect((answer.body as OperationOutcome).issue[0]).toMatchObject({ code: 'throttled' });
    }
    for (const answer of accepted) {
      expect((await fetch(answer.headers.get('content-location')!, { method: 'DELETE', headers: bearer(token) })).status).toBe(202);
    }
  });
});

describe('a bulk export’s life', () => {
  it('answers 202 with X-Progress while it runs, and survives a worker restart in the middle', async () => {
    const token = await tenantWithChaos({ slow: { rate: 1, delay_ms: 1_500 } });
    const statusUrl = await kickOff(service, '/fhir/R4/Patient/$export?_type=Patient,Coverage,Condition', token);
    await progressReaches(statusUrl, token, '1 of 3 types written');
    await service.stopWorker();
    try {
      const stalled = await get(statusUrl, token);
      expect(stalled.status).toBe(202);
    } finally {
      await service.startWorker();
    }
    const manifest = await manifestOf(statusUrl, token);
    expect(manifest.output.map((file) => file.type).sort()).toEqual(['Condition', 'Coverage', 'Patient']);
    expect((await linesOf(manifest.output, token)).length).toBe(
      service.fhirStore.list('Patient').length + service.fhirStore.list('Coverage').length + service.fhirStore.list('Condition').length,
    );
  });

  it('is cancelled by DELETE on its status URL: the workflow stops and its files are gone', async () => {
    const token = await tenantWithChaos({ slow: { rate: 1, delay_ms: 2_000 } });
    const statusUrl = await kickOff(service, '/fhir/R4/Patient/$export?_type=Patient,Coverage,Condition', token);
    const exportId = exportIdOf(statusUrl);
    await progressReaches(statusUrl, token, '1 of 3 types written');
    expect(await filesStored(exportId)).toBeGreaterThan(0);
    const fileUrl = `${statusUrl}/Patient-1.ndjson`;
    expect((await get(fileUrl, token)).status).toBe(200);

    expect((await fetch(statusUrl, { method: 'DELETE', headers: bearer(token) })).status).toBe(202);
    expect((await get(statusUrl, token)).status).toBe(404);
    expect((await get(fileUrl, token)).status).toBe(404);
    expect(await filesStored(exportId)).toBe(0);
    const handle = service.temporal.workflow.getHandle(exportWorkflowId(exportId));
    await waitUntil(async () => ((await handle.describe()).status.name === 'CANCELLED' ? true : undefined), {
      what: 'the export workflow to be cancelled',
    });
    // Nothing was written after the cancel either.
    expect(await filesStored(exportId)).toBe(0);
  });

  it('deletes a finished export’s files on DELETE, and when they expire (the retention Schedule’s purge): then they answer 404', async () => {
    const token = await tenantWithChaos();
    const deleted = await kickOff(service, '/fhir/R4/$export?_type=Patient', token);
    await manifestOf(deleted, token);
    expect((await fetch(deleted, { method: 'DELETE', headers: bearer(token) })).status).toBe(202);
    expect((await get(deleted, token)).status).toBe(404);

    const statusUrl = await kickOff(service, '/fhir/R4/$export?_type=Patient', token);
    const exportId = exportIdOf(statusUrl);
    const manifest = await manifestOf(statusUrl, token);
    const [row] = await service.database.db.select().from(bulkExports).where(eq(bulkExports.id, exportId));
    expect(row!.expiresAt!.getTime() - row!.completedAt!.getTime()).toBe(service.config.BULK_EXPORT_FILE_HOURS * 3_600_000);
    const purge = createRetentionActivities({ db: service.database.db });
    // Before its expiry the purge leaves it.
    await purge.purgeBatch({ target: 'bulk_exports', cutoff: new Date().toISOString(), batchSize: 1_000 });
    expect((await get(manifest.output[0]!.url, token)).status).toBe(200);
    // Its lifetime passes (set back rather than waited for), and the purge deletes it.
    await service.database.db
      .update(bulkExports)
      .set({ expiresAt: new Date(Date.now() - 1_000) })
      .where(eq(bulkExports.id, exportId));
    const purged = await purge.purgeBatch({ target: 'bulk_exports', cutoff: new Date().toISOString(), batchSize: 1_000 });
    expect(purged.rows).toBeGreaterThanOrEqual(1);
    expect((await get(manifest.output[0]!.url, token)).status).toBe(404);
    expect((await get(statusUrl, token)).status).toBe(404);
    expect(await filesStored(exportId)).toBe(0);
  });
});

describe('chaos for bulk exports (the organization’s reliability settings)', () => {
  it('fails an export: the status URL answers 500 with an OperationOutcome and no files', async () => {
    const token = await tenantWithChaos({ fail: { rate: 1 } });
    const statusUrl = await kickOff(service, '/fhir/R4/$export?_type=Patient', token);
    const response = await finalStatus(statusUrl, token);
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    const outcome = (await response.json()) as OperationOutcome;
    expect(outcome.issue[0]!.diagnostics).toContain('bulk_export.fail');
    expect(await filesStored(exportIdOf(statusUrl))).toBe(0);
  });

  it('returns partial output: every nth resource left out, each reported in an error file as an OperationOutcome', async () => {
    const token = await tenantWithChaos({ partial: { rate: 1, every_nth: 3 } });
    const manifest = await manifestOf(await kickOff(service, '/fhir/R4/$export?_type=Patient', token), token);
    const patients = service.fhirStore.list('Patient').length;
    const left = Math.floor(patients / 3);
    expect(manifest.output).toEqual([expect.objectContaining({ type: 'Patient', count: patients - left })]);
    expect(manifest.error).toEqual([expect.objectContaining({ type: 'OperationOutcome', count: left })]);
    const errors = (await linesOf(manifest.error, token)) as OperationOutcome[];
    expect(errors.flatMap((outcome) => fhirErrors(outcome))).toEqual([]);
    const exported = (await linesOf(manifest.output, token)).map((patient) => `Patient/${patient.id}`);
    const reported = errors.map((outcome) => outcome.issue[0]!.expression![0]!);
    expect([...exported, ...reported].sort()).toEqual(service.fhirStore.list('Patient').map((patient) => `Patient/${patient.id}`));
  });

  it('keeps chaos per organization: another organization’s exports are untouched', async () => {
    await tenantWithChaos({ fail: { rate: 1 } });
    const token = await tenantWithChaos();
    const manifest = await manifestOf(await kickOff(service, '/fhir/R4/$export?_type=Patient', token), token);
    expect(manifest.output).toEqual([expect.objectContaining({ type: 'Patient', count: service.fhirStore.list('Patient').length })]);
  });
});
