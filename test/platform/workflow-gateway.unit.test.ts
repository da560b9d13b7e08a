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

/** A client whose starts stay in flight until the test lets them finish, in the order they reached it. */
function clientHoldingStarts() {
  const reached: string[] = [];
  const finishers: (() => void)[] = [];
  const client = {
    withDeadline: (_deadline: number, call: () => Promise<unknown>) => call(),
    workflow: {
      start: (_workflow: unknown, options: { workflowId: string }) => {
        reached.push(options.workflowId);
        return new Promise((resolve) => finishers.push(() => resolve({ workflowId: options.workflowId })));
      },
    },
  } as unknown as Client;
  return { client, reached, finishOne: () => finishers.shift()?.() };
}

/** Lets every settled promise's callbacks run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

/** Stands for any workflow: the held client never runs it. */
async function someWorkflow(): Promise<void> {}

const start = (workflows: ReturnType<typeof createWorkflowGateway>, organizationId: string, workflowId: string) =>
  workflows.start(someWorkflow, { workflowId, organizationId, args: [] } as never);

describe('the workflow client', () => {
  it("keeps one organization's burst of starts to its slots, so another organization's start reaches Temporal at once", async () => {
    const { client, reached, finishOne } = clientHoldingStarts();
    const workflows = createWorkflowGateway(client, 'test-queue', { startsPerOrganization: 2 });
    const burst = Array.from({ length: 6 }, (_, index) => start(workflows, 'org_busy', `busy-${index + 1}`));
    await settled();
    expect(reached).toEqual(['busy-1', 'busy-2']);

    const other = start(workflows, 'org_other', 'other-1');
    await settled();
    // Ahead of the four of the burst still waiting their turn.
    expect(reached).toEqual(['busy-1', 'busy-2', 'other-1']);

    // Each start that ends hands its slot to the next of its organization's, in the order they came.
    finishOne();
    await settled();
    expect(reached).toEqual(['busy-1', 'busy-2', 'other-1', 'busy-3']);
    for (let index = 0; index < 6; index += 1) {
      finishOne();
      await settled();
    }
    expect(reached).toEqual(['busy-1', 'busy-2', 'other-1', 'busy-3', 'busy-4', 'busy-5', 'busy-6']);
    expect((await Promise.all([...burst, other])).map((handle) => handle.workflowId)).toHaveLength(7);
  });

  it('answers a start that waited its whole deadline in line as the engine briefly unavailable (503), having started nothing', async () => {
    const { client, reached } = clientHoldingStarts();
    const workflows = createWorkflowGateway(client, 'test-queue', { startsPerOrganization: 1, callTimeoutMs: 50 });
    void start(workflows, 'org_busy', 'busy-1');
    const failure = await start(workflows, 'org_busy', 'busy-2').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowEngineUnavailableError);
    expect((failure as Error).message).toContain('still starting work after 50 ms; nothing was started');
    expect(reached).toEqual(['busy-1']);
  });

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
