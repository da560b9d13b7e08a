import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities';
import { PAS_TOPIC } from '../../fhir/subscriptions/vocabulary';
import { refuse } from '../../platform/workflow-refusal';
import { startDeliveryChild } from '../delivery/workflow';
import { PriorAuthDecision } from '../search-attributes';
import {
  AUTHORIZATION_CLOSED,
  AUTHORIZATION_NOT_PENDED,
  advancePriorAuthUpdate,
  claimUpdateUpdate,
  firstAnswerUpdate,
  type PriorAuthStatus,
  type PriorAuthWorkflowInput,
  priorAuthStatusQuery,
} from './contract';

const { assessAuthorization, decidePendedAuthorization, applyClaimUpdate, closeAuthorization, notifySubscriptions } =
  proxyActivities<SandboxActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  });

/**
 * The first assessment answers the partner's `$submit`, which waits for it: a short database read and
 * write, run in the worker beside the workflow task rather than through the server (a round trip
 * less). Runs begun before it was local replay it as the activity they recorded (the patch).
 */
const { assessAuthorization: assessAuthorizationLocally } = proxyLocalActivities<SandboxActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
const ASSESS_LOCALLY = 'assess-locally';

const DAY_MS = 86_400_000;
/** How long a decided authorization takes claim updates; then its workflow closes (inquiries still answer). */
const AMENDABLE_MS = 30 * DAY_MS;
/** How long a pend at manual pace waits for an advance before the payer decides anyway. */
const MANUAL_PEND_LIMIT_MS = 30 * DAY_MS;

/**
 * One prior authorization (PAS `$submit`). The first request is assessed at once (an activity
 * reads it from the table, applies the payer rules or the chosen outcome and stores the answer);
 * a pend waits as a durable timer for the payer's review time at the organization's pace (or, at
 * manual pace, for an advance), then is decided. Claim updates arrive as Updates and are applied
 * in this run, so one authorization has one history. Every activity answers from the stored record
 * when retried, so a worker killed mid-way changes nothing.
 */
export async function priorAuthWorkflow(input: PriorAuthWorkflowInput): Promise<PriorAuthStatus> {
  let status: PriorAuthStatus = { authorizationId: input.authorizationId, decision: null, due_at: null };
  let waitMs: number | null = null;
  let assessed = false;
  let advanced = false;
  let closed = false;
  const ids = { authorizationId: input.authorizationId, pace: input.pace };

  /** Every decision change: the status the API and the Web UI see. */
  function decisionChanged(answer: { decision: PriorAuthStatus['decision']; waitMs: number | null }): void {
    waitMs = answer.waitMs;
    status = {
      ...status,
      decision: answer.decision,
      due_at: answer.decision === 'pended' && answer.waitMs !== null ? new Date(Date.now() + answer.waitMs).toISOString() : null,
    };
    if (answer.decision) upsertSearchAttributes([{ key: PriorAuthDecision, value: answer.decision }]);
  }

  /**
   * A decision changed after the first answer (a pend decided, an update applied, a cancel): the
   * organization's subscriptions on the PAS topic are notified, each notification a delivery child.
   */
  async function notifyChange(): Promise<void> {
    // The ClaimResponse's FHIR id (claims/pas/response.ts claimResponseId): the authorization id with a dash.
    const focus = `ClaimResponse/${input.authorizationId.replace('_', '-')}`;
    const deliveries = await notifySubscriptions({ organizationId: input.organizationId, topic: PAS_TOPIC, focus });
    for (const delivery of deliveries) await startDeliveryChild(delivery, input.retryScheduleMs, `PAS notification: ${focus} is ${status.decision}`);
  }

  const refuseIfClosed = () => {
    if (closed) throw refuse(AUTHORIZATION_CLOSED, 'This authorization is closed: it takes no more updates. Submit a new request.');
  };
  setHandler(priorAuthStatusQuery, () => status);
  setHandler(firstAnswerUpdate, async () => {
    await condition(() => assessed);
    return status;
  });
  setHandler(
    claimUpdateUpdate,
    async ({ submissionId }) => {
      await condition(() => assessed);
      refuseIfClosed();
      decisionChanged(await applyClaimUpdate({ ...ids, submissionId }));
      await notifyChange();
      return status;
    },
    { validator: (_request: { submissionId: string }) => refuseIfClosed() },
  );
  const refuseUnlessPended = () => {
    if (assessed && status.decision !== 'pended')
      throw refuse(AUTHORIZATION_NOT_PENDED, `This authorization is ${status.decision}, not pended: there is nothing to advance.`);
  };
  setHandler(
    advancePriorAuthUpdate,
    async () => {
      await condition(() => assessed);
      refuseUnlessPended();
      advanced = true;
      await condition(() => status.decision !== 'pended' || closed);
      return status;
    },
    { validator: refuseUnlessPended },
  );

  decisionChanged(await (patched(ASSESS_LOCALLY) ? assessAuthorizationLocally(ids) : assessAuthorization(ids)));
  assessed = true;
  for (;;) {
    if (status.decision === 'pended') {
      advanced = false;
      // A durable timer: the review time at the pace, cut short by an advance or an update that decides it.
      await condition(() => advanced || status.decision !== 'pended', waitMs ?? MANUAL_PEND_LIMIT_MS);
      if (status.decision === 'pended') {
        decisionChanged(await decidePendedAuthorization(ids));
        await notifyChange();
      }
      continue;
    }
    if (status.decision === 'cancelled' || status.decision === 'error') break;
    const reopened = await condition(() => status.decision === 'pended' || status.decision === 'cancelled', AMENDABLE_MS);
    if (!reopened) break;
  }
  await condition(allHandlersFinished);
  closed = true;
  await closeAuthorization(ids);
  return status;
}
