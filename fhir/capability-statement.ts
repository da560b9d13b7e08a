import type { CapabilityStatement, CapabilityStatementRestResource } from 'fhir/r4';
import { searchParametersOf } from './search-parameters';
import {
  BACKPORT_EXTENSIONS,
  BACKPORT_IG,
  BACKPORT_PROFILES,
  BACKPORT_SERVER_CAPABILITIES,
  PAS_SUBSCRIPTION_PROFILE,
  STATUS_OPERATION,
  SUBSCRIPTION_TOPICS,
} from './subscriptions/vocabulary';

/** FHIR Bulk Data Access 2.0 (http://hl7.org/fhir/uv/bulkdata/): the server's capabilities and its three `$export` operations. */
const BULK_DATA = 'http://hl7.org/fhir/uv/bulkdata';
const BULK_DATA_CAPABILITY_STATEMENT = `${BULK_DATA}/CapabilityStatement/bulk-data`;
const EXPORT_DOCUMENTATION =
  'FHIR Bulk Data 2.0 kick-off (Prefer: respond-async; _type, _since, _typeFilter, _outputFormat ndjson); needs a system-level token (system/*.rs); see docs/api/bulk-data.md';
export const BULK_EXPORT_OPERATIONS = {
  system: { name: 'export', definition: `${BULK_DATA}/OperationDefinition/export`, documentation: `Every resource. ${EXPORT_DOCUMENTATION}` },
  patient: {
    name: 'export',
    definition: `${BULK_DATA}/OperationDefinition/patient-export`,
    documentation: `Every patient's compartment. ${EXPORT_DOCUMENTATION}`,
  },
  group: {
    name: 'export',
    definition: `${BULK_DATA}/OperationDefinition/group-export`,
    documentation: `The compartments of a Group's members (a payer's members, a provider's attributed patients). ${EXPORT_DOCUMENTATION}`,
  },
} as const;

/** Da Vinci PAS 2.2.1's operations on Claim (docs/api/prior-authorization.md). */
const PAS_OPERATIONS = [
  {
    name: 'submit',
    definition: 'http://hl7.org/fhir/us/davinci-pas/OperationDefinition/Claim-submit',
    documentation: 'A PAS request Bundle in, a PAS response Bundle out; needs a system- or user-level token with system/Claim.c or user/Claim.c',
  },
  {
    name: 'inquire',
    definition: 'http://hl7.org/fhir/us/davinci-pas/OperationDefinition/Claim-inquiry',
    documentation:
      "A PAS inquiry Bundle in, the authorization's current state out; needs a system- or user-level token with system/Claim.c or user/Claim.c",
  },
];

/**
 * Subscriptions (R4 Subscriptions Backport 1.1.0): the resource as its server capability statement
 * asks, the topic served (capabilitystatement-subscriptiontopic-canonical) and `$status`.
 */
export const SUBSCRIPTION_RESOURCE: CapabilityStatementRestResource = {
  type: 'Subscription',
  extension: SUBSCRIPTION_TOPICS.map((topic) => ({ url: BACKPORT_EXTENSIONS.topicCanonical, valueCanonical: topic })),
  profile: BACKPORT_PROFILES.subscription,
  supportedProfile: [PAS_SUBSCRIPTION_PROFILE],
  documentation:
    'Topic-based subscriptions (R4 Subscriptions Backport 1.1.0) to the Da Vinci PAS topic: filter org-identifier=<identifier>, rest-hook channel with headers, payload empty, id-only or full-resource, heartbeats. The organization of a system- or user-level token (system/Subscription.*, user/Subscription.*) owns its subscriptions. See docs/api/fhir-subscriptions.md.',
  interaction: [{ code: 'create' }, { code: 'read' }, { code: 'delete' }, { code: 'search-type' }],
  versioning: 'no-version',
  readHistory: false,
  searchParam: [
    { name: '_id', type: 'token', documentation: 'Logical id' },
    { name: 'status', type: 'token', documentation: 'requested, active, error or off' },
    { name: 'criteria', type: 'string', documentation: 'The topic canonical' },
    { name: 'url', type: 'uri', documentation: 'The topic canonical' },
  ],
  operation: [{ name: 'status', definition: STATUS_OPERATION, documentation: 'The status of one subscription, or of the organization’s (ids)' }],
};

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
  const worldResources: CapabilityStatementRestResource[] = [...options.resourceTypes].sort().map((type) => ({
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
            BULK_EXPORT_OPERATIONS.patient,
          ],
        }
      : {}),
    ...(type === 'Group' ? { operation: [BULK_EXPORT_OPERATIONS.group] } : {}),
    ...(type === 'Claim' ? { operation: PAS_OPERATIONS } : {}),
  }));
  const resource = [...worldResources, SUBSCRIPTION_RESOURCE].sort((a, b) => a.type.localeCompare(b.type));
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: options.published,
    publisher: 'Synthetic Healthcare Sandbox',
    kind: 'instance',
    software: { name: 'Synthetic Healthcare Sandbox', version: options.version },
    implementation: { description: 'Synthetic (non-production) FHIR R4 endpoint: no real patient data.', url: urls.fhirBase },
    instantiates: [BULK_DATA_CAPABILITY_STATEMENT, BACKPORT_SERVER_CAPABILITIES],
    implementationGuide: [BACKPORT_IG],
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
            "Reads need a SMART access token. An app launch gets patient-level scopes (patient/<type>.rs or .read) and reads only its own patient; an app whose registration names user-level scopes (a provider's app acting as its user) gets them (user/<type>.rs or .read, user/Claim.c, user/Subscription.crds) and reads every patient of the synthetic world. A backend services client (SMART Backend Services: client_credentials with a private_key_jwt assertion signed RS384 or ES384) gets system-level scopes (system/<type>.rs or .read, system/Claim.c, system/Subscription.crds) and reads every patient of the synthetic world. Claim/$submit, Claim/$inquire and Subscription take system- or user-level tokens of the organization; bulk exports ($export) need system-level scopes. See /.well-known/smart-configuration.",
        },
        resource,
        operation: [BULK_EXPORT_OPERATIONS.system],
      },
    ],
  };
}
