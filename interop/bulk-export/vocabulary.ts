/**
 * The bulk export domain's vocabulary, each list written once: the schema's columns, the activities
 * and the API derive their types from these tuples. It imports nothing, so every layer may use it,
 * the drizzle schema included (CONVENTIONS.md, Layers).
 */

/**
 * A bulk export (FHIR Bulk Data `$export`) is `running` until its files are written (`completed`), or
 * it stops with an OperationOutcome (`failed`). A cancelled export is deleted with its files.
 */
export const EXPORT_STATUSES = ['running', 'completed', 'failed'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

/** What a kick-off exports: every resource (`system`), every patient's compartment (`patient`), or one Group's members' (`group`). */
export const EXPORT_LEVELS = ['system', 'patient', 'group'] as const;
export type ExportLevel = (typeof EXPORT_LEVELS)[number];

/** A bulk export file holds resources (`output`) or the OperationOutcomes of what could not be exported (`error`). */
export const EXPORT_FILE_KINDS = ['output', 'error'] as const;
export type ExportFileKind = (typeof EXPORT_FILE_KINDS)[number];
