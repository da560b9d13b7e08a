import { randomUUID } from 'node:crypto';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Subscription } from 'fhir/r4';
import type { FhirSubscription } from '../../drizzle/schema';
import { FhirError, FhirIssuesError } from '../../fhir/operation-outcome';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, searchsetBundle } from '../../fhir/searchset';
import { statusSearchset, subscriptionStatus } from '../../fhir/subscriptions/notification';
import {
  countSubscriptions,
  createSubscription,
  deleteSubscription,
  findSubscription,
  forgetSubscription,
  listSubscriptions,
  SUBSCRIPTIONS_PER_ORGANIZATION,
} from '../../fhir/subscriptions/records';
import { readSubscriptionRequest } from '../../fhir/subscriptions/request';
import { subscriptionResource } from '../../fhir/subscriptions/resource';
import { SUBSCRIPTION_STATUSES, type SubscriptionStatusValue } from '../../fhir/subscriptions/vocabulary';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { WorkflowClosedError, type WorkflowGateway } from '../../platform/workflow-gateway';
import { SMART_PATHS, type SmartUrls } from '../../smart/endpoints';
import { type Interaction, permission } from '../../smart/scopes';
import { type ResolveHost, webhookUrlProblem } from '../../webhooks/targets';
import { subscriptionSearchAttributes, subscriptionWorkflowId } from '../../workflows/subscription/contract';
import { subscriptionWorkflow } from '../../workflows/subscription/workflow';

const FHIR_JSON = 'application/fhir+json';
/** Search parameters a Subscription search applies (FHIR R4 Subscription search parameters the server keeps). */
const APPLIED_PARAMETERS = new Set(['_id', 'status', 'criteria', 'url']);
const SEARCH_PARAMETERS = new Set([...APPLIED_PARAMETERS, '_count', '_format', '_pretty']);

/**
 * FHIR Subscriptions (R4 Subscriptions Backport 1.1.0, docs/api/fhir-subscriptions.md): create,
 * read, search and delete an organization's subscriptions, and `$status`. A system-level SMART token
 * (SMART Backend Services) with `system/Subscription.*`, or a user-level one (an app launch) with
 * `user/Subscription.*` (or the permission the interaction needs: `c`, `r`, `s`, `d`); its
 * organization owns what it creates, and another organization's subscription is not found (404), as
 * if it did not exist.
 */
export function subscriptionRouter({
  db,
  workflows,
  urls,
  config,
  withToken,
  resolveHost,
}: {
  db: Database;
  workflows: WorkflowGateway;
  urls: SmartUrls;
  config: Pick<Config, 'ALLOW_PRIVATE_TARGETS' | 'WEBHOOK_RETRY_SCHEDULE'>;
  withToken: RequestHandler;
  resolveHost?: ResolveHost;
}): Router {
  const router = express.Router();
  const base = `${SMART_PATHS.fhirBase}/Subscription`;
  const organizationOf = (res: Response) => res.locals.grant!.organizationId;

  router.post(base, withToken, allowing('create'), async (req, res) => {
    const read = readSubscriptionRequest(req.body);
    if ('issues' in read) throw new FhirIssuesError(400, read.issues);
    const refused = await webhookUrlProblem(read.request.endpoint, config.ALLOW_PRIVATE_TARGETS, resolveHost);
    if (refused) {
      throw new FhirIssuesError(400, [{ code: 'invalid', expression: 'Subscription.channel.endpoint', diagnostics: `The endpoint ${refused}.` }]);
    }
    const organizationId = organizationOf(res);
    if ((await countSubscriptions(db, organizationId)) >= SUBSCRIPTIONS_PER_ORGANIZATION) {
      throw new FhirError(
        422,
        'too-costly',
        `Your organization already has ${SUBSCRIPTIONS_PER_ORGANIZATION} subscriptions, its bound; DELETE one you no longer need, then try again.`,
      );
    }
    const row = await createSubscription(db, organizationId, read.request);
    try {
      await workflows.startOnce(subscriptionWorkflow, {
        workflowId: subscriptionWorkflowId(row.id),
        args: [
          {
            organizationId,
            subscriptionId: row.id,
            heartbeatSeconds: row.heartbeatSeconds,
            end: row.endAt?.toISOString() ?? null,
            retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
          },
        ],
        organizationId,
        searchAttributes: subscriptionSearchAttributes(organizationId),
        summary: `Subscription ${row.id}`,
      });
    } catch (error) {
      // Nothing runs it: it is not kept, so the client's retry makes one subscription, not two.
      await forgetSubscription(db, row.id);
      throw error;
    }
    res.setHeader('Location', `${urls.fhirBase}/Subscription/${row.id}`);
    sendFhir(req, res, 201, subscriptionResource(row));
  });

  // `$status` at type level: every subscription of the organization, or those named by `ids` (comma-separated, repeatable).
  router.get(`${base}/$status`, withToken, allowing('read'), async (req, res) => {
    const ids = searchParams(req)
      .getAll('ids')
      .flatMap((value) => value.split(','))
      .map((id) => id.trim())
      .filter(Boolean);
    const rows = await listSubscriptions(db, organizationOf(res), ids.length > 0 ? { ids } : {});
    sendFhir(req, res, 200, statusBundle(rows, `${urls.issuer}${req.originalUrl}`));
  });

  router.get(`${base}/:id/$status`, withToken, allowing('read'), async (req, res) => {
    const row = await owned(req, res);
    sendFhir(req, res, 200, statusBundle([row], `${urls.issuer}${req.originalUrl}`));
  });

  router.get(`${base}/:id`, withToken, allowing('read'), async (req, res) => {
    const row = await owned(req, res);
    res.setHeader('Last-Modified', row.updatedAt.toUTCString());
    sendFhir(req, res, 200, subscriptionResource(row));
  });

  router.get(base, withToken, allowing('search'), async (req, res) => {
    const params = searchParams(req);
    const ignored = [...new Set([...params.keys()].filter((name) => !SEARCH_PARAMETERS.has(name)))];
    if (ignored.length > 0 && /handling=strict/i.test(req.header('prefer') ?? '')) {
      throw new FhirError(
        400,
        'not-supported',
        `Search parameter(s) ${ignored.join(', ')} are not supported for Subscription. Supported: _id, status, criteria, url.`,
      );
    }
    const statuses = params.getAll('status').flatMap((value) => value.split(','));
    const unknown = statuses.find((status) => !(SUBSCRIPTION_STATUSES as readonly string[]).includes(status));
    if (unknown) throw new FhirError(400, 'invalid', `status must be one of ${SUBSCRIPTION_STATUSES.join(', ')} (got ${unknown.slice(0, 64)}).`);
    const topics = [...params.getAll('criteria'), ...params.getAll('url')];
    const ids = params.getAll('_id').flatMap((value) => value.split(','));
    const rows = await listSubscriptions(db, organizationOf(res), {
      ...(statuses.length > 0 ? { statuses: statuses as SubscriptionStatusValue[] } : {}),
      ...(ids.length > 0 ? { ids } : {}),
    });
    const matches = rows.filter((row) => topics.every((topic) => row.topic === topic.split('|')[0])).map(subscriptionResource);
    const applied = [...params].filter(([name]) => APPLIED_PARAMETERS.has(name));
    const count = Math.min(Number(params.get('_count') ?? DEFAULT_PAGE_SIZE) || 0, MAX_PAGE_SIZE);
    sendFhir(
      req,
      res,
      200,
      searchsetBundle({
        fhirBase: urls.fhirBase,
        resourceType: 'Subscription',
        applied,
        matches,
        count,
        offset: 0,
        ...(ignored.length > 0
          ? {
              outcome: {
                resourceType: 'OperationOutcome',
                issue: ignored.map((name) => ({
                  severity: 'warning',
                  code: 'not-supported',
                  diagnostics: `Search parameter ${name} is not supported for Subscription and was ignored (send Prefer: handling=strict to have it refused).`,
                })),
              },
            }
          : {}),
      }),
    );
  });

  router.delete(`${base}/:id`, withToken, allowing('delete'), async (req, res) => {
    const row = await owned(req, res);
    // Its workflow first, so a Temporal that cannot be reached (503) leaves the subscription as it was.
    try {
      await workflows.cancel(subscriptionWorkflowId(row.id));
    } catch (error) {
      if (!(error instanceof WorkflowClosedError)) throw error;
    }
    await deleteSubscription(db, organizationOf(res), row.id);
    res.status(204).end();
  });

  /** The caller's subscription, or 404 for an unknown id and another organization's alike. */
  async function owned(req: Request, res: Response): Promise<FhirSubscription> {
    const { id } = req.params as { id: string };
    const row = await findSubscription(db, organizationOf(res), id);
    if (!row) throw new FhirError(404, 'not-found', `Subscription/${id.slice(0, 64)} does not exist.`);
    return row;
  }

  function statusBundle(rows: FhirSubscription[], self: string) {
    const now = new Date().toISOString();
    return statusSearchset({
      id: randomUUID(),
      timestamp: now,
      self,
      statuses: rows.map((row) =>
        subscriptionStatus(randomUUID(), {
          subscriptionUrl: `${urls.fhirBase}/Subscription/${row.id}`,
          topic: row.topic,
          status: row.status,
          type: 'query-status',
          eventsSinceStart: row.eventsSinceStart,
          content: row.content,
          error: row.error,
        }),
      ),
    });
  }

  return router;
}

/**
 * The token must act for the organization, system-level (SMART Backend Services) or user-level (a
 * provider's app launched by its user), with a Subscription scope allowing the interaction
 * (`system/Subscription.*`, `user/Subscription.crud`, or `c`, `r`, `s`, `d`); 403 saying which scope
 * is missing otherwise.
 */
function allowing(interaction: Interaction): RequestHandler {
  return (_req, res, next) => {
    const grant = res.locals.grant!;
    const allowed = grant.context === 'patient' ? { allowed: false as const } : permission(grant.scope, grant.context, 'Subscription', interaction);
    if (!allowed.allowed || allowed.filters !== 'all') {
      const level = grant.context === 'patient' ? 'system' : grant.context;
      throw new FhirError(
        403,
        'forbidden',
        `Managing Subscriptions needs a system-level token (SMART Backend Services: client_credentials) or a user-level one (an app launch granted user/ scopes) with ${level}/Subscription.* (or ${level}/Subscription.${interaction[0]}); this token's scopes are ${grant.scope}.`,
        { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${grant.scope}"` },
      );
    }
    next();
  };
}

function searchParams(req: Request): URLSearchParams {
  return new URL(req.originalUrl, 'http://fhir.invalid').searchParams;
}

function sendFhir(req: Request, res: Response, status: number, body: Subscription | object): void {
  res
    .status(status)
    .type(`${FHIR_JSON}; charset=utf-8`)
    .send(JSON.stringify(body, null, req.query._pretty === 'true' ? 2 : undefined));
}
