import {
  type Client,
  isGrpcServiceError,
  ServiceError,
  WithStartWorkflowOperation,
  type WorkflowHandle,
  WorkflowNotFoundError,
  type WorkflowStartOptions,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import {
  type Priority,
  type SearchAttributePair,
  type UpdateDefinition,
  type Workflow,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowIdConflictPolicy,
  type WorkflowIdReusePolicy,
} from '@temporalio/common';
import { type Config, DEFAULT_TEMPORAL_CALL_TIMEOUT_MS } from './config';
import { createOrganizationLines } from './organization-lines';
import { WORKFLOW_REFUSAL } from './workflow-refusal';

/**
 * The workflow gateway: the one way the API (and any other entry point) starts and steers workflows,
 * over the SDK's Client. The task queue and search attributes are set the same way everywhere, every
 * call has a deadline, and the three ways a call can fail are typed errors rather than messages to
 * match. (Named so it does not shadow the SDK's own WorkflowClient, which it does not replace.)
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

/**
 * Temporal was unreachable or did not answer within the deadline. The request may still have
 * reached it (an answer lost on the way back), so a start is retried with the same workflow id.
 */
export class WorkflowEngineUnavailableError extends Error {
  override name = 'WorkflowEngineUnavailableError';
}

export interface StartOptions<W extends Workflow> {
  workflowId: string;
  args: Parameters<W>;
  /** Whose work the run is: its fairness key (organizationFairness). */
  organizationId: string;
  searchAttributes: SearchAttributePair[];
  /** A one-line summary the Web UI shows for the run. */
  summary?: string;
}

/**
 * Temporal's fairness key for a run (Task Queue Fairness, switched on in every server the product
 * runs: runtime/temporal.ts, runtime/cluster/server-config.ts, docker-compose.yml): matching
 * dispatches a task queue's backlog round robin across the keys its tasks carry, so one
 * organization's burst waits behind its own work, not in front of another's
 * (docs/api/fair-sharing.md). Every organization has the default weight, an equal share. The run's
 * activities and the child workflows it starts inherit it.
 */
function organizationFairness(organizationId: string): Priority {
  return { fairnessKey: organizationId };
}

// gRPC status codes for a run that is gone or closed, and for a server that did not answer.
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;

export type WorkflowGateway = ReturnType<typeof createWorkflowGateway>;

export interface GatewayOptions {
  callTimeoutMs?: number;
  /**
   * At most this many workflow starts of one organization in flight at once through this gateway
   * (API_STARTS_PER_ORGANIZATION); the rest wait their turn in its line. The server takes starts in
   * the order they come, so without it one organization's burst of requests queues every other
   * organization's start behind its own. None when absent.
   */
  startsPerOrganization?: number;
}

/**
 * Every call gets a deadline (`callTimeoutMs`): the SDK otherwise retries an unreachable server for
 * many seconds, and an HTTP request waiting on it would hang through a Temporal restart. A start's
 * deadline counts its wait in its organization's line.
 */
export function createWorkflowGateway(client: Client, taskQueue: string, options: GatewayOptions = {}) {
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_TEMPORAL_CALL_TIMEOUT_MS;
  const withDeadline = <T>(call: () => Promise<T>, deadline = Date.now() + callTimeoutMs) => client.withDeadline(deadline, call);
  const startLines = options.startsPerOrganization ? createOrganizationLines(options.startsPerOrganization) : undefined;

  /** Runs a start once its organization has a slot, all within one deadline. */
  async function inTurn<T>(organizationId: string, start: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + callTimeoutMs;
    if (!startLines) return withDeadline(start, deadline);
    if (!startLines.tryTake(organizationId)) {
      try {
        await startLines.waitTurn(organizationId, { signal: AbortSignal.timeout(callTimeoutMs) });
      } catch {
        throw new WorkflowEngineUnavailableError(
          `the organization's earlier requests were still starting work after ${callTimeoutMs} ms; nothing was started`,
        );
      }
    }
    try {
      return await withDeadline(start, deadline);
    } finally {
      startLines.give(organizationId);
    }
  }

  function startRequest<W extends Workflow>(
    workflow: W,
    options: StartOptions<W>,
    extra: { workflowIdReusePolicy?: WorkflowIdReusePolicy; workflowIdConflictPolicy?: WorkflowIdConflictPolicy } = {},
  ) {
    return inTurn(options.organizationId, () =>
      client.workflow.start(workflow, {
        workflowId: options.workflowId,
        taskQueue,
        args: options.args,
        typedSearchAttributes: options.searchAttributes,
        priority: organizationFairness(options.organizationId),
        ...(options.summary ? { staticSummary: options.summary } : {}),
        ...extra,
        // The SDK types `args` by a conditional on W, which a generic W cannot resolve; StartOptions types it already.
      } as unknown as WorkflowStartOptions<W>),
    );
  }

  return {
    client,

    async start<W extends Workflow>(workflow: W, options: StartOptions<W>): Promise<WorkflowHandle<W>> {
      try {
        return await startRequest(workflow, options);
      } catch (error) {
        throw startFailure(error);
      }
    },

    /**
     * Starts the workflow unless a run with this id exists or existed: then that run is the answer
     * (`started: false`). Starting the same work again after an answer was lost (a retried request
     * with the same Idempotency-Key and so the same business id) attaches to the first run instead of
     * doing the work twice, even once that run has finished.
     */
    async startOnce<W extends Workflow>(workflow: W, options: StartOptions<W>): Promise<{ started: boolean }> {
      try {
        await startRequest(workflow, options, { workflowIdReusePolicy: 'REJECT_DUPLICATE' });
        return { started: true };
      } catch (error) {
        if (error instanceof WorkflowExecutionAlreadyStartedError) return { started: false };
        throw startFailure(error);
      }
    },

    /** Starts the workflow unless a run with this id is open: then that run goes on (a closed one is started anew). */
    async startOrJoin<W extends Workflow>(workflow: W, options: StartOptions<W>): Promise<void> {
      try {
        await startRequest(workflow, options, { workflowIdConflictPolicy: 'USE_EXISTING' });
      } catch (error) {
        throw startFailure(error);
      }
    },

    /** Runs an Update on the workflow's current run and returns what its handler returned. */
    async update<Ret, Args extends unknown[]>(workflowId: string, update: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
      return this.updateOnce(workflowId, undefined, update, ...args);
    },

    /**
     * An Update with an id: Temporal runs one Update per id and run, so a request retried after its
     * deadline passed (the Update still in flight, or done) joins that Update instead of applying twice.
     */
    async updateOnce<Ret, Args extends unknown[]>(
      workflowId: string,
      updateId: string | undefined,
      update: UpdateDefinition<Ret, Args>,
      ...args: Args
    ): Promise<Ret> {
      try {
        // The SDK's overloads tell no-argument Updates apart; this passes either kind through.
        const execute = client.workflow.getHandle(workflowId).executeUpdate as (
          def: UpdateDefinition<Ret, Args>,
          options: { args: Args; updateId?: string },
        ) => Promise<Ret>;
        const options = updateId === undefined ? { args } : { args, updateId };
        return await withDeadline(() => execute.call(client.workflow.getHandle(workflowId), update, options));
      } catch (error) {
        throw typed(error);
      }
    },

    /** Asks the workflow's current run to cancel (it cleans up as its code says); a closed run is WorkflowClosedError. */
    async cancel(workflowId: string): Promise<void> {
      try {
        await withDeadline(() => client.workflow.getHandle(workflowId).cancel());
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
        priority: organizationFairness(start.organizationId),
      } as unknown as ConstructorParameters<typeof WithStartWorkflowOperation<W>>[1]);
      try {
        const execute = client.workflow.executeUpdateWithStart as (
          def: UpdateDefinition<Ret, Args>,
          options: { args: Args; startWorkflowOperation: WithStartWorkflowOperation<W> },
        ) => Promise<Ret>;
        return await inTurn(start.organizationId, () => execute.call(client.workflow, update, { args, startWorkflowOperation }));
      } catch (error) {
        throw typed(error);
      }
    },
  };
}

/** The gateway a process's API and MLLP listener share, as configured: one line per organization for both. */
export function createConfiguredGateway(
  client: Client,
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_CALL_TIMEOUT_MS' | 'API_STARTS_PER_ORGANIZATION'>,
): WorkflowGateway {
  return createWorkflowGateway(client, config.TEMPORAL_TASK_QUEUE, {
    callTimeoutMs: config.TEMPORAL_CALL_TIMEOUT_MS,
    startsPerOrganization: config.API_STARTS_PER_ORGANIZATION,
  });
}

/** Whatever stopped a start, the work is not known to have started. */
function startFailure(error: unknown): WorkflowEngineUnavailableError {
  const known = typed(error);
  return known instanceof WorkflowEngineUnavailableError ? known : new WorkflowEngineUnavailableError(known.message, { cause: error });
}

function typed(error: unknown): Error {
  if (error instanceof WorkflowUpdateFailedError) {
    const cause = error.cause as { type?: string; message?: string; details?: unknown[] } | undefined;
    if (cause?.type === WORKFLOW_REFUSAL)
      return new WorkflowRefusedError(String(cause.details?.[0] ?? 'workflow_refused'), cause.message ?? error.message);
  }
  if (error instanceof WorkflowNotFoundError) return new WorkflowClosedError(error.message, { cause: error });
  const grpc = error instanceof ServiceError || error instanceof WorkflowUpdateRPCTimeoutOrCancelledError ? error.cause : error;
  if (isGrpcServiceError(grpc) && (grpc.code === NOT_FOUND || grpc.code === FAILED_PRECONDITION))
    return new WorkflowClosedError(grpc.message, { cause: error });
  if (isGrpcServiceError(grpc) && grpc.code === UNAVAILABLE) return new WorkflowEngineUnavailableError(grpc.message, { cause: error });
  // A workflow with as many Updates in flight as Temporal allows (10 by default) takes no more for now.
  if (isGrpcServiceError(grpc) && grpc.code === RESOURCE_EXHAUSTED) {
    return new WorkflowEngineUnavailableError(`the workflow is busy with other requests (${grpc.message})`, { cause: error });
  }
  if ((isGrpcServiceError(grpc) && grpc.code === DEADLINE_EXCEEDED) || error instanceof WorkflowUpdateRPCTimeoutOrCancelledError)
    return new WorkflowEngineUnavailableError(`no answer within the deadline (${(error as Error).message})`, { cause: error });
  return error as Error;
}
