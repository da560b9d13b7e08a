import type { CapabilityStatement, CapabilityStatementRestResource } from 'fhir/r4';
import { searchParametersOf } from './search-parameters';

/**
 * The R4 CapabilityStatement of /fhir/R4: exactly the types, interactions and search parameters
 * served, secured by SMART on FHIR (the `oauth-uris` extension and the SMART-on-FHIR service).
 */
/** The absolute URLs the statement publishes: the FHIR base and the authorization server's endpoints (smart/endpoints.ts gives them). */
export interface SecuredByUrls {
  fhirBase: string;
  authorize: string;
  token: string;
  introspect: string;
  revoke: string;
}

export function capabilityStatement(options: {
  urls: SecuredByUrls;
  resourceTypes: readonly string[];
  version: string;
  published: string;
}): CapabilityStatement {
  const { urls } = options;
  const resource: CapabilityStatementRestResource[] = [...options.resourceTypes].sort().map((type) => ({
    type: type as CapabilityStatementRestResource['type'],
    interaction: [{ code: 'read' }, { code: 'search-type' }],
    versioning: 'no-version',
    readHistory: false,
    searchParam: [
      { name: '_id', type: 'token', documentation: 'Logical id' },
      ...(type === 'Patient'
        ? []
        : [{ name: 'patient', type: 'reference' as const, documentation: "The patient the resource is about (defaults to the token's patient)" }]),
      ...Object.entries(searchParametersOf(type)).map(([name, definition]) => ({
        name,
        type: definition.type,
        documentation: definition.description,
      })),
      { name: '_count', type: 'number', documentation: 'Page size, 0 to 200 (default 50)' },
    ],
    ...(type === 'Patient'
      ? {
          operation: [
            {
              name: 'match',
              definition: 'http://hl7.org/fhir/OperationDefinition/Patient-match',
              documentation: 'IHE PDQm ITI-119 over the master patient index; needs a user- or system-level Patient search scope, or an API key',
            },
          ],
        }
      : {}),
  }));
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: options.published,
    publisher: 'Synthetic Healthcare Sandbox',
    kind: 'instance',
    software: { name: 'Synthetic Healthcare Sandbox', version: options.version },
    implementation: { description: 'Synthetic (non-production) FHIR R4 endpoint: no real patient data.', url: urls.fhirBase },
    fhirVersion: '4.0.1',
    format: ['json', 'application/fhir+json'],
    rest: [
      {
        mode: 'server',
        security: {
          cors: true,
          service: [
            {
              coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR', display: 'SMART-on-FHIR' }],
              text: 'OAuth2 using SMART-on-FHIR profile (see http://docs.smarthealthit.org)',
            },
          ],
          extension: [
            {
              url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
              extension: [
                { url: 'authorize', valueUri: urls.authorize },
                { url: 'token', valueUri: urls.token },
                { url: 'introspect', valueUri: urls.introspect },
                { url: 'revoke', valueUri: urls.revoke },
              ],
            },
          ],
          description:
            'Reads need a SMART access token. An app launch gets patient-level scopes (patient/<type>.rs or .read) and reads only its own patient. A backend services client (SMART Backend Services: client_credentials with a private_key_jwt assertion signed RS384 or ES384) gets system-level scopes (system/<type>.rs or .read) and reads every patient of the synthetic world. See /.well-known/smart-configuration.',
        },
        resource,
      },
    ],
  };
}
