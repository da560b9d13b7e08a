import type { RequestHandler } from 'express';
import { ApiProblem } from './problem';

/**
 * Paths the dashboard owns (spec §4, §7): this API answers every method on them (and below them,
 * where `subpaths` is set) with 501 and says where to go. `operations` are the ones the OpenAPI
 * document lists, by method and operationId.
 */
export const DASHBOARD_OWNED = [
  { path: '/v1/auth/status', subpaths: false, operations: { get: 'getAuthStatus' } },
  { path: '/v1/api-keys', subpaths: true, operations: { get: 'listApiKeys', post: 'createApiKey' } },
] as const;

export const DASHBOARD_OWNED_PATHS = DASHBOARD_OWNED.map((owned) => (owned.subpaths ? `${owned.path}{/*rest}` : owned.path));

export const answerDashboardOwned: RequestHandler = (req) => {
  throw new ApiProblem(
    501,
    'owned_by_dashboard',
    `${req.method} ${req.path} belongs to the dashboard, which handles operator sign-in and API key management. ` +
      'This API does not implement it; operators provision keys with `npm run keys`.',
  );
};
