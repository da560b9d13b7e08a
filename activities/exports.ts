import { and, eq, isNull } from 'drizzle-orm';
import { bulkExportFiles, bulkExports, reliabilityProfiles } from '../drizzle/schema';
import type { FhirStore } from '../fixtures/store';
import type { ExportOutcome, ExportPlan, ExportWorkflowInput } from '../interop/bulk-export/export';
import { exportedResources, exportFiles } from '../interop/bulk-export/files';
import type { ExportRequest } from '../interop/bulk-export/request';
import type { Database } from '../platform/database';
import { DEFAULT_RELIABILITY_PROFILE, type ExportChaos, pickExportChaos, reliabilityProfileSchema } from '../webhooks/chaos';

const HOUR_MS = 60 * 60 * 1000;

/**
 * The bulk export's activities: plan the export the API recorded (picking its chaos once), write one
 * type's files, end it, or discard it. Each answers from the stored record when retried, and none writes to an
 * export that was deleted (DELETE on its status URL) meanwhile.
 */
export function createExportActivities({ db, fhirStore }: { db: Database; fhirStore: FhirStore }) {
  return {
    /** Picks the export's chaos once (a retry, or a second run, finds it picked) and answers the types to write. */
    async planExport(input: ExportWorkflowInput): Promise<ExportPlan> {
      const [profileRow] = await db
        .select({ profile: reliabilityProfiles.profile })
        .from(reliabilityProfiles)
        .where(eq(reliabilityProfiles.organizationId, input.organizationId));
      const profile = profileRow ? reliabilityProfileSchema.parse(profileRow.profile) : DEFAULT_RELIABILITY_PROFILE;
      await db
        .update(bulkExports)
        .set({ chaos: pickExportChaos(profile.bulk_export) })
        .where(and(eq(bulkExports.id, input.exportId), isNull(bulkExports.chaos)));
      const [row] = await db
        .select({ request: bulkExports.request, chaos: bulkExports.chaos })
        .from(bulkExports)
        .where(eq(bulkExports.id, input.exportId));
      return row ? { types: (row.request as ExportRequest).types, chaos: row.chaos as ExportChaos } : 'discarded';
    },

    /** One type's files, written with the progress in one transaction; a retry finds the type written. */
    async writeExportType({ exportId, type }: { exportId: string; type: string }): Promise<'written' | 'discarded'> {
      return db.transaction(async (tx) => {
        // Locked, so a DELETE of the export waits for this step (or this step finds it gone).
        const [row] = await tx
          .select({ request: bulkExports.request, chaos: bulkExports.chaos, typesWritten: bulkExports.typesWritten })
          .from(bulkExports)
          .where(and(eq(bulkExports.id, exportId), eq(bulkExports.status, 'running')))
          .for('update');
        if (!row) return 'discarded';
        if (row.typesWritten.includes(type)) return 'written';
        const chaos = row.chaos as ExportChaos | null;
        const files = exportFiles(type, exportedResources(fhirStore, row.request as ExportRequest, type), chaos?.partialEveryNth ?? null);
        if (files.length > 0) await tx.insert(bulkExportFiles).values(files.map((file) => ({ ...file, exportId })));
        await tx
          .update(bulkExports)
          .set({ typesWritten: [...row.typesWritten, type] })
          .where(eq(bulkExports.id, exportId));
        return 'written';
      });
    },

    /** Ends the export (completed, or failed with its reason) and sets when its files expire; a retry finds it ended. */
    async endExport({
      exportId,
      fileLifetimeHours,
      failure,
    }: {
      exportId: string;
      fileLifetimeHours: number;
      failure: string | null;
    }): Promise<ExportOutcome> {
      const now = new Date();
      const ended = await db.transaction(async (tx) => {
        const [row] = await tx.select({ status: bulkExports.status }).from(bulkExports).where(eq(bulkExports.id, exportId)).for('update');
        if (!row) return 'discarded' as const;
        if (row.status !== 'running') return row.status;
        // A failed export answers an OperationOutcome, never part of its files.
        if (failure !== null) await tx.delete(bulkExportFiles).where(eq(bulkExportFiles.exportId, exportId));
        await tx
          .update(bulkExports)
          .set({
            status: failure === null ? 'completed' : 'failed',
            error: failure,
            completedAt: now,
            expiresAt: new Date(now.getTime() + fileLifetimeHours * HOUR_MS),
          })
          .where(eq(bulkExports.id, exportId));
        return failure === null ? ('completed' as const) : ('failed' as const);
      });
      return ended;
    },

    /** A cancelled export goes with its files (the API deletes it at once too; this is for a cancel that came another way, e.g. the Web UI). */
    async discardExport({ exportId }: { exportId: string }): Promise<void> {
      await db.delete(bulkExports).where(eq(bulkExports.id, exportId));
    },
  };
}
