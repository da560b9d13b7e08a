import type { OperationOutcome } from 'fhir/r4';

/** FHIR issue-type codes this endpoint answers with (http://hl7.org/fhir/R4/valueset-issue-type.html). */
export type IssueCode =
  | 'invalid'
  | 'login'
  | 'expired'
  | 'forbidden'
  | 'not-found'
  | 'not-supported'
  | 'processing'
  | 'exception'
  | 'security'
  | 'too-costly'
  | 'throttled'
  | 'transient';

/** An error on /fhir/R4, answered as an OperationOutcome (CONVENTIONS.md: FHIR conventions). */
export class FhirError extends Error {
  constructor(
    readonly status: number,
    readonly code: IssueCode,
    readonly diagnostics: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(diagnostics);
  }

  outcome(): OperationOutcome {
    return operationOutcome(this.code, this.diagnostics, this.status >= 500 ? 'fatal' : 'error');
  }
}

export function operationOutcome(
  code: IssueCode,
  diagnostics: string,
  severity: 'fatal' | 'error' | 'warning' | 'information' = 'error',
): OperationOutcome {
  return { resourceType: 'OperationOutcome', issue: [{ severity, code, diagnostics }] };
}

/** One problem of a resource a client sent, at the element it concerns (a FHIRPath `expression`). */
export interface ElementIssue {
  code: IssueCode;
  diagnostics: string;
  expression: string;
}

/** A resource refused for several reasons at once: every issue, each naming its element, in one OperationOutcome. */
export class FhirIssuesError extends FhirError {
  constructor(
    status: number,
    readonly issues: readonly ElementIssue[],
  ) {
    super(status, issues[0]?.code ?? 'invalid', issues.map((issue) => `${issue.expression}: ${issue.diagnostics}`).join(' '));
  }

  override outcome(): OperationOutcome {
    return {
      resourceType: 'OperationOutcome',
      issue: this.issues.map((issue) => ({ severity: 'error', code: issue.code, diagnostics: issue.diagnostics, expression: [issue.expression] })),
    };
  }
}
