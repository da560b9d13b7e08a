import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createWorkflowGateway, WorkflowEngineUnavailableError } from '../../platform/workflow-gateway';
import { advanceScenarioUpdate } from '../../workflows/scenario/contract';

/**
 * How the one workflow client classifies what Temporal answers. The answer here is the gRPC error the
 * server gives a workflow that already has as many Updates in flight as it allows (RESOURCE_EXHAUSTED,
 * `history.maxInFlightUpdates`), which a loaded test machine cannot be relied on to produce.
 */
function clientAnswering(error: Error): Client {
  const handle = {
    executeUpdate: async () => {
      throw error;
    },
  };
  return { withDeadline: (_deadline: number, call: () => Promise<unknown>) => call(), workflow: { getHandle: () => handle } } as unknown as Client;
}

describe('the workflow client', () => {
  it('answers a workflow with too many Updates in flight as the engine briefly unavailable (503), not as an unknown error (500)', async () => {
    const exhausted = Object.assign(new Error('8 RESOURCE_EXHAUSTED: limit on number of concurrent in-flight updates has been reached (10)'), {
      code: 8,
      details: 'limit on number of concurrent in-flight updates has been reached (10)',
      metadata: {},
    });
    const workflows = createWorkflowGateway(clientAnswering(exhausted), 'test-queue');
    const failure = await workflows
      .updateOnce('scenario-run_x', 'advance-from-1', advanceScenarioUpdate, { fromStep: 1 })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowEngineUnavailableError);
    expect((failure as Error).message).toContain('busy with other requests');
  });
});
