import { proxyActivities } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import type { AggregatorWorkflowInput } from '../../interop/aggregator/query';
import { SOURCE_IDS } from '../../interop/aggregator/vocabulary';
import { startDeliveryChild } from '../delivery/workflow';
import type { AggregatorSummary } from './contract';

const { recordAggregatorQuery, completeAggregatorQuery } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/**
 * One aggregator query (aggregatorWorkflowId in ./contract): the query is recorded, every source is
 * asked at once (one activity each, which gives up on the source at the query's deadline and
 * answers timeout), the answers are merged and stored, and the completion webhook goes out as an
 * ordinary delivery workflow that outlives this one.
 */
export async function aggregatorWorkflow(input: AggregatorWorkflowInput): Promise<AggregatorSummary> {
  const { querySource } = proxyActivities<SandboxActivities>({
    // The activity itself stops waiting for the source at the deadline; this bounds a stuck worker.
    startToCloseTimeout: input.request.sourceTimeoutMs + 30_000,
    retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 3 },
  });
  await recordAggregatorQuery(input);
  const outcomes = await Promise.all(SOURCE_IDS.map((source) => querySource({ source, request: input.request })));
  const completed = await completeAggregatorQuery({ queryId: input.queryId, organizationId: input.organizationId, request: input.request, outcomes });
  if (completed.newDelivery) {
    const delivery = completed.newDelivery;
    await startDeliveryChild(delivery, input.webhookRetryScheduleMs);
  }
  return {
    queryId: input.queryId,
    sources: outcomes.map((outcome) => ({ source: outcome.source, status: outcome.status })),
    records: completed.records,
    deliveryId: completed.newDelivery?.id ?? null,
  };
}
