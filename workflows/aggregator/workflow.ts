import { proxyActivities } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import type { AggregatorWorkflowInput } from '../../interop/aggregator/query';
import { SOURCE_IDS } from '../../interop/aggregator/vocabulary';
import { startDeliveryChild } from '../delivery/workflow';
import type { AggregatorSummary } from './contract';

const { completeAggregatorQuery } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/**
 * One aggregator query (aggregatorWorkflowId in ./contract), recorded by the API before it starts
 * (the input carries its id, not its demographics): every source is asked at once (one activity each, which gives up on the source at the query's deadline and
 * answers timeout), the answers are merged and stored, and the completion webhook goes out as an
 * ordinary delivery workflow that outlives this one.
 */
export async function aggregatorWorkflow(input: AggregatorWorkflowInput): Promise<AggregatorSummary> {
  const { querySource } = proxyActivities<SandboxActivities>({
    // The activity itself stops waiting for the source at the deadline; this bounds a stuck worker.
    startToCloseTimeout: input.sourceTimeoutMs + 30_000,
    retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 3 },
  });
  const outcomes = await Promise.all(SOURCE_IDS.map((source) => querySource({ source, queryId: input.queryId })));
  const completed = await completeAggregatorQuery({ queryId: input.queryId, organizationId: input.organizationId, outcomes });
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
