import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Patient } from 'fhir/r4';
import { criterion, searchParametersOf } from '../../fhir/search-parameters';
import type { FhirStore } from '../../fixtures/store';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { lookUpApiKey } from '../../platform/organizations';
import { excerpt } from '../../platform/text';
import { type AuthorizationFlow, type AuthorizeOutcome, EXPIRED_REQUEST } from '../../smart/authorizations';
import { authenticateByAssertion } from '../../smart/client-assertion';
import { authenticateClient, findClient, GRANT_TYPES, type GrantType, grantTypesFor } from '../../smart/clients';
import { SMART_PATHS, type SmartUrls } from '../../smart/endpoints';
import { OAuthError } from '../../smart/oauth-error';
import type { TokenService } from '../../smart/tokens';
import type { ResolveHost } from '../../webhooks/targets';
import { readBearer } from '../http/bearer';
import { openCors } from '../http/cors';
import { clientJwksLoader } from './client-jwks-loader';
import { authorizationErrorPage, displayName, patientPickerPage } from './oauth-pages';

const FORM_LIMIT = '64kb';
const PICKER_PAGE_SIZE = 25;

/**
 * The OAuth 2.0 endpoints of the SMART sandbox: authorization (GET and POST) with the patient
 * picker, token, introspection (RFC 7662) and revocation (RFC 7009). Bodies are
 * application/x-www-form-urlencoded; errors are RFC 6749 `{ error, error_description }` (shaped in
 * api/http/problem-handler.ts, whichever layer raised them), or an HTML page wherever a redirect
 * could not be trusted.
 */
export function oauthRouter({
  db,
  config,
  resolveHost,
  urls,
  fhirStore,
  flow,
  tokens,
}: {
  db: Database;
  config: Pick<Config, 'ALLOW_PRIVATE_TARGETS'>;
  /** The DNS lookup a client's jwks_uri is checked with (the system resolver when absent). */
  resolveHost?: ResolveHost | undefined;
  urls: SmartUrls;
  fhirStore: FhirStore;
  flow: AuthorizationFlow;
  tokens: TokenService;
}): Router {
  const router = express.Router();
  // Every OAuth request is read (its form, when it sends one) and checked for NUL before any route runs.
  router.use('/oauth', express.urlencoded({ extended: false, limit: FORM_LIMIT, parameterLimit: 100 }), refuseNul);

  router.get(SMART_PATHS.authorize, async (req, res) => {
    answerAuthorization(res, await flow.authorize(new URL(req.originalUrl, 'http://oauth.invalid').searchParams), 302);
  });
  router.post(SMART_PATHS.authorize, async (req, res) => {
    answerAuthorization(res, await flow.authorize(formParams(req)), 303);
  });

  router.get(SMART_PATHS.patientPicker, async (req, res) => {
    const requestId = typeof req.query.request === 'string' ? req.query.request : '';
    const pending = requestId ? await flow.pendingRequest(requestId) : null;
    if (!pending) {
      answerAuthorization(res, EXPIRED_REQUEST, 302);
      return;
    }
    const query = typeof req.query.q === 'string' ? req.query.q.trim() : '';
    const matching = searchPatients(fhirStore, query);
    htmlHeaders(res);
    res.type('html').send(
      patientPickerPage({
        requestId,
        clientName: pending.client.name,
        query,
        patients: matching.slice(0, PICKER_PAGE_SIZE),
        matching: matching.length,
      }),
    );
  });
  router.post(SMART_PATHS.patientPicker, async (req, res) => {
    // No form (text/plain, no Content-Type) is no choice, not an error of ours.
    const body = (req.body ?? {}) as Record<string, unknown>;
    const requestId = typeof body.request === 'string' ? body.request : '';
    const choice = body.deny !== undefined ? 'deny' : typeof body.patient === 'string' ? { patientId: body.patient } : null;
    if (!choice) {
      answerAuthorization(res, { kind: 'error_page', title: 'No patient chosen', detail: 'Choose a patient from the list, or cancel.' }, 303);
      return;
    }
    answerAuthorization(res, await flow.completePatientChoice(requestId, choice), 303);
  });

  const loadJwks = clientJwksLoader({ config, resolveHost });
  /** RFC 6749 §2.3: a client assertion (private_key_jwt, RFC 7523), HTTP Basic, or a public client's client_id. */
  const authenticate = (req: Request, body: Record<string, string | undefined>) => {
    if (body.client_assertion === undefined && body.client_assertion_type === undefined) {
      return authenticateClient(db, { authorization: req.headers.authorization, clientId: body.client_id, clientSecret: body.client_secret });
    }
    if (req.headers.authorization !== undefined || body.client_secret !== undefined) {
      throw new OAuthError('invalid_request', 'Use one client authentication method: a client assertion, or HTTP Basic, not both.');
    }
    return authenticateByAssertion(
      db,
      { clientId: body.client_id, assertionType: body.client_assertion_type, assertion: body.client_assertion },
      { tokenEndpoint: urls.token, loadJwks },
    );
  };

  const clientEndpoints = [SMART_PATHS.token, SMART_PATHS.revoke, SMART_PATHS.introspect];
  const tokenEndpoint = express.Router();
  tokenEndpoint.use(clientEndpoints, openCors, noStore);
  tokenEndpoint.post(SMART_PATHS.token, formOnly, async (req, res) => {
    const body = formBody(req);
    const grantType = body.grant_type;
    if (!grantType) throw new OAuthError('invalid_request', `grant_type is required: ${GRANT_TYPES.join(', ')}.`);
    if (!isGrantType(grantType)) {
      throw new OAuthError('unsupported_grant_type', `grant_type ${excerpt(grantType)} is not supported; use ${GRANT_TYPES.join(', ')}.`);
    }
    const client = await authenticate(req, body);
    const allowed = grantTypesFor(client.tokenEndpointAuthMethod);
    if (!allowed.includes(grantType)) {
      throw new OAuthError(
        'unauthorized_client',
        grantType === 'client_credentials'
          ? 'client_credentials is for backend services clients: register one with token_endpoint_auth_method private_key_jwt and a JWK Set.'
          : `This client may use ${allowed.join(', ')} only.`,
      );
    }
    if (grantType === 'client_credentials') {
      res.json(await flow.grantSystem(client, body.scope));
      return;
    }
    if (grantType === 'authorization_code') {
      res.json(await flow.exchangeCode(client, { code: body.code, redirectUri: body.redirect_uri, codeVerifier: body.code_verifier }));
      return;
    }
    if (!body.refresh_token) throw new OAuthError('invalid_request', 'refresh_token is required.');
    res.json(await tokens.refresh(client, body.refresh_token, body.scope));
  });

  tokenEndpoint.post(SMART_PATHS.revoke, formOnly, async (req, res) => {
    const body = formBody(req);
    const client = await authenticate(req, body);
    if (!body.token) throw new OAuthError('invalid_request', 'token is required.');
    await tokens.revoke(client, body.token);
    res.status(200).end();
  });

  tokenEndpoint.post(SMART_PATHS.introspect, formOnly, async (req, res) => {
    const body = formBody(req);
    const visibleTo = await introspectionCaller(db, req);
    if (!body.token) throw new OAuthError('invalid_request', 'token is required.');
    res.json(await tokens.introspect(body.token, visibleTo));
  });
  router.use(tokenEndpoint);
  return router;
}

/**
 * RFC 7662 requires the caller to be authorized: the organization's API key (a resource server of
 * the partner) sees its clients' tokens; a confidential client with Basic auth sees its own.
 */
async function introspectionCaller(db: Database, req: Request): Promise<(clientId: string) => Promise<boolean>> {
  const bearer = readBearer(req.headers.authorization);
  if (bearer.kind === 'token') {
    const key = await lookUpApiKey(db, bearer.token);
    if (key.status !== 'active') throw new OAuthError('invalid_client', 'The API key is unknown or revoked.');
    return async (clientId) => (await findClient(db, clientId))?.organizationId === key.organizationId;
  }
  if (!req.headers.authorization) {
    throw new OAuthError(
      'invalid_client',
      'Authenticate the introspection call: your organization API key (Bearer) or a confidential client (Basic).',
    );
  }
  const client = await authenticateClient(db, { authorization: req.headers.authorization, clientId: undefined, clientSecret: undefined });
  return async (clientId) => clientId === client.id;
}

function answerAuthorization(res: Response, outcome: AuthorizeOutcome, redirectStatus: 302 | 303): void {
  if (outcome.kind === 'error_page') {
    htmlHeaders(res);
    res.status(400).type('html').send(authorizationErrorPage(outcome.title, outcome.detail));
    return;
  }
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(
    redirectStatus,
    outcome.kind === 'redirect' ? outcome.location : `${SMART_PATHS.patientPicker}?request=${encodeURIComponent(outcome.requestId)}`,
  );
}

/** Pages that take part in authorization are never cached or framed (clickjacking). */
function htmlHeaders(res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
}

/**
 * Patients whose id is the query, or for whom every word of it starts a part of their name (FHIR
 * `name` string search, word by word: "ava smi"), sorted by name.
 */
function searchPatients(fhirStore: FhirStore, query: string): Patient[] {
  const nameParameter = searchParametersOf('Patient').name!;
  const words = query
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => criterion(nameParameter, word)!);
  return fhirStore
    .patients()
    .filter((patient) => patient.id === query || words.every((startsAName) => startsAName(patient)))
    .toSorted((a, b) => displayName(a).localeCompare(displayName(b)) || (a.id ?? '').localeCompare(b.id ?? ''));
}

/** Form parameters as URLSearchParams, repeats kept (so the authorization endpoint can refuse them). */
function formParams(req: Request): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries((req.body ?? {}) as Record<string, string | string[]>)) {
    for (const single of [value].flat()) params.append(name, single);
  }
  return params;
}

/** Single-valued form fields; a repeated one is an invalid request (RFC 6749 §3.2). */
function formBody(req: Request): Record<string, string | undefined> {
  const body: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((req.body ?? {}) as Record<string, string | string[]>)) {
    if (Array.isArray(value)) throw new OAuthError('invalid_request', `${excerpt(name)} must appear once.`);
    body[name] = value;
  }
  return body;
}

/**
 * Postgres refuses the NUL character, and no OAuth parameter carries one: such a request is
 * invalid before it reaches a lookup.
 */
const refuseNul: RequestHandler = (req, _res, next) => {
  const query = new URL(req.originalUrl, 'http://oauth.invalid').searchParams;
  const body = Object.entries((req.body ?? {}) as Record<string, string | string[]>).flatMap(([name, value]) =>
    [value].flat().map((single) => [name, single]),
  );
  const withNul = [...query, ...body].find(([name, value]) => `${name}${value}`.includes('\u0000'));
  if (withNul) throw new OAuthError('invalid_request', `The parameter ${JSON.stringify(excerpt(withNul[0] ?? ''))} contains a NUL character.`);
  next();
};

function isGrantType(value: string): value is GrantType {
  return (GRANT_TYPES as readonly string[]).includes(value);
}

const formOnly: RequestHandler = (req, _res, next) => {
  if (!req.is('application/x-www-form-urlencoded')) {
    throw new OAuthError(
      'invalid_request',
      `Send the parameters as application/x-www-form-urlencoded (got ${excerpt(req.headers['content-type'] ?? 'no Content-Type')}).`,
    );
  }
  next();
};

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  next();
};

/**
 * What an OAuth request costs against its address's budget (api/http/cost-limit.ts): the token
 * endpoint signs one or two RS256 JWTs and writes several rows; authorization and the picker look up
 * and write a few; the rest read one row.
 */
export function oauthCost(req: Request): number {
  if (req.method === 'OPTIONS') return 0;
  // Mounted under /oauth, so the path is read whole.
  const path = `${req.baseUrl}${req.path}`;
  if (path === SMART_PATHS.token) return 10;
  if (path === SMART_PATHS.authorize || path === SMART_PATHS.patientPicker) return 2;
  return 3;
}
