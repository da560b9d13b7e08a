import type { Client } from '@temporalio/client';
import express, { type ErrorRequestHandler, type Express } from 'express';
import type { Logger } from 'pino';
import { canEvaluate } from '../fhir/search-parameters';
import type { FhirStore } from '../fixtures/store';
import type { Config } from '../platform/config';
import type { Database } from '../platform/database';
import { createAuthorizationFlow } from '../smart/authorizations';
import { smartUrls } from '../smart/endpoints';
import { createTokenService } from '../smart/tokens';
import { connectionRoutes } from './webhooks/connections';
import { answerDashboardOwned, DASHBOARD_OWNED_PATHS } from './http/dashboard-owned';
import { docsRouter } from './http/docs';
import { fhirRouter } from './fhir/routes';
import { healthRoutes } from './health/routes';
import { authenticate } from './http/authenticate';
import { idempotency } from './http/idempotency';
import { perKeyRateLimit } from './http/rate-limit';
import { requestContext } from './http/request-context';
import { buildOpenApiDocument } from './http/openapi';
import { patientRoutes } from './sandbox/patients';
import { ApiProblem } from './http/problem';
import { type AnyRoute, mountRoutes } from './http/route';
import { sandboxCatalogRoutes } from './sandbox/catalog';
import { sandboxResourceRoutes } from './sandbox/resources';
import { settingsRoutes } from './webhooks/settings';
import { smartClientRoutes } from './smart/clients';
import { smartDiscoveryRouter } from './smart/discovery';
import { smartLaunchRoutes } from './smart/launches';
import { oauthRouter } from './smart/oauth';
import { webhookDeliveryRoutes } from './webhooks/deliveries';
import { webhookReliabilityRoutes } from './webhooks/reliability';

export interface ApiDependencies {
  config: Config;
  db: Database;
  temporal: Client;
  logger: Logger;
  version: string;
  /** The synthetic FHIR world, the same for every organization. */
  fhirStore: FhirStore;
}

export const JSON_BODY_LIMIT = '1mb';

export function createApp(deps: ApiDependencies): Express {
  const urls = smartUrls(deps.config.PUBLIC_BASE_URL);
  const tokens = createTokenService({ db: deps.db, lifetimes: deps.config, urls });
  const flow = createAuthorizationFlow({ ...deps, urls, tokens, canFilter: canEvaluate });
  const routes: AnyRoute[] = [
    ...healthRoutes(deps),
    ...settingsRoutes(deps),
    ...connectionRoutes(deps),
    ...webhookDeliveryRoutes(deps),
    ...webhookReliabilityRoutes(deps),
    ...patientRoutes(deps),
    ...sandboxResourceRoutes(deps),
    ...sandboxCatalogRoutes(),
    ...smartClientRoutes(deps),
    ...smartLaunchRoutes({ ...deps, urls }),
  ];

  const app = express();
  app.disable('x-powered-by');
  app.use(requestContext(deps.logger));
  app.use(express.json({ limit: JSON_BODY_LIMIT, type: ['application/json', 'application/*+json'] }));
  app.all(DASHBOARD_OWNED_PATHS, answerDashboardOwned);
  app.use(docsRouter(buildOpenApiDocument(routes, { baseUrl: deps.config.PUBLIC_BASE_URL, version: deps.version })));
  // Discovery first: its /fhir/R4/.well-known/smart-configuration is open, unlike the FHIR reads.
  app.use(smartDiscoveryRouter({ urls, tokens }));
  app.use(oauthRouter({ ...deps, flow, tokens }));
  app.use(fhirRouter({ ...deps, tokens, urls }));

  const router = express.Router();
  mountRoutes(router, routes, {
    apiKey: [authenticate(deps.db), perKeyRateLimit(deps.config.RATE_LIMIT_PER_MINUTE)],
    creatingWork: [idempotency(deps.db)],
  });
  app.use(router);

  app.use((req) => {
    throw new ApiProblem(404, 'route_not_found', `No endpoint answers ${req.method} ${req.path}. The API reference is at /docs.`);
  });
  app.use(problemHandler);
  return app;
}

/** Every error leaves as application/problem+json; unexpected ones are logged and never leak a stack. */
const problemHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const problem = toProblem(error);
  if (problem.status >= 500 && problem.code === 'internal_error') req.log.error({ err: error }, 'Unhandled error');
  for (const [name, value] of Object.entries(problem.extra.headers ?? {})) res.setHeader(name, value);
  res.status(problem.status).type('application/problem+json').send(JSON.stringify(problem.body(String(req.id), req.originalUrl)));
};

function toProblem(error: unknown): ApiProblem {
  if (error instanceof ApiProblem) return error;
  const bodyError = error as { type?: string; status?: number };
  if (bodyError.type === 'entity.parse.failed') return new ApiProblem(400, 'malformed_json', 'The request body is not valid JSON.');
  if (bodyError.type === 'entity.too.large') return new ApiProblem(413, 'body_too_large', `The request body is larger than the ${JSON_BODY_LIMIT} limit.`);
  if (bodyError.type === 'encoding.unsupported' || bodyError.type === 'charset.unsupported') {
    return new ApiProblem(415, 'unsupported_encoding', 'Send the body as UTF-8 JSON.');
  }
  return new ApiProblem(500, 'internal_error', 'Something went wrong on our side. Quote the request_id when you report it.');
}
