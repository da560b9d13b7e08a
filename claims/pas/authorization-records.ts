import { createHash } from 'node:crypto';
import { and, eq, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { Bundle, ClaimResponse } from 'fhir/r4';
import {
  type PriorAuthorization,
  type PriorAuthSubmission,
  priorAuthorizations,
  priorAuthSettings,
  priorAuthSubmissions,
} from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { DEFAULT_PRIOR_AUTH_PACE, type PriorAuthPace } from './decision';
import type { PasRequestSummary } from './request';
import { claimResponseId } from './response';
import type { AuthorizationDecision, PriorAuthOutcome } from './vocabulary';

/**
 * The one module that writes the prior-authorization tables (prior_authorizations,
 * prior_auth_submissions, prior_auth_settings): the API records submissions, the workflow's
 * activities record each answer, the retention Schedule purges closed ones. Every read is scoped
 * to an organization.
 */

/** How long a closed authorization is kept (then inquiries find nothing), and how long one whose workflow never ran. */
export const AUTHORIZATION_KEPT_DAYS = 30;
const NEVER_STARTED_KEPT_DAYS = 90;
const DAY_MS = 86_400_000;

/** The workflow of an authorization: one per organization and Claim business identifier (hashed: identifiers are partner text). */
export function priorAuthWorkflowId(organizationId: string, claimKey: string): string {
  return `prior-auth-${organizationId}-${createHash('sha256').update(claimKey).digest('hex').slice(0, 32)}`;
}

export async function findAuthorization(db: Database, organizationId: string, claimKey: string): Promise<PriorAuthorization | undefined> {
  const [row] = await db
    .select()
    .from(priorAuthorizations)
    .where(and(eq(priorAuthorizations.organizationId, organizationId), eq(priorAuthorizations.claimKey, claimKey)));
  return row;
}

export async function findAuthorizationById(db: Database, organizationId: string, id: string): Promise<PriorAuthorization | undefined> {
  const [row] = await db
    .select()
    .from(priorAuthorizations)
    .where(and(eq(priorAuthorizations.organizationId, organizationId), eq(priorAuthorizations.id, id)));
  return row;
}

/** For the workflow's activities, which act for the organization the authorization belongs to. */
export async function readAuthorization(db: Database, id: string): Promise<PriorAuthorization> {
  const [row] = await db.select().from(priorAuthorizations).where(eq(priorAuthorizations.id, id));
  if (!row) throw new Error(`Prior authorization ${id} does not exist`);
  return row;
}

export interface NewAuthorization {
  id: string;
  organizationId: string;
  claimKey: string;
  payerId: string;
  expedited: boolean;
  requestedOutcome: PriorAuthOutcome | null;
  outcomeSource: string;
  providerIdentifiers: string[];
}

/**
 * Records a first submission and its request, unless the organization already has an authorization
 * for this Claim identifier: then that one is the answer (a resubmission, or a retry after a lost answer).
 */
export async function recordSubmission(
  db: Database,
  authorization: NewAuthorization,
  submission: { id: string; request: Bundle; summary: PasRequestSummary },
): Promise<{ authorization: PriorAuthorization; created: boolean }> {
  return db.transaction(async (tx) => {
    const [created] = await tx
      .insert(priorAuthorizations)
      .values({
        ...authorization,
        workflowId: priorAuthWorkflowId(authorization.organizationId, authorization.claimKey),
        expiresAt: new Date(Date.now() + NEVER_STARTED_KEPT_DAYS * DAY_MS),
      })
      .onConflictDoNothing()
      .returning();
    if (!created) {
      const [existing] = await tx
        .select()
        .from(priorAuthorizations)
        .where(and(eq(priorAuthorizations.organizationId, authorization.organizationId), eq(priorAuthorizations.claimKey, authorization.claimKey)));
      return { authorization: existing!, created: false };
    }
    await tx
      .insert(priorAuthSubmissions)
      .values({ id: submission.id, authorizationId: created.id, request: submission.request, summary: submission.summary });
    return { authorization: created, created: true };
  });
}

/** Records a claim update's request; its workflow applies it. */
export async function recordClaimUpdate(
  db: Database,
  authorizationId: string,
  submission: { id: string; request: Bundle; summary: PasRequestSummary; requestedOutcome: PriorAuthOutcome | null },
): Promise<void> {
  await db.insert(priorAuthSubmissions).values({ authorizationId, ...submission });
}

export async function readSubmission(db: Database, authorizationId: string, submissionId: string): Promise<PriorAuthSubmission> {
  const [row] = await db
    .select()
    .from(priorAuthSubmissions)
    .where(and(eq(priorAuthSubmissions.authorizationId, authorizationId), eq(priorAuthSubmissions.id, submissionId)));
  if (!row) throw new Error(`Submission ${submissionId} of ${authorizationId} does not exist`);
  return row;
}

/** The submission an authorization's current answer goes with: the latest applied, else the first. */
export async function latestSubmission(db: Database, authorizationId: string): Promise<PriorAuthSubmission> {
  const rows = await db
    .select()
    .from(priorAuthSubmissions)
    .where(eq(priorAuthSubmissions.authorizationId, authorizationId))
    .orderBy(priorAuthSubmissions.createdAt, priorAuthSubmissions.id);
  const applied = rows.filter((row) => row.appliedAt !== null);
  return (applied.at(-1) ?? rows[0])!;
}

/**
 * Stores an answer: the decision, the items' state, the response Bundle; marks the submission it answers
 * as applied. A first answer (`first`) is stored only while the authorization has none: the `$submit`
 * route and the workflow's first step may both assess it, and the one that comes second must answer
 * what the first stored. Answers whether it stored.
 */
export async function recordAnswer(
  db: Database,
  authorizationId: string,
  answer: { decision: AuthorizationDecision; state: unknown; response: Bundle; dueAt: Date | null },
  submissionId: string,
  { first = false }: { first?: boolean } = {},
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const unanswered = first ? isNull(priorAuthorizations.state) : undefined;
    const stored = await tx
      .update(priorAuthorizations)
      .set({ decision: answer.decision, state: answer.state, response: answer.response, dueAt: answer.dueAt, updatedAt: new Date() })
      .where(and(eq(priorAuthorizations.id, authorizationId), unanswered))
      .returning({ id: priorAuthorizations.id });
    if (stored.length === 0) return false;
    await tx
      .update(priorAuthSubmissions)
      .set({ appliedAt: sql`coalesce(${priorAuthSubmissions.appliedAt}, now())` })
      .where(eq(priorAuthSubmissions.id, submissionId));
    return true;
  });
}

/** Its workflow has ended: no update can follow; kept AUTHORIZATION_KEPT_DAYS for inquiries. */
export async function recordClosed(db: Database, authorizationId: string): Promise<void> {
  const now = new Date();
  await db
    .update(priorAuthorizations)
    .set({ closedAt: now, expiresAt: new Date(now.getTime() + AUTHORIZATION_KEPT_DAYS * DAY_MS), updatedAt: now })
    .where(eq(priorAuthorizations.id, authorizationId));
}

/** One batch of the retention Schedule: authorizations past their expiry, with their submissions. */
export async function purgeExpiredAuthorizations(db: Database, cutoff: Date, batchSize: number): Promise<number> {
  const batch = db.select({ id: priorAuthorizations.id }).from(priorAuthorizations).where(lt(priorAuthorizations.expiresAt, cutoff)).limit(batchSize);
  const gone = await db.delete(priorAuthorizations).where(inArray(priorAuthorizations.id, batch)).returning({ id: priorAuthorizations.id });
  return gone.length;
}

/**
 * What a notification about an authorization needs (the FHIR Subscriptions side, issue 34 item 6):
 * the ClaimResponse as last answered and the requesting provider's identifiers (`system|value`,
 * for the PAS topic's `org-identifier` filter). `reference` is `ClaimResponse/<id>` as the focus
 * names it; another organization's, or an unknown one, is undefined.
 */
export async function readClaimResponseFocus(
  db: Database,
  organizationId: string,
  reference: string,
): Promise<{ resource: ClaimResponse; orgIdentifiers: string[] } | undefined> {
  const match = /^ClaimResponse\/(pa-[0-9a-z]{26})$/.exec(reference);
  if (!match) return undefined;
  const row = await findAuthorizationById(db, organizationId, match[1]!.replace('-', '_'));
  const resource = (row?.response as Bundle | null)?.entry?.[0]?.resource as ClaimResponse | undefined;
  if (!row || !resource || resource.id !== claimResponseId(row.id)) return undefined;
  return { resource, orgIdentifiers: row.providerIdentifiers };
}

export interface PriorAuthSettings {
  pace: PriorAuthPace;
  outcome: PriorAuthOutcome | null;
}

export async function readPriorAuthSettings(db: Database, organizationId: string): Promise<PriorAuthSettings> {
  const [row] = await db.select().from(priorAuthSettings).where(eq(priorAuthSettings.organizationId, organizationId));
  return row ? { pace: row.pace as PriorAuthPace, outcome: row.outcome } : { pace: DEFAULT_PRIOR_AUTH_PACE, outcome: null };
}

export async function writePriorAuthSettings(db: Database, organizationId: string, settings: PriorAuthSettings): Promise<PriorAuthSettings> {
  await db
    .insert(priorAuthSettings)
    .values({ organizationId, pace: settings.pace, outcome: settings.outcome })
    .onConflictDoUpdate({ target: priorAuthSettings.organizationId, set: { pace: settings.pace, outcome: settings.outcome, updatedAt: new Date() } });
  return settings;
}
