import { randomUUID } from 'node:crypto';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Bundle, Claim, OperationOutcome } from 'fhir/r4';
import {
  findAuthorization,
  latestSubmission,
  readPriorAuthSettings,
  recordClaimUpdate,
  recordSubmission,
} from '../../claims/pas/authorization-records';
import { type AuthorizationState, chooseOutcome, OUTCOME_HEADER, payerFor } from '../../claims/pas/decision';
import { checkPasRequestOffLoop } from '../../claims/pas/off-loop';
import { identifierKey, type PasCheck, type PasIssue, type PasOperation } from '../../claims/pas/request';
import { inquiryAnswer } from '../../claims/pas/response';
import { createPriorAuthSteps } from '../../claims/pas/steps';
import { PRIOR_AUTH_OUTCOMES, type PriorAuthOutcome } from '../../claims/pas/vocabulary';
import { FhirError } from '../../fhir/operation-outcome';
import type { Database } from '../../platform/database';
import { newId } from '../../platform/ids';
import { refusesRealIdentifiers } from '../../platform/organizations';
import { WorkflowClosedError, type WorkflowGateway, WorkflowRefusedError } from '../../platform/workflow-gateway';
import { guardJson } from '../../privacy/fhir';
import { SMART_PATHS } from '../../smart/endpoints';
import { permission } from '../../smart/scopes';
import { claimUpdateUpdate, priorAuthSearchAttributes } from '../../workflows/prior-auth/contract';
import { priorAuthWorkflow } from '../../workflows/prior-auth/workflow';
import { toJson } from '../http/json';
import { privacyWarnings } from '../http/privacy';

/** The PAS operations' paths below the FHIR base (PAS 2.2.1 OperationDefinitions Claim-submit and Claim-inquiry). */
export const PAS_OPERATION_PATHS = { submit: '/Claim/$submit', inquire: '/Claim/$inquire' } as const;

/**
 * Da Vinci PAS 2.2.1 (docs/api/prior-authorization.md): `Claim/$submit` checks the request against
 * the PAS request profiles on a worker thread, records it, starts its workflow (one per organization
 * and Claim identifier) and answers with the PAS response Bundle of its first assessment; a claim update
 * (a Claim with `related`) is an Update on that workflow. `Claim/$inquire` answers the current
 * state. Both need a SMART token of the organization with Claim create: system-level
 * (`system/Claim.c` or wider) or user-level (`user/Claim.c` or wider); another organization's
 * authorizations are never found.
 */
export function priorAuthorizationRouter({
  db,
  workflows,
  withToken,
  retryScheduleMs,
}: {
  db: Database;
  workflows: WorkflowGateway;
  withToken: RequestHandler;
  /** WEBHOOK_RETRY_SCHEDULE: the authorization's subscription notifications are retried on it. */
  retryScheduleMs: number[];
}): Router {
  const router = express.Router();
  const base = SMART_PATHS.fhirBase;
  const steps = createPriorAuthSteps(db);

  router.post(`${base}${PAS_OPERATION_PATHS.submit}`, withToken, claimCreateScope, async (req, res) => {
    const organizationId = res.locals.grant!.organizationId;
    // The privacy guard (docs/api/privacy.md): real identifiers masked before the request is read, stored
    // or sent, or the request refused when the organization refuses them.
    const guarded = guardJson(req.body as unknown, 'Bundle');
    if (guarded.findings.length > 0 && (await refusesRealIdentifiers(db, organizationId))) {
      const issue = privacyWarnings(guarded.findings, true).map((refused) => ({
        severity: 'error' as const,
        code: 'security' as const,
        diagnostics: refused.message,
        expression: [refused.path],
      }));
      return sendFhir(res, 422, { resourceType: 'OperationOutcome', issue });
    }
    // The organization's settings are read while a thread checks the request (a claim update does not need them).
    const [check, settings] = await Promise.all([checked(guarded.value, 'submit'), readPriorAuthSettings(db, organizationId)]);
    if (!check.ok) return sendOutcome(res, 400, check.issues);
    const outcome = outcomeHeader(req);
    const request = check.bundle;
    const { summary } = check;
    if (summary.updates) {
      const original = await findAuthorization(db, organizationId, identifierKey(summary.updates));
      if (!original)
        return sendOutcome(res, 400, [
          {
            expression: 'Bundle.entry[0].resource.related[0].claim',
            code: 'not-found',
            diagnostics: `No authorization of this organization has the Claim identifier ${identifierKey(summary.updates)}: a claim update names a Claim submitted before.`,
          },
        ]);
      const submissionId = newId('pas');
      // A header or test member id on the update picks the outcome of what it adds or changes.
      const chosen = chooseOutcome(summary, outcome, null);
      await recordClaimUpdate(db, original.id, { id: submissionId, request, summary, requestedOutcome: chosen.outcome });
      try {
        await workflows.updateOnce(original.workflowId, `claim-update-${submissionId}`, claimUpdateUpdate, { submissionId });
      } catch (error) {
        if (!(error instanceof WorkflowRefusedError || error instanceof WorkflowClosedError)) throw error;
        throw new FhirError(409, 'processing', 'This authorization is closed: it takes no more updates. Submit a new request.');
      }
      return sendFhir(res, 200, (await findAuthorization(db, organizationId, original.claimKey))!.response as Bundle);
    }
    const chosen = chooseOutcome(summary, outcome, settings.outcome);
    const claimKey = identifierKey(summary.claim);
    const submission = { id: newId('pas'), request, summary };
    const { authorization, created } = await recordSubmission(
      db,
      {
        id: newId('pa'),
        organizationId,
        claimKey,
        payerId: payerFor(summary.insurerIdentifiers).payer_id,
        expedited: summary.expedited,
        requestedOutcome: chosen.outcome,
        outcomeSource: chosen.source,
        providerIdentifiers: summary.providerIdentifiers,
      },
      submission,
    );
    // The run is started (or the one already going joined: a resubmission of the same Claim, a retry)
    // before the answer, so every answered submission has its workflow. The first answer is then
    // assessed here rather than waited for from the run: the run's own first step finds it stored
    // (whichever of the two comes first stores it), and the partner waits one round trip less.
    await workflows.startOrJoin(priorAuthWorkflow, {
      workflowId: authorization.workflowId,
      args: [{ authorizationId: authorization.id, organizationId, pace: settings.pace, retryScheduleMs }],
      organizationId,
      searchAttributes: priorAuthSearchAttributes(organizationId, claimKey),
    });
    return sendFhir(
      res,
      200,
      await steps.firstResponse({ authorizationId: authorization.id, pace: settings.pace }, created ? { authorization, submission } : undefined),
    );
  });

  router.post(`${base}${PAS_OPERATION_PATHS.inquire}`, withToken, claimCreateScope, async (req, res) => {
    const check = await checked(req.body, 'inquire');
    if (!check.ok) return sendOutcome(res, 400, check.issues);
    const authorization = await findAuthorization(db, res.locals.grant!.organizationId, identifierKey(check.summary.claim));
    // Unknown (or another organization's): an empty answer, as the operation's `return` is 0..*.
    if (!authorization?.state) return sendFhir(res, 200, { resourceType: 'Parameters' });
    const submitted = (await latestSubmission(db, authorization.id)).request as Bundle;
    return sendFhir(
      res,
      200,
      inquiryAnswer({
        authorizationId: authorization.id,
        request: check.bundle,
        state: authorization.state as AuthorizationState,
        claim: submitted.entry![0]!.resource as Claim,
        decidedAt: authorization.updatedAt.toISOString(),
        answerId: randomUUID(),
      }),
    );
  });

  for (const path of Object.values(PAS_OPERATION_PATHS)) {
    router.use(`${base}${path}`, (req) => {
      throw new FhirError(
        405,
        'not-supported',
        `Claim/${path.split('/$')[1] ? `$${path.split('/$')[1]}` : ''} is invoked with POST (got ${req.method}).`,
        { Allow: 'POST' },
      );
    });
  }
  return router;
}

/**
 * A token acting for the organization whose scopes allow creating Claims: system-level (SMART
 * Backend Services: `system/Claim.c`, `system/Claim.*`…) or user-level (a provider's app launched by
 * its user: `user/Claim.c`, `user/Claim.write`…). A patient-level token acts for one patient, not for
 * a provider, so it is refused whatever its scopes.
 */
const claimCreateScope: RequestHandler = (_req, res, next) => {
  const grant = res.locals.grant!;
  if (grant.context === 'patient' || !permission(grant.scope, grant.context, 'Claim', 'create').allowed) {
    throw new FhirError(
      403,
      'forbidden',
      grant.context === 'patient'
        ? `The PAS operations are called by a provider, not for a patient: they need a system-level token (SMART Backend Services) with system/Claim.c or a user-level one (an app launch granted user/Claim.c); this is a patient-level token (${grant.scope}).`
        : `The PAS operations need ${grant.context}/Claim.c or wider (${grant.context}/Claim.crs, ${grant.context}/Claim.write…); this token's scopes are ${grant.scope}.`,
      { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${grant.scope}"` },
    );
  }
  next();
};

function outcomeHeader(req: Request): PriorAuthOutcome | undefined {
  const value = req.header(OUTCOME_HEADER);
  if (value === undefined) return undefined;
  if (!(PRIOR_AUTH_OUTCOMES as readonly string[]).includes(value.trim()))
    throw new FhirError(
      400,
      'invalid',
      `${OUTCOME_HEADER} must be one of ${PRIOR_AUTH_OUTCOMES.join(', ')} (got ${JSON.stringify(value.slice(0, 40))}).`,
    );
  return value.trim() as PriorAuthOutcome;
}

async function checked(body: unknown, operation: PasOperation): Promise<PasCheck> {
  try {
    return await checkPasRequestOffLoop(body, operation);
  } catch {
    throw new FhirError(503, 'transient', 'The request could not be checked just now; send it again.', { 'Retry-After': '2' });
  }
}

function sendOutcome(res: Response, status: number, issues: PasIssue[]): void {
  const outcome: OperationOutcome = {
    resourceType: 'OperationOutcome',
    issue: issues.map((issue) => ({
      severity: 'error',
      code: issue.code,
      diagnostics: issue.diagnostics,
      ...(issue.expression ? { expression: [issue.expression] } : {}),
    })),
  };
  sendFhir(res, status, outcome);
}

function sendFhir(res: Response, status: number, body: object): void {
  res.status(status).type('application/fhir+json; charset=utf-8').send(toJson(body));
}
