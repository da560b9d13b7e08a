import { ApplicationFailure } from '@temporalio/common';

/**
 * A workflow's "no": the request conflicts with the run's state (cancel a finished delivery, advance
 * a run that has ended). Update handlers and validators throw `refuse(code, message)`; the workflow
 * client turns it into a WorkflowRefusedError, which the API answers as 409 with that code. Safe to
 * import from workflow code: it only builds a failure.
 */
export const WORKFLOW_REFUSAL = 'WorkflowRefusal';

export function refuse(code: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: WORKFLOW_REFUSAL, message, details: [code], nonRetryable: true });
}
