import type { Request, RequestHandler, Response } from 'express';
import type { CostBudget } from '../../platform/cost-budget';
import { ApiProblem } from './problem';

const addresses = new WeakMap<Request, string>();

/**
 * The caller's address (Express's req.ip: the socket's, or the proxy chain's when `trust proxy` is
 * set), worked out once per request: req.ip parses the forwarding headers again at every read, and
 * without `trust proxy` (the default) it is the socket's address whatever they say, so that is read directly.
 */
export function clientAddress(req: Request): string {
  if (req.app.get('trust proxy') === false) return req.socket.remoteAddress ?? 'unknown';
  let address = addresses.get(req);
  if (address === undefined) {
    address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    addresses.set(req, address);
  }
  return address;
}

export function rateLimited(detail: string, retryAfterSeconds: number): ApiProblem {
  return new ApiProblem(429, 'rate_limited', detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
}

/**
 * For callers that have no API key to count against (OAuth, FHIR, failed authentication): spends each
 * request's cost (a token exchange signs a JWT and writes rows; a search scans more than a read) from
 * its address's budget; over it, 429 with Retry-After (shaped per surface by the problem handler).
 */
export function costLimit(options: { budget: CostBudget; surface: string; perMinute: number; costOf(req: Request): number }): RequestHandler {
  return (req, _res, next) => {
    const spent = options.budget.spend(clientAddress(req), options.costOf(req));
    if (!spent.allowed) {
      throw rateLimited(
        `This address used its budget of ${options.surface} requests (${options.perMinute} units a minute; costlier requests count more). Wait ${spent.retryAfterSeconds} s (Retry-After), then try again.`,
        spent.retryAfterSeconds,
      );
    }
    next();
  };
}

/**
 * Failed authentication, per address: every 401 the service answers spends one unit (the problem
 * handler charges it). An address with none left still has its credentials checked: a valid API key,
 * client or token is served whatever the address's failures (behind one NAT, a misconfigured job must
 * not lock the good clients out), and a credential that fails is answered 429 instead of 401, on every
 * surface (API keys, OAuth clients, FHIR tokens), until the budget refills (`res.locals.failedAuthentication`,
 * read by the problem handler).
 */
export function refuseAfterFailedAuthentication(failures: CostBudget, perMinute: number): RequestHandler {
  // One listener for every response (a closure per request would cost more than the check itself).
  function spendOn401(this: Response): void {
    if (this.statusCode === 401) failures.spend(this.locals.clientAddress!, 1);
  }
  return (req, res, next) => {
    const address = clientAddress(req);
    res.locals.clientAddress = address;
    res.on('finish', spendOn401);
    const state = failures.exhausted(address);
    if (state.exhausted) {
      res.locals.failedAuthentication = rateLimited(
        `Too many failed authentications from this address (${perMinute} a minute). Wait ${state.retryAfterSeconds} s (Retry-After), then try again with a valid credential.`,
        state.retryAfterSeconds,
      );
    }
    next();
  };
}
