import type { SearchAttributePair } from '@temporalio/common';
import type { Patient } from 'fhir/r4';
import type { AggregatableType, PurposeOfUse, SimulatedBehaviour, SourceId, SourceStatus } from '../../interop/aggregator/vocabulary';
import { OrgId } from '../search-attributes';

/** The aggregator query workflow's contract, shared by the workflow, the API, the worker and the tests. */

/** One workflow per query, found by its business id. */
export const aggregatorWorkflowId = (queryId: string) => `aggregator-${queryId}`;

export interface AggregatorQueryRequest {
  /** The demographics every source matches on: a world patient's record, or what the partner sent. */
  patient: Patient;
  /** The world patient the partner named, when they named one. */
  patientId: string | null;
  purposeOfUse: PurposeOfUse;
  resourceTypes: AggregatableType[] | null;
  dateFrom: string | null;
  dateTo: string | null;
  seed: number;
  simulate: Partial<Record<SourceId, SimulatedBehaviour>>;
  /** How long the aggregator waits for each source. */
  sourceTimeoutMs: number;
  /** Whether a source's probable match counts (merged) or is only reported; absent in queries from before it existed: false. */
  includeProbableMatches?: boolean;
}

export interface AggregatorWorkflowInput {
  queryId: string;
  organizationId: string;
  request: AggregatorQueryRequest;
  /** The webhook retry schedule the completion event is delivered with (WEBHOOK_RETRY_SCHEDULE). */
  webhookRetryScheduleMs: number[];
}

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
