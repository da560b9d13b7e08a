import type { SearchAttributePair } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { PriorAuthPace } from '../../claims/pas/decision';
import type { AuthorizationDecision } from '../../claims/pas/vocabulary';
import { ClaimIdentifier, OrgId } from '../search-attributes';

/**
 * The prior-authorization workflow's contract (Da Vinci PAS `$submit`), shared by the workflow, the
 * API, the worker and the tests. One workflow per organization and Claim business identifier
 * (claims/pas/authorization-records.ts, priorAuthWorkflowId): a claim update reaches the same run, so
 * one authorization has one history. Its input carries ids only: the requests and answers are in
 * the prior-authorization tables.
 */

export interface PriorAuthWorkflowInput {
  authorizationId: string;
  organizationId: string;
  /** The organization's pace when it submitted (its sandbox settings), fixed for this authorization. */
  pace: PriorAuthPace;
  /** The delivery retry schedule its subscription notifications use (WEBHOOK_RETRY_SCHEDULE, fixed at start). */
  retryScheduleMs: number[];
}

/** What the workflow answers: the decision and, while pended, when it is due (null at manual pace). */
export interface PriorAuthStatus {
  authorizationId: string;
  decision: AuthorizationDecision | null;
  due_at: string | null;
}

export const priorAuthStatusQuery = defineQuery<PriorAuthStatus>('priorAuthStatus');
/**
 * Answers once the run's own first step has assessed the request (what a caller waits on to know it).
 * `$submit` sent it with the start until the route assessed the first answer itself: runs begun then replay it.
 */
export const firstAnswerUpdate = defineUpdate<PriorAuthStatus>('firstAnswer');
/** Applies a claim update (a stored submission); answers with the new status. Refused once the authorization is closed. */
export const claimUpdateUpdate = defineUpdate<PriorAuthStatus, [{ submissionId: string }]>('applyClaimUpdate');
/** Decides a pended authorization now (the sandbox's advance, and what manual pace waits for). Refused unless pended. */
export const advancePriorAuthUpdate = defineUpdate<PriorAuthStatus>('advancePriorAuth');

/** The refusal codes, which the API answers as 409. */
export const AUTHORIZATION_CLOSED = 'authorization_closed';
export const AUTHORIZATION_NOT_PENDED = 'authorization_not_pended';

export function priorAuthSearchAttributes(organizationId: string, claimKey: string): SearchAttributePair[] {
  return [
    { key: OrgId, value: organizationId },
    { key: ClaimIdentifier, value: claimKey },
  ];
}
