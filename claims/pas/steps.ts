import { randomUUID } from 'node:crypto';
import type { Bundle, Claim } from 'fhir/r4';
import type { PriorAuthorization } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { findPayerRules } from '../payer-rules';
import { latestSubmission, readAuthorization, readSubmission, recordAnswer, recordClosed } from './authorization-records';
import { type AuthorizationState, applyUpdate, assess, decidePended, type PriorAuthPace, reviewWaitMs, turnaroundHours } from './decision';
import type { PasRequestSummary } from './request';
import { submitAnswer } from './response';
import type { AuthorizationDecision } from './vocabulary';

export interface PriorAuthStep {
  authorizationId: string;
  pace: PriorAuthPace;
}

/** A new authorization as `$submit` recorded it, with its first submission: its id, the request Bundle and what was read from it. */
export interface FirstSubmission {
  authorization: PriorAuthorization;
  submission: { id: string; request: unknown; summary: unknown };
}

/** What each step answers the workflow: the decision, and how long a pend waits at the pace (null: for an advance). */
export interface PriorAuthAnswer {
  decision: AuthorizationDecision;
  waitMs: number | null;
}

/**
 * The prior-authorization steps, run as the workflow's activities (workflows/prior-auth/) and, for
 * the first answer, by the `$submit` route too: each reads the authorization and its request from the
 * tables, decides (claims/pas/decision.ts), and stores the state and the PAS response Bundle. A step
 * retried after it stored its answer finds it stored and answers the same.
 */
export function createPriorAuthSteps(db: Database) {
  /** The payer's rules and what a decision needs, for an authorization as recorded. */
  function decisionInputs(authorization: PriorAuthorization) {
    const rules = findPayerRules(authorization.payerId)!;
    return {
      authorization,
      rules,
      decisionContext: {
        rules,
        outcome: authorization.requestedOutcome,
        // The authorization's own id names it in the payer's answers (`PA-` and its random part).
        authorizationNumber: `PA-${authorization.id.slice(-12).toUpperCase()}`,
        now: Date.now(),
      },
    };
  }

  async function context(authorizationId: string) {
    return decisionInputs(await readAuthorization(db, authorizationId));
  }

  async function store(
    step: PriorAuthStep,
    state: AuthorizationState,
    submission: { id: string; request: unknown },
    expedited: boolean,
    rules: NonNullable<ReturnType<typeof findPayerRules>>,
    options: { first: boolean } = { first: false },
  ): Promise<{ answer: PriorAuthAnswer; response: Bundle }> {
    const request = submission.request as Bundle;
    const waitMs = state.decision === 'pended' ? reviewWaitMs(turnaroundHours(rules, expedited), step.pace) : null;
    const response = submitAnswer({
      authorizationId: step.authorizationId,
      request,
      state,
      claim: request.entry![0]!.resource as Claim,
      decidedAt: new Date().toISOString(),
      answerId: randomUUID(),
    });
    const stored = await recordAnswer(
      db,
      step.authorizationId,
      { decision: state.decision, state, response, dueAt: waitMs === null ? null : new Date(Date.now() + waitMs) },
      submission.id,
      options,
    );
    if (stored) return { answer: { decision: state.decision, waitMs }, response };
    // A first answer another caller stored meanwhile is the answer.
    const winner = await readAuthorization(db, step.authorizationId);
    return { answer: storedAnswer(winner), response: winner.response as Bundle };
  }

  /**
   * The first answer and its response Bundle, assessed and stored unless stored already. `recorded`
   * (what `$submit` has just recorded) spares reading the authorization and the submission back; if
   * the run stored an answer meanwhile, the store finds it and answers that one.
   */
  async function assessFirst(step: PriorAuthStep, recorded?: FirstSubmission): Promise<{ answer: PriorAuthAnswer; response: Bundle }> {
    const { authorization, rules, decisionContext } = recorded ? decisionInputs(recorded.authorization) : await context(step.authorizationId);
    if (authorization.state !== null) return { answer: storedAnswer(authorization), response: authorization.response as Bundle };
    const first = recorded?.submission ?? (await latestSubmission(db, step.authorizationId));
    const state = assess(first.summary as PasRequestSummary, decisionContext);
    return store(step, state, first, authorization.expedited, rules, { first: true });
  }

  /** How long a pend still waits, answered from the stored record. */
  function storedAnswer(authorization: { decision: AuthorizationDecision | null; dueAt: Date | null }): PriorAuthAnswer {
    return { decision: authorization.decision!, waitMs: authorization.dueAt ? Math.max(1, authorization.dueAt.getTime() - Date.now()) : null };
  }

  return {
    /** The first answer: decided at once, pended, or an error. */
    async assessAuthorization(step: PriorAuthStep): Promise<PriorAuthAnswer> {
      return (await assessFirst(step)).answer;
    },

    /** The first answer's PAS response Bundle, for `$submit` (which has what it recorded, or nothing when it recorded no new authorization). */
    async firstResponse(step: PriorAuthStep, recorded?: FirstSubmission): Promise<Bundle> {
      return (await assessFirst(step, recorded)).response;
    },

    /** A pend's review time is up (or it was advanced): the payer decides the pended items. */
    async decidePendedAuthorization(step: PriorAuthStep): Promise<PriorAuthAnswer> {
      const { authorization, rules, decisionContext } = await context(step.authorizationId);
      if (authorization.decision !== 'pended') return storedAnswer(authorization);
      const state = decidePended(authorization.state as AuthorizationState, decisionContext);
      return (await store(step, state, await latestSubmission(db, step.authorizationId), authorization.expedited, rules)).answer;
    },

    /** A claim update: items added, changed or cancelled, or the whole request cancelled. */
    async applyClaimUpdate(step: PriorAuthStep & { submissionId: string }): Promise<PriorAuthAnswer> {
      const { authorization, rules, decisionContext } = await context(step.authorizationId);
      const submission = await readSubmission(db, step.authorizationId, step.submissionId);
      if (submission.appliedAt !== null) return storedAnswer(authorization);
      const state = applyUpdate(authorization.state as AuthorizationState, submission.summary as PasRequestSummary, {
        ...decisionContext,
        outcome: submission.requestedOutcome ?? decisionContext.outcome,
      });
      return (await store(step, state, submission, authorization.expedited, rules)).answer;
    },

    async closeAuthorization(step: PriorAuthStep): Promise<void> {
      await recordClosed(db, step.authorizationId);
    },
  };
}
