import type { AccessGrant } from '../../smart/tokens';
import type { IdempotencyClaim } from './idempotency';
import type { ApiProblem } from './problem';

/** The organization and key an API-key request authenticated as (api/http/authenticate.ts). */
export interface AuthContext {
  organizationId: string;
  apiKeyId: string;
}

/**
 * What middleware hands to the handlers after it, typed once for every router (Express merges this
 * into `res.locals`): set by the middleware named beside each field, read by the ones after it.
 */
declare global {
  namespace Express {
    interface Locals {
      /** api/http/authenticate.ts, on routes with `auth: 'api_key'`. */
      auth?: AuthContext;
      /** api/fhir/routes.ts requireAccessToken: the SMART access token's grant. */
      grant?: AccessGrant;
      /** api/http/route.ts, for a route with `replayed`: what an Idempotency-Key replay answers instead. */
      replay?: { status: number; contentType: string; body: string };
      /** api/http/cost-limit.ts refuseAfterFailedAuthentication: the caller's address, which a 401 is charged to once answered. */
      clientAddress?: string;
      /** api/http/cost-limit.ts, when the address has spent its failed-authentication budget: answered instead of a 401. */
      failedAuthentication?: ApiProblem;
      /** api/http/idempotency.ts, on a request that sent an Idempotency-Key: what it reserved with the key. */
      idempotency?: IdempotencyClaim;
    }
  }
}
