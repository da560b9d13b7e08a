import type { Task } from 'fhir/r4';
import { SYNTHETIC_META } from '../../fixtures/synthetic';
import type { AggregatedAnswer, SourceReport } from './merge';

/** The catalog event an aggregator query's completion is announced with. */
export const AGGREGATOR_COMPLETED_EVENT = 'aggregator.query.completed';
export const AGGREGATOR_QUERY_SYSTEM = 'https://sandbox.example/fhir/sid/aggregator-query';

/**
 * What the `aggregator.query.completed` webhook carries: a FHIR Task naming the query, the patient,
 * where to read the answer, and each source's status. Its status is `failed` when no source
 * answered, else `completed`; `businessStatus` is the query's (`completed`, `partial`, `failed`).
 * The answer itself can be large, so the event points to it rather than carrying it.
 */
export function queryCompletedTask(options: {
  queryId: string;
  patientReference: string | null;
  answerPath: string;
  completedAt: string;
  status: AggregatedAnswer['status'];
  records: number;
  sources: readonly Pick<SourceReport, 'source' | 'status'>[];
}): Task {
  return {
    resourceType: 'Task',
    id: `aggregator-${options.queryId.replace('_', '-')}`,
    meta: SYNTHETIC_META,
    identifier: [{ system: AGGREGATOR_QUERY_SYSTEM, value: options.queryId }],
    status: options.status === 'failed' ? 'failed' : 'completed',
    businessStatus: { text: options.status },
    intent: 'order',
    code: { text: 'Aggregator query' },
    ...(options.patientReference ? { for: { reference: options.patientReference } } : {}),
    lastModified: options.completedAt,
    output: [
      { type: { text: 'answer' }, valueUrl: options.answerPath },
      { type: { text: 'records' }, valueInteger: options.records },
      ...options.sources.map((source) => ({ type: { text: `source:${source.source}` }, valueCode: source.status })),
    ],
  };
}
