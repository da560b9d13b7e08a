import type { Client } from '@temporalio/client';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { canEvaluate } from '../fhir/search-parameters';
import type { FhirStore } from '../fixtures/store';
import { createApiKeyCache } from '../platform/api-key-cache';
import type { Config } from '../platform/config';
import { type CostBudget, createCostBudget } from '../platform/cost-budget';
import type { Database, Listen } from '../platform/database';
import { createConfiguredGateway, type WorkflowGateway } from '../platform/workflow-gateway';
import { createAuthorizationFlow } from '../smart/authorizations';
import { SMART_PATHS, smartUrls } from '../smart/endpoints';
import { createTokenService } from '../smart/tokens';
import type { ResolveHost } from '../webhooks/targets';
import { fhirOpenApiPaths } from './fhir/openapi';
import { fhirCost, fhirRouter } from './fhir/routes';
import { healthRoutes } from './health/routes';
import { ER7_MEDIA_TYPES, hl7Routes } from './hl7/routes';
import { authenticate } from './http/authenticate';
import { refuseDeepJson } from './http/body-depth';
import { costLimit, refuseAfterFailedAuthentication } from './http/cost-limit';
import { answerDashboardOwned, DASHBOARD_OWNED, DASHBOARD_OWNED_PATHS } from './http/dashboard-owned';
import { byFirstSegment, onlyUnder, series, withBodyOnly } from './http/dispatch';
import { docsRouter } from './http/docs';
import { idempotency } from './http/idempotency';
import { buildOpenApiDocument } from './http/openapi';
import { ApiProblem } from './http/problem';
import { JSON_BODY_LIMIT, problemHandler } from './http/problem-handler';
import { perKeyRateLimit } from './http/rate-limit';
import { requestContext } from './http/request-context';
import { type AnyRoute, routeTable } from './http/route';
import { aggregatorRoutes } from './interop/aggregator';
import { credentialingRoutes } from './interop/credentialing';
import { mpiRoutes } from './interop/mpi';
import { sandboxCatalogRoutes } from './sandbox/catalog';
import { patientRoutes } from './sandbox/patients';
import { priorAuthSandboxRoutes } from './sandbox/prior-auth';
import { privacyRoutes } from './sandbox/privacy';
import { sandboxResourceRoutes } from './sandbox/resources';
import { scenarioRoutes } from './scenarios/routes';
import { smartClientRoutes } from './smart/clients';
import { smartDiscoveryRouter } from './smart/discovery';
import { smartLaunchRoutes } from './smart/launches';
import { oauthCost, oauthRouter } from './smart/oauth';
import { smartOpenApiPaths } from './smart/openapi';
import { connectionRoutes } from './webhooks/connections';
import { webhookDeliveryRoutes } from './webhooks/deliveries';
import { webhookReliabilityRoutes } from './webhooks/reliability';
import { settingsRoutes } from './webhooks/settings';

export interface ApiDependencies {
  config: Config;
  db: Database;
  /** The database's LISTEN (DatabaseHandle.listen): revoked API keys and SMART tokens leave this process's caches through it. */
  listen: Listen;
  temporal: Client;
  logger: Logger;
  version: string;
  /** The synthetic FHIR world, the same for every organization. */
  fhirStore: FhirStore;
  /** The DNS lookup webhook URLs are checked with when configured; the system resolver when absent. */
  resolveHost?: ResolveHost;
  /** How requests start and steer workflows, shared with the MLLP listener (one line per organization for both); a new one when absent. */
  workflows?: WorkflowGateway;
  /** The per-address failed-authentication budget (FAILED_AUTH_PER_MINUTE), shared with the MLLP listener; a new one when absent. */
  failedAuthentications?: CostBudget;
}

/**
 * The whole HTTP API in one place: every feature's routes (api/<feature>/), the routers that are
 * not /v1 (SMART discovery, OAuth, FHIR R4), and the shared middleware around them (api/http/).
 */
export function createApp(deps: ApiDependencies): Express {
  const workflows = deps.workflows ?? createConfiguredGateway(deps.temporal, deps.config);
  const urls = smartUrls(deps.config.PUBLIC_BASE_URL);
  const tokens = createTokenService({ db: deps.db, lifetimes: deps.config, urls, listen: deps.listen, canFilter: canEvaluate });
  const flow = createAuthorizationFlow({ ...deps, urls, tokens, canFilter: canEvaluate });
  const routes: AnyRoute[] = [
    ...healthRoutes(deps),
    ...settingsRoutes(deps),
    ...connectionRoutes(deps),
    ...webhookDeliveryRoutes({ ...deps, workflows }),
    ...webhookReliabilityRoutes(deps),
    ...patientRoutes(deps),
    ...sandboxResourceRoutes(deps),
    ...sandboxCatalogRoutes(deps),
    ...privacyRoutes(deps),
    ...scenarioRoutes({ ...deps, workflows }),
    ...priorAuthSandboxRoutes({ ...deps, workflows }),
    ...hl7Routes({ ...deps, workflows }),
    ...mpiRoutes(deps),
    ...credentialingRoutes(deps),
    ...aggregatorRoutes({ ...deps, workflows }),
    ...smartClientRoutes(deps),
    ...smartLaunchRoutes({ ...deps, urls }),
  ];

  const app = express();
  app.disable('x-powered-by');
  requestContext(app, deps.logger);
  // Before any body is read or credential looked up: budgets per address for what has no API key to count against.
  const { FAILED_AUTH_PER_MINUTE, OAUTH_RATE_LIMIT_PER_MINUTE, FHIR_RATE_LIMIT_PER_MINUTE } = deps.config;
  const failedAuthentications = deps.failedAuthentications ?? createCostBudget(FAILED_AUTH_PER_MINUTE);
  const afterFailedAuthentication = refuseAfterFailedAuthentication(failedAuthentications, FAILED_AUTH_PER_MINUTE);
  const json = withBodyOnly(express.json({ limit: JSON_BODY_LIMIT, type: ['application/json', 'application/*+json'], verify: refuseDeepJson }));
  const otherPaths = { ...smartOpenApiPaths(), ...fhirOpenApiPaths(deps.fhirStore.supportedTypes) };
  const docs = docsRouter(buildOpenApiDocument(routes, { baseUrl: deps.config.PUBLIC_BASE_URL, version: deps.version, otherPaths }));
  const discovery = smartDiscoveryRouter({ urls, tokens });
  const apiKey = [authenticate(createApiKeyCache(deps.db, deps.listen)), perKeyRateLimit(deps.db, deps.config.RATE_LIMIT_PER_MINUTE)];
  const api = routeTable(routes, { apiKey, creatingWork: [idempotency(deps.db)] });
  const dashboardOwned = express.Router();
  dashboardOwned.all(DASHBOARD_OWNED_PATHS, answerDashboardOwned);
  // Each request runs only the middleware and the router its path can reach (api/http/dispatch.ts),
  // in this order: address budgets, the JSON body, then the router.
  app.use(
    byFirstSegment(
      {
        '/v1': series([
          afterFailedAuthentication,
          json,
          // HL7 v2 in ER7 is text; the inject checks its own 256 KiB limit so the answer can carry an ACK.
          onlyUnder(['/v1/sandbox/hl7/inject'], express.text({ limit: JSON_BODY_LIMIT, type: [...ER7_MEDIA_TYPES] })),
          onlyUnder(
            DASHBOARD_OWNED.map((owned) => owned.path),
            dashboardOwned,
          ),
          api,
        ]),
        '/fhir': series([
          afterFailedAuthentication,
          costLimit({
            budget: createCostBudget(FHIR_RATE_LIMIT_PER_MINUTE),
            surface: 'FHIR',
            perMinute: FHIR_RATE_LIMIT_PER_MINUTE,
            costOf: fhirCost,
          }),
          json,
          // Discovery first: its /fhir/R4/.well-known/smart-configuration is open, unlike the FHIR reads.
          onlyUnder([`${SMART_PATHS.fhirBase}/.well-known`], discovery),
          fhirRouter({ ...deps, tokens, urls, apiKey, workflows }),
        ]),
        '/oauth': series([
          afterFailedAuthentication,
          costLimit({
            budget: createCostBudget(OAUTH_RATE_LIMIT_PER_MINUTE),
            surface: 'OAuth',
            perMinute: OAUTH_RATE_LIMIT_PER_MINUTE,
            costOf: oauthCost,
          }),
          json,
          oauthRouter({ ...deps, urls, flow, tokens }),
        ]),
        '/.well-known': series([json, discovery]),
        '/openapi.json': series([json, docs]),
        '/docs': series([json, docs]),
      },
      // /healthz, /readyz, and paths no router answers (they go on to the 404).
      series([json, api]),
    ),
  );
  app.use((req) => {
    throw new ApiProblem(404, 'route_not_found', `No endpoint answers ${req.method} ${req.path}. The API reference is at /docs.`);
  });
  app.use(problemHandler);
  return app;
}
