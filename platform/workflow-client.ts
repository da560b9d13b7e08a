import {
  type Client,
  isGrpcServiceError,
  ServiceError,
  WithStartWorkflowOperation,
  type WorkflowHandle,
  WorkflowNotFoundError,
  type WorkflowStartOptions,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { SearchAttributePair, UpdateDefinition, Workflow } from '@temporalio/common';
import { WORKFLOW_REFUSAL } from './workflow-refusal';

/**
 * The one way the API (and any other entry point) starts and steers workflows: the task queue and
 * search attributes are set the same way everywhere, and the three ways a call can fail are typed
 * errors rather than messages to match.
 */

/** The workflow refused the request (see platform/workflow-refusal.ts); `code` is its stable reason. */
export class WorkflowRefusedError extends Error {
  override name = 'WorkflowRefusedError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The run has finished, so an update cannot reach it. */
export class WorkflowClosedError extends Error {
  override name = 'WorkflowClosedError';
}

/** Temporal did not take the request; nothing was started. */
export class WorkflowEngineUnavailableError extends Error {
  override name = 'WorkflowEngineUnavailableError';
}

export interface StartOptions<W extends Workflow> {
  workflowId: string;
  args: Parameters<W>;
  searchAttributes: SearchAttributePair[];
  /** A one-line summary the Web UI shows for the run. */
  summary?: string;
}

// gRPC status codes for a run that is gone or closed.
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;

export type WorkflowClient = ReturnType<typeof createWorkflowClient>;

export function createWorkflowClient(client: Client, taskQueue: string) {
  return {
    client,

    async start<W extends Workflow>(workflow: W, options: StartOptions<W>): Promise<WorkflowHandle<W>> {
      try {
        return await client.workflow.start(workflow, {
          workflowId: options.workflowId,
          taskQueue,
          args: options.args,
          typedSearchAttributes: options.searchAttributes,
          ...(options.summary ? { staticSummary: options.summary } : {}),
          // The SDK types `args` by a conditional on W, which a generic W cannot resolve; StartOptions types it already.
        } as unknown as WorkflowStartOptions<W>);
      } catch (error) {
        throw new WorkflowEngineUnavailableError((error as Error).message, { cause: error });
      }
    },

    /** Runs an Update on the workflow's current run and returns what its handler returned. */
    async update<Ret, Args extends unknown[]>(workflowId: string, update: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
      try {
        // The SDK's overloads tell no-argument Updates apart; this passes either kind through.
        const execute = client.workflow.getHandle(workflowId).executeUpdate as (
          def: UpdateDefinition<Ret, Args>,
          options: { args: Args },
        ) => Promise<Ret>;
        return await execute.call(client.workflow.getHandle(workflowId), update, { args });
      } catch (error) {
        throw typed(error);
      }
    },

    /** An Update that starts the workflow first when no run is open (a closed one is started anew). */
    async updateWithStart<W extends Workflow, Ret, Args extends unknown[]>(
      update: UpdateDefinition<Ret, Args>,
      start: { workflow: W } & StartOptions<W>,
      ...args: Args
    ): Promise<Ret> {
      const startWorkflowOperation = new WithStartWorkflowOperation(start.workflow, {
        workflowId: start.workflowId,
        taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: start.args,
        typedSearchAttributes: start.searchAttributes,
      } as unknown as ConstructorParameters<typeof WithStartWorkflowOperation<W>>[1]);
      try {
        const execute = client.workflow.executeUpdateWithStart as (
          def: UpdateDefinition<Ret, Args>,
          options: { args: Args; startWorkflowOperation: WithStartWorkflowOperation<W> },
        ) => Promise<Ret>;
        return await execute.call(client.workflow, update, { args, startWorkflowOperation });
      } catch (error) {
        throw typed(error);
      }
    },
  };
}

function typed(error: unknown): Error {
  if (error instanceof WorkflowUpdateFailedError) {
    const cause = error.cause as { type?: string; message?: string; details?: unknown[] } | undefined;
    if (cause?.type === WORKFLOW_REFUSAL)
      return new WorkflowRefusedError(String(cause.details?.[0] ?? 'workflow_refused'), cause.message ?? error.message);
  }
  if (error instanceof WorkflowNotFoundError) return new WorkflowClosedError(error.message, { cause: error });
  const grpc = error instanceof ServiceError ? error.cause : error;
  if (isGrpcServiceError(grpc) && (grpc.code === NOT_FOUND || grpc.code === FAILED_PRECONDITION))
    return new WorkflowClosedError(grpc.message, { cause: error });
  return error as Error;
}
