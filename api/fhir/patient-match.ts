import type { Request, RequestHandler } from 'express';
import type { OperationOutcome } from 'fhir/r4';
import type { z } from 'zod';
import { FhirError, type IssueCode } from '../../fhir/operation-outcome';
import { API_KEY_PREFIX } from '../../platform/secrets';
import type { LocatedFinding } from '../../privacy/fhir';
import { parseResourceScope, splitScope } from '../../smart/scopes';
import type { AccessGrant } from '../../smart/tokens';
import { readBearer } from '../http/bearer';
import { privacyWarnings } from '../http/privacy';
import { type FhirMatchBody, fhirMatchBodySchema } from '../interop/mpi';

/**
 * `POST /fhir/R4/Patient/$match` (IHE PDQm ITI-119) over the master patient index: the same match,
 * grades and order as `POST /v1/sandbox/mpi/match`, in FHIR's shapes and with FHIR's errors.
 * `$match` looks across every patient, so a SMART token needs a user- or system-level scope for
 * Patient search; an API key (the sandbox's own credential) may call it too.
 */

/** A SMART scope that allows searching every Patient: `user/` or `system/`, `Patient` or `*`, v1 `.read` or v2 `s`, unfiltered. */
export function allowsPatientMatch(scope: string): boolean {
  return splitScope(scope).some((text) => {
    const parsed = parseResourceScope(text);
    return (
      parsed !== null &&
      (parsed.context === 'user' || parsed.context === 'system') &&
      (parsed.resourceType === 'Patient' || parsed.resourceType === '*') &&
      parsed.search &&
      parsed.filter.length === 0
    );
  });
}

/** Passes API-key requests to the API-key route, the rest (SMART access tokens) to the next one. */
export const apiKeyRequestsOnly: RequestHandler = (req, _res, next) => {
  const credential = readBearer(req.headers.authorization);
  next(credential.kind === 'token' && credential.token.startsWith(API_KEY_PREFIX) ? undefined : 'route');
};

export const patientMatchScope: RequestHandler = (_req, res, next) => {
  const grant = res.locals.grant as AccessGrant;
  if (!allowsPatientMatch(grant.scope)) {
    throw new FhirError(
      403,
      'forbidden',
      `Patient/$match searches every patient, which the token's scopes (${grant.scope}) do not allow; it needs user/Patient.rs or system/Patient.rs (or user/Patient.read, system/Patient.read).`,
      { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${grant.scope}"` },
    );
  }
  next();
};

/** Several issues at once: one per field that is wrong, each with its FHIRPath-like location. */
class InvalidMatchInput extends FhirError {
  constructor(
    private readonly issues: OperationOutcome['issue'],
    status = 400,
    code: IssueCode = 'invalid',
  ) {
    super(status, code, issues.map((issue) => issue.diagnostics).join('; '));
  }

  override outcome(): OperationOutcome {
    return { resourceType: 'OperationOutcome', issue: this.issues };
  }
}

function invalidInput(error: z.ZodError, root: string): InvalidMatchInput {
  return new InvalidMatchInput(
    error.issues.map((issue) => {
      const where = `${root}${issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('')}`;
      return { severity: 'error', code: 'invalid', diagnostics: `${where}: ${issue.message}`, expression: [where] };
    }),
  );
}

/** The 422 for a request with real identifiers, from an organization that refuses them (docs/api/privacy.md): one issue per element. */
export function realIdentifiersRefusedInFhir(findings: LocatedFinding[]): FhirError {
  return new InvalidMatchInput(
    privacyWarnings(findings, true).map((refused) => ({
      severity: 'error',
      code: 'security',
      diagnostics: refused.message,
      expression: [refused.path],
    })),
    422,
    'security',
  );
}

/** The ITI-119 input of a request, checked: a Parameters resource or a bare Patient, as FHIR JSON. */
export function matchInput(req: Request): FhirMatchBody {
  if (!req.is(['application/fhir+json', 'application/json'])) {
    throw new FhirError(
      415,
      'not-supported',
      `Send the Parameters resource or the Patient as application/fhir+json (got ${req.headers['content-type'] ?? 'no Content-Type'}).`,
    );
  }
  const parsed = fhirMatchBodySchema.safeParse(req.body);
  if (parsed.success) return parsed.data;
  const resourceType = (req.body as { resourceType?: unknown } | undefined)?.resourceType;
  throw invalidInput(parsed.error, typeof resourceType === 'string' && /^[A-Za-z]{1,64}$/.test(resourceType) ? resourceType : 'body');
}
