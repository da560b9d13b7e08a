import { z } from 'zod';
import type { ZodOpenApiPathsObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import { fhirResourceSchema } from '../../fhir/resource-json';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../fhir/searchset';
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
