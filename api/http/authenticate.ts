import type { NextFunction, RequestHandler, Response } from 'express';
import type { ApiKeyCache } from '../../platform/api-key-cache';
import type { KeyLookup } from '../../platform/organizations';
import { readBearer } from './bearer';
import { ApiProblem } from './problem';

const CHALLENGE = 'Bearer realm="sandbox"';

/**
 * Bearer API keys. Every failure is a 401 with a WWW-Authenticate challenge (RFC 6750) and a
 * problem body that says what to fix; success puts the key's organization in `res.locals.auth`.
 */
export function authenticate(keys: ApiKeyCache): RequestHandler {
  return (req, res, next) => {
    const credential = readBearer(req.headers.authorization);
    if (credential.kind === 'missing') {
      throw unauthorized('missing_api_key', 'This endpoint needs an API key: send Authorization: Bearer <API_KEY>.', CHALLENGE);
    }
    if (credential.kind === 'malformed') {
      throw unauthorized(
        'invalid_authorization_header',
        'The Authorization header must be "Bearer <API_KEY>".',
        `${CHALLENGE}, error="invalid_request"`,
      );
    }
    // A remembered key is answered at once: no promise to wait on for every request.
    const found = keys.lookUp(credential.token);
    if (found instanceof Promise) return found.then((looked) => admit(looked, res, next));
    admit(found, res, next);
  };
}

function admit(found: KeyLookup, res: Response, next: NextFunction): void {
  if (found.status !== 'active') {
    throw found.status === 'revoked'
      ? unauthorized('revoked_api_key', 'The API key has been revoked. Use another key of your organization.', `${CHALLENGE}, error="invalid_token"`)
      : unauthorized(
          'invalid_api_key',
          'The API key is not recognised. Check for a copy-paste error, or create a key with `npm run keys -- create`.',
          `${CHALLENGE}, error="invalid_token"`,
        );
  }
  res.locals.auth = { organizationId: found.organizationId, apiKeyId: found.apiKeyId };
  next();
}

function unauthorized(code: string, detail: string, challenge: string): ApiProblem {
  return new ApiProblem(401, code, detail, { headers: { 'WWW-Authenticate': challenge } });
}
