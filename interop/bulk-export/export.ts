import type { ExportChaos } from '../../webhooks/chaos';

/** The shapes the bulk export's workflow and activities share (workflows/export/, activities/exports.ts). */

/** The export itself (its request, resolved at kick-off) is the row the API recorded before starting the workflow. */
export interface ExportWorkflowInput {
  exportId: string;
  organizationId: string;
  /** How long the files are kept once the export ends (BULK_EXPORT_FILE_HOURS); the retention Schedule deletes them then. */
  fileLifetimeHours: number;
}

/** What planning the export decided, answered alike when the step is retried; `discarded` when it was deleted before. */
export type ExportPlan = { types: string[]; chaos: ExportChaos } | 'discarded';

/** How the run ended: `discarded` when the export was deleted (DELETE on its status URL) while it ran. */
export type ExportOutcome = 'completed' | 'failed' | 'discarded';

/** The diagnostics of an export the `fail` chaos ended. */
export const CHAOS_FAILURE =
  "This export failed because the organization's reliability profile asks for it (bulk_export.fail chaos); kick off a new one.";
