import { z } from 'zod';
import type { Database } from '../../platform/database';
import { refusesRealIdentifiers } from '../../platform/organizations';
import { guardJson, type LocatedFinding } from '../../privacy/fhir';
import { fieldFindingsMessage } from '../../privacy/guard';
import { ApiProblem } from './problem';

/** One masked element of a JSON request, as the answer's `warnings` list it. */
export const privacyWarningSchema = z
  .object({
    path: z.string().meta({ example: 'body.patient.identifiers[0].value' }),
    message: z.string(),
  })
  .meta({ id: 'PrivacyWarning', description: 'A real identifier the privacy guard masked before anything was stored or sent (docs/api/privacy.md)' });
export type PrivacyWarning = z.output<typeof privacyWarningSchema>;

/** One entry per element that held a real identifier, each message naming what it held. */
export function privacyWarnings(findings: readonly LocatedFinding[], refused: boolean): PrivacyWarning[] {
  const byPath = new Map<string, LocatedFinding[]>();
  for (const finding of findings) byPath.set(finding.path, [...(byPath.get(finding.path) ?? []), finding]);
  return [...byPath].map(([path, found]) => ({ path, message: fieldFindingsMessage(path, found, refused) }));
}

/** What the guard made of a JSON request: its value with real identifiers masked, and a warning for each. */
export interface GuardedRequest<T> {
  value: T;
  warnings: PrivacyWarning[];
}

/**
 * The privacy guard on a JSON request part (docs/api/privacy.md): real identifiers masked before the
 * handler stores or sends anything, or, when the organization refuses them, a 422 naming each one.
 */
export async function guardRequest<T>(db: Database, organizationId: string, value: T, root: string): Promise<GuardedRequest<T>> {
  const guarded = guardJson(value, root);
  if (guarded.findings.length === 0) return { value, warnings: [] };
  if (await refusesRealIdentifiers(db, organizationId)) throw realIdentifiersRefused(guarded.findings);
  return { value: guarded.value, warnings: privacyWarnings(guarded.findings, false) };
}

export function realIdentifiersRefused(findings: readonly LocatedFinding[]): ApiProblem {
  const errors = privacyWarnings(findings, true);
  return new ApiProblem(
    422,
    'real_identifier_refused',
    `The request carries ${errors.length === 1 ? 'a real identifier' : 'real identifiers'} and this organization refuses them (PUT /v1/sandbox/privacy): ${errors.map((error) => error.path).join(', ')}`,
    { errors },
  );
}

/** An answer with the guard's warnings, when there are any (the member is left out otherwise). */
export function withWarnings<T extends object>(answer: T, warnings: PrivacyWarning[]): T & { warnings?: PrivacyWarning[] } {
  return warnings.length > 0 ? { ...answer, warnings } : answer;
}
