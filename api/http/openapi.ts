import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { DASHBOARD_OWNED } from './dashboard-owned';
import { problemSchema } from './problem';
import { type AnyRoute, createsWork } from './route';

const idempotencyHeader = z.object({
  'idempotency-key': z
    .string()
    .max(255)
    .optional()
    .meta({ description: 'Makes a retry safe: the same key and body within 24 h answers the first response again and creates nothing new.' }),
});

/** Problems any API-key route can answer, whatever its own errors are. */
const COMMON_API_KEY_ERRORS = [401, 429];

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request (bad JSON, bad cursor)',
  401: 'Missing, unknown or revoked API key',
  404: 'No such object in your organization',
  409: 'Conflicts with the current state (or the same Idempotency-Key is still in progress)',
  413: 'Request body too large',
  415: 'Body is not JSON',
  422: 'Validation failed; `errors` lists each bad field',
  429: 'Rate limit reached; see Retry-After',
  501: 'Owned by the dashboard',
  503: 'A dependency is not answering',
};

/** This document and the page that shows it. */
const DOCS_PATHS: ZodOpenApiPathsObject = {
  '/openapi.json': {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      tags: ['Docs'],
      security: [],
      responses: { '200': { description: 'The document', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  },
  '/docs': {
    get: {
      operationId: 'getApiReference',
      summary: 'The API reference (Swagger UI)',
      tags: ['Docs'],
      security: [],
      responses: { '200': { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  },
};

/** The OpenAPI 3.1 document, built from the same route definitions that validate requests. */
export function buildOpenApiDocument(
  routes: AnyRoute[],
  options: {
    baseUrl: string;
    version: string;
    /** Operations of the routers that are not defineRoute ones (SMART, OAuth, FHIR), described beside them. */
    otherPaths: ZodOpenApiPathsObject;
  },
) {
  const paths: ZodOpenApiPathsObject = { ...DOCS_PATHS, ...options.otherPaths };
  for (const route of routes) {
    const errorStatuses = [
      ...new Set([
        ...(route.auth === 'api_key' ? COMMON_API_KEY_ERRORS : []),
        ...(createsWork(route) ? [400, 409, 422] : []),
        ...(route.errors ?? []),
      ]),
    ].sort();
    const operation: ZodOpenApiOperationObject = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: route.auth === 'api_key' ? [{ apiKey: [] }] : [],
      requestParams: {
        ...(route.params ? { path: route.params } : {}),
        ...(route.query ? { query: route.query } : {}),
        ...(createsWork(route) ? { header: idempotencyHeader } : {}),
      },
      ...(route.body
        ? {
            requestBody: {
              required: true,
              ...(route.textBody ? { description: route.textBody.description } : {}),
              content: {
                'application/json': { schema: route.body },
                ...Object.fromEntries((route.textBody?.contentTypes ?? []).map((type) => [type, { schema: { type: 'string' as const } }])),
              },
            },
          }
        : {}),
      responses: {
        [String(route.success.status)]: {
          description: route.success.description,
          content: {
            'application/json': { schema: route.success.schema },
            ...Object.fromEntries((route.alsoResponds ?? []).map((type) => [type, { schema: { type: 'string' as const } }])),
          },
        },
        ...Object.fromEntries(
          errorStatuses.map((status) => [
            String(status),
            { description: ERROR_DESCRIPTIONS[status] ?? 'Error', content: { 'application/problem+json': { schema: problemSchema } } },
          ]),
        ),
      },
    };
    paths[route.path] = { ...paths[route.path], [route.method]: operation };
  }
  const dashboardOwned: ZodOpenApiOperationObject = {
    summary: 'Owned by the dashboard: always 501',
    tags: ['Dashboard-owned'],
    security: [],
    responses: { '501': { description: ERROR_DESCRIPTIONS[501]!, content: { 'application/problem+json': { schema: problemSchema } } } },
  };
  for (const owned of DASHBOARD_OWNED) {
    paths[owned.path] = Object.fromEntries(
      Object.entries(owned.operations).map(([method, operationId]) => [method, { ...dashboardOwned, operationId }]),
    );
  }

  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Synthetic Healthcare Sandbox — Control Plane API',
      version: options.version,
      description: 'Synthetic (non-production) healthcare integration sandbox. No real patient data is ever stored or served.',
    },
    servers: [{ url: options.baseUrl }],
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer sk_sandbox_...`' },
        smartAccessToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A SMART on FHIR access token from `POST /oauth/token`, for `/fhir/R4`: `Authorization: Bearer <access_token>`.',
        },
        clientBasic: { type: 'http', scheme: 'basic', description: 'A confidential SMART client: its client_id and client_secret.' },
      },
    },
    paths,
  });
}
