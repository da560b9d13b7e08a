import { z } from 'zod';
import type { ZodOpenApiPathsObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import { BULK_EXPORT_OPERATIONS } from '../../fhir/capability-statement';
import { fhirResourceSchema } from '../../fhir/resource-json';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../fhir/searchset';
import { PAS_TOPIC, STATUS_OPERATION, SUBSCRIPTION_STATUSES } from '../../fhir/subscriptions/vocabulary';
import { OUTPUT_FORMATS } from '../../interop/bulk-export/request';
import { SMART_PATHS } from '../../smart/endpoints';
import { fhirMatchBodySchema, matchBundleSchema } from '../interop/mpi';

/**
 * The FHIR R4 endpoint in /openapi.json. It is plain Express (FHIR's own parameter rules, errors as
 * OperationOutcomes), so it is described here; the per-type search parameters are in its
 * CapabilityStatement (`GET /fhir/R4/metadata`), which FHIR clients read.
 */

const FHIR_JSON = 'application/fhir+json';

const operationOutcomeSchema = z
  .object({
    resourceType: z.literal('OperationOutcome'),
    issue: z.array(z.object({ severity: z.enum(['fatal', 'error', 'warning', 'information']), code: z.string(), diagnostics: z.string() })),
  })
  .meta({ id: 'OperationOutcome', description: 'How every error on /fhir/R4 is answered.' });

const searchsetSchema = z
  .object({
    resourceType: z.literal('Bundle'),
    type: z.literal('searchset'),
    total: z.number().int(),
    link: z.array(z.object({ relation: z.enum(['self', 'next', 'previous']), url: z.string() })),
    entry: z.array(z.object({ fullUrl: z.string(), resource: fhirResourceSchema, search: z.object({ mode: z.literal('match') }) })).optional(),
  })
  .loose()
  .meta({ id: 'SearchsetBundle' });

const capabilityStatementSchema = z
  .object({ resourceType: z.literal('CapabilityStatement'), fhirVersion: z.literal('4.0.1') })
  .loose()
  .meta({ id: 'CapabilityStatement', description: 'The types, interactions and search parameters served, and the SMART OAuth URLs.' });

const fhir = (schema: z.ZodType) => ({ [FHIR_JSON]: { schema } });
const outcome = (description: string) => ({ description, content: fhir(operationOutcomeSchema) });

const tokenErrors: ZodOpenApiResponsesObject = {
  '401': outcome('No, a bad, an expired or a revoked access token (WWW-Authenticate says which)'),
  '403': outcome('The token’s scopes or patient do not cover this (another patient’s data is refused, never hidden)'),
  '404': outcome('No such resource, or a type not served'),
  '406': outcome('_format or Accept rules JSON out'),
};

const resultParameters = {
  _count: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: `Page size (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}).` }),
  _offset: z.coerce.number().int().min(0).optional().meta({ description: 'Where the page starts (the next link carries it).' }),
  _summary: z.literal('count').optional().meta({ description: '`count`: the total only.' }),
  _format: z.string().optional().meta({ description: '`json` or `application/fhir+json`.' }),
  _pretty: z.enum(['true', 'false']).optional(),
};

const kickOffParameters = z.object({
  _type: z
    .string()
    .optional()
    .meta({ description: 'Comma-separated resource types to export (default: every type the level and the token’s scopes allow).' }),
  _since: z.string().optional().meta({ description: 'Only resources updated after this FHIR instant, e.g. `2026-01-01T00:00:00Z`.' }),
  _typeFilter: z.string().optional().meta({
    description:
      '`<type>?<search parameters>` (repeatable, or comma-separated): only resources of that type matching one of its queries, e.g. `Observation?category=laboratory`.',
  }),
  _outputFormat: z.enum(OUTPUT_FORMATS).optional().meta({ description: 'NDJSON, the only format (the default).' }),
});

const manifestSchema = z
  .object({
    transactionTime: z.iso.datetime(),
    request: z.string().meta({ description: 'The kick-off URL.' }),
    requiresAccessToken: z.literal(true),
    output: z.array(z.object({ type: z.string(), url: z.string(), count: z.number().int() })),
    error: z.array(z.object({ type: z.literal('OperationOutcome'), url: z.string(), count: z.number().int() })),
  })
  .meta({ id: 'BulkExportManifest', description: 'FHIR Bulk Data 2.0 complete-status manifest.' });

/** The $export kick-off, status and file operations (FHIR Bulk Data 2.0; docs/api/bulk-data.md). */
function bulkExportPaths(base: string): ZodOpenApiPathsObject {
  const security = [{ smartAccessToken: [] }];
  const auth: ZodOpenApiResponsesObject = {
    '401': outcome('No, a bad, an expired or a revoked access token'),
    '403': outcome('Not a system-level token, or scopes that do not cover the types asked for'),
  };
  const kickOffOperation = (operationId: string, summary: string, description: string, path?: z.ZodObject) => ({
    operationId,
    summary,
    description,
    tags: ['FHIR R4'],
    security,
    requestParams: { ...(path ? { path } : {}), header: z.object({ prefer: z.literal('respond-async') }), query: kickOffParameters },
    responses: {
      '202': { description: 'Accepted; `Content-Location` is the status URL', headers: z.object({ 'content-location': z.string() }) },
      '400': outcome('No Prefer: respond-async, or a parameter that is wrong or not supported (_elements, includeAssociatedData, …)'),
      ...auth,
      ...(path ? { '404': outcome('No such Group') } : {}),
      '429': outcome('Too many exports running or kept for the organization (Retry-After)'),
    },
  });
  const kickOff = (operationId: string, summary: string, definition: string, path?: z.ZodObject) => {
    const description = `FHIR Bulk Data 2.0 kick-off (${definition}). Needs \`Prefer: respond-async\` and a system-level SMART token (system/*.rs or system/<type>.read). One Temporal workflow per export (\`export-<id>\`); poll the \`Content-Location\`.`;
    return {
      get: kickOffOperation(operationId, summary, description, path),
      post: {
        ...kickOffOperation(
          `${operationId}ByPost`,
          `${summary}, parameters in a body`,
          `${description} As a POST, the parameters may come in a FHIR \`Parameters\` body instead of the query.`,
          path,
        ),
        requestBody: { content: { 'application/fhir+json': { schema: z.object({ resourceType: z.literal('Parameters') }).passthrough() } } },
      },
    };
  };
  const exportId = z.object({ exportId: z.string().meta({ description: 'The export’s id (exp_…), from the status URL.' }) });
  return {
    [`${base}/$export`]: kickOff('exportSystem', 'Export every resource (Bulk Data)', `${BULK_EXPORT_OPERATIONS.system.definition}`),
    [`${base}/Patient/$export`]: kickOff(
      'exportPatients',
      'Export every patient’s compartment (Bulk Data)',
      BULK_EXPORT_OPERATIONS.patient.definition,
    ),
    [`${base}/Group/{id}/$export`]: kickOff(
      'exportGroup',
      'Export the compartments of a Group’s members (Bulk Data)',
      BULK_EXPORT_OPERATIONS.group.definition,
      z.object({ id: z.string().meta({ description: 'A Group, e.g. syn-group-payer-alderpeak.' }) }),
    ),
    [`${base}/bulk-export/{exportId}`]: {
      get: {
        operationId: 'getBulkExportStatus',
        summary: 'Poll a bulk export',
        tags: ['FHIR R4'],
        security,
        requestParams: { path: exportId },
        responses: {
          '200': { description: 'Done: the manifest', content: { 'application/json': { schema: manifestSchema } } },
          '202': { description: 'Running: `X-Progress` and `Retry-After` (seconds)' },
          ...auth,
          '404': outcome('No such export in the token’s organization (or it expired or was deleted)'),
          '500': outcome('The export failed'),
        },
      },
      delete: {
        operationId: 'deleteBulkExport',
        summary: 'Cancel a bulk export, or delete its files',
        tags: ['FHIR R4'],
        security,
        requestParams: { path: exportId },
        responses: { '202': { description: 'Cancelled; its files are gone' }, ...auth, '404': outcome('No such export in the token’s organization') },
      },
    },
    [`${base}/bulk-export/{exportId}/{file}`]: {
      get: {
        operationId: 'getBulkExportFile',
        summary: 'Read a bulk export file (NDJSON)',
        tags: ['FHIR R4'],
        security,
        requestParams: {
          path: exportId.extend({ file: z.string().meta({ description: 'The file name from the manifest, e.g. Patient-1.ndjson.' }) }),
        },
        responses: {
          '200': { description: 'One resource per line', content: { 'application/fhir+ndjson': { schema: z.string() } } },
          ...auth,
          '404': outcome('No such file, or the export expired'),
        },
      },
    },
  };
}

const subscriptionSchema = z
  .object({ resourceType: z.literal('Subscription'), id: z.string(), status: z.enum(SUBSCRIPTION_STATUSES), criteria: z.literal(PAS_TOPIC) })
  .loose()
  .meta({
    id: 'Subscription',
    description:
      'An R4 Subscription (Subscriptions Backport 1.1.0): the PAS topic, backport-filter-criteria `org-identifier=<identifier>` on `_criteria`, a rest-hook channel with `header`, `payload` and the backport-payload-content extension on `_payload` (`empty`, `id-only`, `full-resource`), backport-heartbeat-period.',
  });

/** FHIR Subscriptions (R4 Subscriptions Backport 1.1.0, the PAS topic; docs/api/fhir-subscriptions.md). */
function subscriptionPaths(base: string): ZodOpenApiPathsObject {
  const security = [{ smartAccessToken: [] }];
  const auth: ZodOpenApiResponsesObject = {
    '401': outcome('No, a bad, an expired or a revoked access token'),
    '403': outcome(
      'A patient-level token, or a system- or user-level one without system/Subscription.* or user/Subscription.* (or the permission the interaction needs)',
    ),
  };
  const id = z.object({ id: z.string().meta({ description: 'The Subscription’s id (sub-…).' }) });
  const statusBundle = {
    description: 'A searchset of SubscriptionStatus Parameters (backport-subscription-status-r4, type query-status)',
    content: fhir(searchsetSchema),
  };
  return {
    [`${base}/Subscription`]: {
      post: {
        operationId: 'createSubscription',
        summary: 'Subscribe to decided PAS authorizations (rest-hook)',
        description:
          'Created `requested`; a handshake notification is POSTed to the endpoint at once, and the subscription turns `active` (2xx) or `error`. Notifications are signed deliveries (`/v1/webhooks/deliveries`). Needs system/Subscription.c or user/Subscription.c.',
        tags: ['FHIR R4'],
        security,
        requestBody: { content: fhir(subscriptionSchema) },
        responses: {
          '201': { description: 'Created; `Location` names it', content: fhir(subscriptionSchema), headers: z.object({ location: z.string() }) },
          '400': outcome(
            'What cannot be honoured, each issue naming its element (expression): topic, filter, channel type, endpoint (the webhook SSRF guard), headers, payload',
          ),
          ...auth,
          '422': outcome('The organization keeps as many subscriptions as it may'),
        },
      },
      get: {
        operationId: 'searchSubscriptions',
        summary: 'The organization’s subscriptions',
        tags: ['FHIR R4'],
        security,
        requestParams: {
          query: z.object({
            status: z.string().optional().meta({ description: 'requested, active, error or off (comma-separated)' }),
            _id: z.string().optional(),
            criteria: z.string().optional().meta({ description: 'The topic canonical' }),
            url: z.string().optional().meta({ description: 'The topic canonical (as url)' }),
            _count: resultParameters._count,
          }),
        },
        responses: { '200': { description: 'The organization’s subscriptions', content: fhir(searchsetSchema) }, ...auth },
      },
    },
    [`${base}/Subscription/$status`]: {
      get: {
        operationId: 'subscriptionsStatus',
        summary: '$status of the organization’s subscriptions',
        description: `${STATUS_OPERATION}; \`ids\` names some (comma-separated).`,
        tags: ['FHIR R4'],
        security,
        requestParams: { query: z.object({ ids: z.string().optional() }) },
        responses: { '200': statusBundle, ...auth },
      },
    },
    [`${base}/Subscription/{id}/$status`]: {
      get: {
        operationId: 'subscriptionStatus',
        summary: '$status of one subscription',
        description: `${STATUS_OPERATION}: its status, events since it started, and its error when in error.`,
        tags: ['FHIR R4'],
        security,
        requestParams: { path: id },
        responses: { '200': statusBundle, ...auth, '404': outcome('No such subscription in the token’s organization') },
      },
    },
    [`${base}/Subscription/{id}`]: {
      get: {
        operationId: 'readSubscription',
        summary: 'Read a subscription',
        tags: ['FHIR R4'],
        security,
        requestParams: { path: id },
        responses: {
          '200': { description: 'The subscription', content: fhir(subscriptionSchema) },
          ...auth,
          '404': outcome('No such subscription in the token’s organization'),
        },
      },
      delete: {
        operationId: 'deleteSubscription',
        summary: 'Delete a subscription: its heartbeats stop, no notification is sent any more',
        tags: ['FHIR R4'],
        security,
        requestParams: { path: id },
        responses: { '204': { description: 'Deleted' }, ...auth, '404': outcome('No such subscription in the token’s organization') },
      },
    },
  };
}

export function fhirOpenApiPaths(resourceTypes: readonly string[]): ZodOpenApiPathsObject {
  const base = SMART_PATHS.fhirBase;
  const type = z.enum(resourceTypes as [string, ...string[]]).meta({ description: 'A resource type this server serves.' });
  const searchDescription =
    'Matches within the token’s patient compartment and scopes. Besides these, every search parameter the CapabilityStatement lists for the type (`name`, `code`, `date`, …); unknown ones are ignored unless `Prefer: handling=strict`.';
  const searchResponses: ZodOpenApiResponsesObject = {
    '200': { description: 'One page of matches', content: fhir(searchsetSchema) },
    '400': outcome('A search value that cannot be read, or (strict handling) an unknown parameter'),
    ...tokenErrors,
  };
  const security = [{ smartAccessToken: [] }];
  return {
    ...bulkExportPaths(base),
    ...subscriptionPaths(base),
    [`${base}/metadata`]: {
      get: {
        operationId: 'getFhirCapabilityStatement',
        summary: 'The CapabilityStatement (open)',
        tags: ['FHIR R4'],
        security: [],
        responses: { '200': { description: 'The CapabilityStatement', content: fhir(capabilityStatementSchema) } },
      },
    },
    [`${base}/{type}`]: {
      get: {
        operationId: 'searchFhir',
        summary: 'Search one resource type',
        description: searchDescription,
        tags: ['FHIR R4'],
        security,
        requestParams: {
          path: z.object({ type }),
          query: z.object({ patient: z.string().optional(), _id: z.string().optional(), ...resultParameters }),
        },
        responses: searchResponses,
      },
    },
    [`${base}/{type}/_search`]: {
      post: {
        operationId: 'searchFhirWithForm',
        summary: 'Search one resource type with the parameters as a form',
        description: searchDescription,
        tags: ['FHIR R4'],
        security,
        requestParams: { path: z.object({ type }) },
        requestBody: {
          required: false,
          content: { 'application/x-www-form-urlencoded': { schema: z.object({ patient: z.string().optional(), ...resultParameters }).loose() } },
        },
        responses: { ...searchResponses, '415': outcome('A body that is not a form') },
      },
    },
    [`${base}/Patient/$match`]: {
      post: {
        operationId: 'matchPatientFhir',
        summary: 'Find the records of a patient in the master patient index (IHE PDQm ITI-119)',
        description:
          'A `Parameters` resource (`resource`: the Patient, `onlyCertainMatches`, `count`) or a bare Patient. Answers a searchset Bundle, best first, each entry with `search.score` and the match-grade extension (certain, probable, possible) and a per-field breakdown. With `onlyCertainMatches` and several certain records, no Patient: an empty Bundle with an informational OperationOutcome. Needs an API key, or a SMART access token with a user- or system-level Patient search scope (`user/Patient.rs`, `system/Patient.rs`, or v1 `.read`); a patient-level token is 403.',
        tags: ['FHIR R4'],
        security: [{ smartAccessToken: [] }, { apiKey: [] }],
        requestBody: {
          required: true,
          content: { [FHIR_JSON]: { schema: fhirMatchBodySchema }, 'application/json': { schema: fhirMatchBodySchema } },
        },
        responses: {
          '200': { description: 'The candidates, best first', content: fhir(matchBundleSchema) },
          '400': outcome('The input is not a Parameters resource or Patient as ITI-119 defines it (one issue per field, with its expression)'),
          '401': outcome('No, a bad, an expired or a revoked API key or access token'),
          '403': outcome('The token’s scopes do not cover searching every Patient (user/ or system/ level)'),
          '405': outcome('Another method than POST (Allow: POST)'),
          '406': outcome('_format or Accept rules JSON out'),
          '415': outcome('A body that is not FHIR JSON'),
          '429': outcome('The API key’s rate limit'),
        },
      },
    },
    ...Object.fromEntries(
      (
        [
          [
            'submit',
            'submitPriorAuthorization',
            'Request a prior authorization (Da Vinci PAS 2.2.1 Claim/$submit)',
            'A PAS response Bundle: the ClaimResponse (X12 278 review action per item) and your request’s resources',
          ],
          [
            'inquire',
            'inquirePriorAuthorization',
            'Read a prior authorization’s current decision (Da Vinci PAS 2.2.1 Claim/$inquire)',
            'A PAS inquiry response Bundle, or an empty Parameters when none matches',
          ],
        ] as const
      ).map(([operation, operationId, summary, answer]) => [
        `${base}/Claim/$${operation}`,
        {
          post: {
            operationId,
            summary,
            description:
              'A PAS request Bundle (or a `Parameters` with it as `resource`), checked against the PAS request profiles. Needs a SMART token of the organization with Claim create: system-level (`system/Claim.c`, SMART Backend Services) or user-level (`user/Claim.c`, an app launch whose registration names it). See docs/api/prior-authorization.md (test member ids, the `X-Sandbox-Prior-Auth-Outcome` header, claim updates).',
            tags: ['FHIR R4'],
            security: [{ smartAccessToken: [] }],
            requestBody: { required: true, content: { [FHIR_JSON]: { schema: fhirResourceSchema } } },
            responses: {
              '200': { description: answer, content: fhir(fhirResourceSchema) },
              '400': outcome('The request does not meet the PAS request profiles (one issue per problem, its element in expression)'),
              '401': outcome('No, a bad, an expired or a revoked access token'),
              '403': outcome('A patient-level token, or a system- or user-level one without system/Claim.c or user/Claim.c'),
              '405': outcome('Another method than POST (Allow: POST)'),
              '409': outcome('A claim update for an authorization that is closed'),
              '503': outcome('The request could not be checked just now; send it again'),
            },
          },
        },
      ]),
    ),
    [`${base}/{type}/{id}`]: {
      get: {
        operationId: 'readFhir',
        summary: 'Read one resource',
        tags: ['FHIR R4'],
        security,
        requestParams: { path: z.object({ type, id: z.string().meta({ description: 'The logical id, e.g. syn-pat-0001.' }) }) },
        responses: {
          '200': {
            description: 'The resource, with ETag and Last-Modified',
            content: fhir(fhirResourceSchema),
          },
          '304': { description: 'Not modified (If-None-Match)' },
          ...tokenErrors,
        },
      },
    },
  };
}
