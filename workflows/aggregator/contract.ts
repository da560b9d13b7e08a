import type { SearchAttributePair } from '@temporalio/common';
import type { SourceId, SourceStatus } from '../../interop/aggregator/vocabulary';
import { OrgId } from '../search-attributes';

/** The aggregator query workflow's contract, shared by the workflow, the API, the worker and the tests. */

/** One workflow per query, found by its business id. */
export const aggregatorWorkflowId = (queryId: string) => `aggregator-${queryId}`;

export interface AggregatorSummary {
  queryId: string;
  sources: { source: SourceId; status: SourceStatus }[];
  records: number;
  /** The completion webhook's delivery, when the organization has a webhook URL. */
  deliveryId: string | null;
}

export function aggregatorSearchAttributes(organizationId: string): SearchAttributePair[] {
  return [{ key: OrgId, value: organizationId }];
}
