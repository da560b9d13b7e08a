import type { Response } from 'express';
import { WorkflowEngineUnavailableError } from '../../platform/workflow-gateway';
import { workflowEngineUnavailable } from './problem';

/**
 * The rule for every endpoint that starts a workflow (CONVENTIONS.md, HTTP: accepted work). Once the
 * workflow has started, the work exists and the answer is 202 with it, whatever fails afterwards;
 * before that, nothing has been done twice by a retry:
 *
 * 1. `plan` builds the work with its business ids. With an Idempotency-Key the plan is stored with
 *    the key before anything starts, so a retry of a request whose answer was lost plans the same ids.
 * 2. `start` starts the workflow with `startOnce` on an id built from the business id: a retry
 *    attaches to the run the first request started instead of starting another. The workflow owns
 *    writing its row.
 * 3. `answer` reads (or writes) what the response shows; if the database fails now, `fallback`
 *    answers from the plan itself, since the work is under way either way.
 */
export interface AcceptedWork<Plan, Answer> {
  res: Response;
  /** The work to start, as JSON: ids, the workflow input. Called once per Idempotency-Key. */
  plan(): Plan;
  /** How the work is named to the client: `delivery dlv_…`. */
  describe(plan: Plan): string;
  /** Starts the workflow with WorkflowGateway.startOnce. */
  start(plan: Plan): Promise<unknown>;
  /** The response body, read from the database. */
  answer(plan: Plan): Promise<Answer>;
  /** The response body built from the plan alone, when the database fails after the start. */
  fallback(plan: Plan): Answer;
}

export async function acceptWork<Plan, Answer>(work: AcceptedWork<Plan, Answer>): Promise<Answer> {
  const plan = await planWork(work.res, () => work.plan());
  await startWork(work.res, plan, work);
  return answerWork(work.res, plan, work);
}

/*
 * The three steps of acceptWork, for a caller whose own pipeline runs between them (the HL7 accept
 * path, hl7/accept.ts, which plans only once the message is accepted and its recipient known).
 */

/** Step 1: the plan, stored with the Idempotency-Key when the request has one. */
export async function planWork<Plan>(res: Response, plan: () => Plan): Promise<Plan> {
  return res.locals.idempotency ? await res.locals.idempotency.reserve(plan) : plan();
}

/** Step 2: the start; one Temporal did not confirm is a 503 naming the work and how to retry it. */
export async function startWork<Plan>(res: Response, plan: Plan, work: Pick<AcceptedWork<Plan, unknown>, 'describe' | 'start'>): Promise<void> {
  try {
    await work.start(plan);
  } catch (error) {
    if (!(error instanceof WorkflowEngineUnavailableError)) throw error;
    // The start may have reached Temporal before the answer was lost, so say which work to retry.
    const named = work.describe(plan);
    const retry = res.locals.idempotency
      ? `Retry with the same Idempotency-Key: it continues ${named} and never starts it twice.`
      : 'Retry shortly (send an Idempotency-Key so that a retry never starts the work twice).';
    throw workflowEngineUnavailable(error, `The workflow engine did not confirm the start of ${named} (${error.message}). ${retry}`);
  }
}

/** Step 3: the answer read from the database, or built from the plan when the database fails now. */
export async function answerWork<Plan, Answer>(
  res: Response,
  plan: Plan,
  work: Pick<AcceptedWork<Plan, Answer>, 'describe' | 'answer' | 'fallback'>,
): Promise<Answer> {
  try {
    return await work.answer(plan);
  } catch (error) {
    res.req.log.warn({ err: error }, `${work.describe(plan)} is under way but could not be read back; answering from what was started`);
    return work.fallback(plan);
  }
}
