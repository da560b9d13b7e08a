import { and, asc, count, eq, isNull } from 'drizzle-orm';
import { type BulkExport, bulkExportFiles, bulkExports, organizations } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import type { ExportChaos } from '../../webhooks/chaos';
import type { ExportOutcome } from './export';
import type { ExportFile } from './files';
import type { ExportRequest } from './request';

/**
 * The one module that writes `bulk_exports` and `bulk_export_files`: the API records an export at
 * kick-off (and deletes it on DELETE), its workflow's steps record the chaos, each type's files and
 * the end. Every step answers from the stored record when retried, and none writes to an export that
 * was deleted meanwhile.
 */

/**
 * Records an export at kick-off, counted and inserted under the organization's row lock, so concurrent
 * kick-offs cannot all see room for one more: `withinBounds` sees the organization's counts first and
 * throws to refuse.
 */
export async function recordNewExport(
  db: Database,
  kickOff: { id: string; organizationId: string; clientId: string; request: ExportRequest; transactionTime: Date; expiresAt: Date },
  withinBounds: (counts: { running: number; kept: number }) => void,
): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, kickOff.organizationId)).for('no key update');
    withinBounds(await exportCounts(tx, kickOff.organizationId));
    await tx.insert(bulkExports).values({ ...kickOff, status: 'running', typesTotal: kickOff.request.types.length });
  });
}

/** The export goes with its files (cascade); a step still running finds it gone and writes nothing. */
export async function deleteExport(db: Database, exportId: string): Promise<void> {
  await db.delete(bulkExports).where(eq(bulkExports.id, exportId));
}

/** The client's export with this id, or undefined: an export belongs to the client that started it (another client's is not found either). */
export async function findExport(
  db: Database,
  owner: { organizationId: string; clientId: string },
  exportId: string,
): Promise<BulkExport | undefined> {
  const [row] = await db
    .select()
    .from(bulkExports)
    .where(and(eq(bulkExports.id, exportId), eq(bulkExports.organizationId, owner.organizationId), eq(bulkExports.clientId, owner.clientId)));
  return row;
}

/** The organization's exports by status: how many run, and how many are kept. */
async function exportCounts(db: Pick<Database, 'select'>, organizationId: string): Promise<{ running: number; kept: number }> {
  const rows = await db
    .select({ status: bulkExports.status, exports: count() })
    .from(bulkExports)
    .where(eq(bulkExports.organizationId, organizationId))
    .groupBy(bulkExports.status);
  return { running: rows.find((row) => row.status === 'running')?.exports ?? 0, kept: rows.reduce((sum, row) => sum + row.exports, 0) };
}

/** An export's files (not their content), by name: the manifest. */
export async function exportFileList(db: Database, exportId: string) {
  return db
    .select({ name: bulkExportFiles.name, kind: bulkExportFiles.kind, type: bulkExportFiles.resourceType, count: bulkExportFiles.count })
    .from(bulkExportFiles)
    .where(eq(bulkExportFiles.exportId, exportId))
    .orderBy(asc(bulkExportFiles.name));
}

/** One of the export's files, with what it holds (its kind and resource type). */
export async function exportFile(db: Database, exportId: string, name: string) {
  const [stored] = await db
    .select({ content: bulkExportFiles.content, kind: bulkExportFiles.kind, type: bulkExportFiles.resourceType })
    .from(bulkExportFiles)
    .where(and(eq(bulkExportFiles.exportId, exportId), eq(bulkExportFiles.name, name)));
  return stored;
}

/** Records the chaos picked for the export unless one was picked already, and answers the one stored; undefined once the export is gone. */
export async function pickChaosOnce(
  db: Database,
  exportId: string,
  picked: ExportChaos,
): Promise<{ request: ExportRequest; chaos: ExportChaos } | undefined> {
  await db
    .update(bulkExports)
    .set({ chaos: picked })
    .where(and(eq(bulkExports.id, exportId), isNull(bulkExports.chaos)));
  const [row] = await db.select({ request: bulkExports.request, chaos: bulkExports.chaos }).from(bulkExports).where(eq(bulkExports.id, exportId));
  return row && { request: row.request as ExportRequest, chaos: row.chaos as ExportChaos };
}

/**
 * One type's files, written with the progress in one transaction; a retry finds the type written.
 * The export's row is locked first, so a DELETE of the export waits for this step (or this step finds it gone).
 */
export async function recordExportType(
  db: Database,
  exportId: string,
  type: string,
  filesOf: (request: ExportRequest, chaos: ExportChaos | null) => ExportFile[],
): Promise<'written' | 'discarded'> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .select({ request: bulkExports.request, chaos: bulkExports.chaos, typesWritten: bulkExports.typesWritten })
      .from(bulkExports)
      .where(and(eq(bulkExports.id, exportId), eq(bulkExports.status, 'running')))
      .for('update');
    if (!row) return 'discarded';
    if (row.typesWritten.includes(type)) return 'written';
    const files = filesOf(row.request as ExportRequest, row.chaos as ExportChaos | null);
    if (files.length > 0) await tx.insert(bulkExportFiles).values(files.map((file) => ({ ...file, exportId })));
    await tx
      .update(bulkExports)
      .set({ typesWritten: [...row.typesWritten, type] })
      .where(eq(bulkExports.id, exportId));
    return 'written';
  });
}

/** Ends a running export (completed, or failed with its reason, its files dropped) with its expiry; a retry finds it ended. */
export async function recordExportEnd(
  db: Database,
  exportId: string,
  end: { failure: string | null; at: Date; expiresAt: Date },
): Promise<ExportOutcome> {
  return db.transaction(async (tx) => {
    const [row] = await tx.select({ status: bulkExports.status }).from(bulkExports).where(eq(bulkExports.id, exportId)).for('update');
    if (!row) return 'discarded' as const;
    if (row.status !== 'running') return row.status;
    // A failed export answers an OperationOutcome, never part of its files.
    if (end.failure !== null) await tx.delete(bulkExportFiles).where(eq(bulkExportFiles.exportId, exportId));
    await tx
      .update(bulkExports)
      .set({ status: end.failure === null ? 'completed' : 'failed', error: end.failure, completedAt: end.at, expiresAt: end.expiresAt })
      .where(eq(bulkExports.id, exportId));
    return end.failure === null ? ('completed' as const) : ('failed' as const);
  });
}
