import type { SearchAttributePair } from '@temporalio/common';
import { OrgId } from '../search-attributes';

/**
 * The bulk export workflow's contract (FHIR Bulk Data `$export`), shared by the workflow, the API, the
 * worker and the tests: its id and search attributes. Its input and plan are in interop/bulk-export/export.ts.
 */

/** One workflow per export, found by its business id. */
export const exportWorkflowId = (exportId: string) => `export-${exportId}`;

export function exportSearchAttributes(organizationId: string): SearchAttributePair[] {
  return [{ key: OrgId, value: organizationId }];
}
