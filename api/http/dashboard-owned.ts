import type { RequestHandler } from 'express';
import { ApiProblem } from './problem';

/** Paths the dashboard owns (spec §4, §7); this API answers them with 501 and says where to go. */
export const DASHBOARD_OWNED_PATHS = ['/v1/auth/status', '/v1/api-keys{/*rest}'];

export const answerDashboardOwned: RequestHandler = (req) => {
  throw new ApiProblem(
    501,
    'owned_by_dashboard',
    `${req.method} ${req.path} belongs to the dashboard, which handles operator sign-in and API key management. ` +
      'This API does not implement it; operators provision keys with `npm run keys`.',
  );
};
