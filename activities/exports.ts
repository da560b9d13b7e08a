import type { FhirStore } from '../fixtures/store';
import type { ExportOutcome, ExportPlan, ExportWorkflowInput } from '../interop/bulk-export/export';
import { exportedResources, exportFiles } from '../interop/bulk-export/files';
import { deleteExport, pickChaosOnce, recordExportEnd, recordExportType } from '../interop/bulk-export/records';
import type { Database } from '../platform/database';
import { pickExportChaos } from '../webhooks/chaos';
import { loadReliabilityProfile } from '../webhooks/reliability-profiles';

const HOUR_MS = 60 * 60 * 1000;

/**
 * The bulk export's activities: plan the export the API recorded (picking its chaos once), write one
 * type's files, end it, or discard it. Each answers from the stored record when retried, and none writes to an
 * export that was deleted (DELETE on its status URL) meanwhile (interop/bulk-export/records.ts).
 */
export function createExportActivities({ db, fhirStore }: { db: Database; fhirStore: FhirStore }) {
  return {
    /** Picks the export's chaos once (a retry, or a second run, finds it picked) and answers the types to write. */
    async planExport(input: ExportWorkflowInput): Promise<ExportPlan> {
      const { profile } = await loadReliabilityProfile(db, input.organizationId);
      const stored = await pickChaosOnce(db, input.exportId, pickExportChaos(profile.bulk_export));
      return stored ? { types: stored.request.types, chaos: stored.chaos } : 'discarded';
    },

    /** One type's files, written with the progress in one transaction; a retry finds the type written. */
    async writeExportType({ exportId, type }: { exportId: string; type: string }): Promise<'written' | 'discarded'> {
      return recordExportType(db, exportId, type, (request, chaos) =>
        exportFiles(type, exportedResources(fhirStore, request, type), chaos?.partialEveryNth ?? null),
      );
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
      return recordExportEnd(db, exportId, { failure, at: now, expiresAt: new Date(now.getTime() + fileLifetimeHours * HOUR_MS) });
    },

    /** A cancelled export goes with its files (the API deletes it at once too; this is for a cancel that came another way, e.g. the Web UI). */
    async discardExport({ exportId }: { exportId: string }): Promise<void> {
      await deleteExport(db, exportId);
    },
  };
}
