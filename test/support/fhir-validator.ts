import { type FhirIssue, loadProfileValidator, readPasPackage } from '../../fhir/validation/profile-validator';
import { fhirSchemaErrors } from './fhir-schema';

/**
 * The profile validator every test calls on what the product emits (CONVENTIONS: FHIR content is
 * validated against base R4 and the profiles it claims): the product's own validator
 * (fhir/validation/profile-validator.ts: base R4 with Medplum, the Da Vinci PAS 2.2.1 package, and
 * what it cannot check as warnings) plus the official R4 JSON schema (fhir-schema.ts: structure,
 * primitive formats, required code bindings), which the product does not need at run time.
 */

const validator = await loadProfileValidator();

/** The package's own examples (the validator's tests check it passes them). */
export const pasExamples = () => readPasPackage('package/example/');

export interface FhirValidation {
  errors: string[];
  warnings: string[];
}

const line = (issue: FhirIssue) => `${issue.label}${issue.expression}: ${issue.text}`;

/** Validates one resource (and what it holds) against base R4 and every profile claimed in `meta.profile`. */
export function validateFhir(resource: object): FhirValidation {
  const issues = validator.validate(resource);
  return {
    errors: [...fhirSchemaErrors(resource).map((error) => `schema ${error}`), ...issues.filter((issue) => issue.severity === 'error').map(line)],
    warnings: [...new Set(issues.filter((issue) => issue.severity === 'warning').map(line))],
  };
}

const printed = new Set<string>();

/**
 * The errors of one resource (empty when it conforms); its warnings are printed, each once per
 * test file, so what the validator could not check is seen rather than hidden.
 */
export function fhirErrors(resource: object): string[] {
  const { errors, warnings } = validateFhir(resource);
  const label = `${String((resource as { resourceType?: unknown }).resourceType)}/${String((resource as { id?: unknown }).id)}`;
  for (const warning of warnings) {
    if (printed.has(warning)) continue;
    printed.add(warning);
    console.warn(`FHIR validation warning (${label}, first seen): ${warning}`);
  }
  return errors;
}
