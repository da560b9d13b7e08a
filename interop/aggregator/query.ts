import type { Patient } from 'fhir/r4';
import type { NewDelivery } from '../../webhooks/new-delivery';
import type { AggregatedAnswer } from './merge';
import type { AggregatableType, PurposeOfUse, SimulatedBehaviour, SourceId } from './vocabulary';

/** An aggregator query as the API accepts it and its workflow and activities carry it. */

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

/**
 * The workflow carries the query's id, never its request: the demographics a partner sent stay in
 * the query's row (recorded before the workflow starts), so no Temporal history holds them
 * (docs/api/privacy.md).
 */
export interface AggregatorWorkflowInput {
  queryId: string;
  organizationId: string;
  /** The request's source deadline, which bounds each source's activity. */
  sourceTimeoutMs: number;
  /** The webhook retry schedule the completion event is delivered with (WEBHOOK_RETRY_SCHEDULE). */
  webhookRetryScheduleMs: number[];
}

/** Where a query's answer is read. */
export const aggregatorQueryPath = (queryId: string) => `/v1/sandbox/aggregator/queries/${queryId}`;

/** What a completed query stores: the answer, and the completion webhook so a retried step sends the same one. */
export type StoredResult = AggregatedAnswer & { webhook_delivery: NewDelivery | null };
