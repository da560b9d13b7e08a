import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { FhirResource, Group, OperationOutcome } from 'fhir/r4';
import { capabilityStatement } from '../../fhir/capability-statement';
import { FhirError } from '../../fhir/operation-outcome';
import { type Criterion, criterion, ID_PARAMETER, searchParametersOf } from '../../fhir/search-parameters';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, searchsetBundle } from '../../fhir/searchset';
import { type FhirStore, patientOf } from '../../fixtures/store';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import type { WorkflowGateway } from '../../platform/workflow-gateway';
import { SMART_PATHS, type SmartUrls } from '../../smart/endpoints';
import { type Interaction, permission } from '../../smart/scopes';
import type { AccessGrant, AccessTokenCheck, TokenService } from '../../smart/tokens';
import type { ResolveHost } from '../../webhooks/targets';
import { readBearer } from '../http/bearer';
import { openCors } from '../http/cors';
import { type Dispatcher, isUnder, onlyUnder, onlyWhere } from '../http/dispatch';
import { toJson } from '../http/json';
import { worldPatientMatch } from '../interop/mpi';
import { bulkExportRouter } from './bulk-export';
import { apiKeyRequestsOnly, matchInput, patientMatchScope, realIdentifiersRefusedInFhir } from './patient-match';
import { PAS_OPERATION_PATHS, priorAuthorizationRouter } from './prior-authorization';
import { subscriptionRouter } from './subscriptions';

const FHIR_JSON = 'application/fhir+json';
const JSON_FORMATS = new Set(['json', 'application/json', FHIR_JSON]);
const RESOURCE_ID = /^[A-Za-z0-9\-.]{1,64}$/;
/** Parameters about the response, not the matches: never filters, never "ignored". */
const RESULT_PARAMETERS = new Set(['_count', '_offset', '_format', '_pretty', '_summary']);

/**
 * FHIR R4 reads over the synthetic world (CONVENTIONS.md: FHIR conventions): `metadata` is open;
 * everything else needs a SMART access token and answers only that token's patient, within its
 * scopes. Errors are OperationOutcomes.
 */
export function fhirRouter({
  fhirStore,
  tokens,
  urls,
  version,
  config,
  apiKey,
  db,
  workflows,
  resolveHost,
}: {
  fhirStore: FhirStore;
  tokens: TokenService;
  urls: SmartUrls;
  version: string;
  config: Config;
  /** The API-key middleware of /v1 (authentication, rate limit): Patient/$match takes an API key too. */
  apiKey: RequestHandler[];
  db: Database;
  workflows: WorkflowGateway;
  /** The DNS lookup a subscription's endpoint is checked with; the system resolver when absent. */
  resolveHost?: ResolveHost;
}): Dispatcher {
  const router = express.Router();
  const base = SMART_PATHS.fhirBase;
  const metadata = capabilityStatement({ urls, resourceTypes: fhirStore.supportedTypes, version, published: new Date().toISOString() });

  const withToken = requireAccessToken(tokens, urls);
  // The router is entered only under `base` (below), so what runs for all of it needs no mount path.
  router.use(openCors);
  // Before `:type/:id` and `:type`, which would take `$export` and the status paths for a type; before
  // jsonOnly too, as its files are NDJSON (it checks Accept itself). Each operation's router is entered
  // only by its own paths (api/http/dispatch.ts).
  router.use(
    onlyWhere(
      (path) => isUnder(path, `${base}/bulk-export`.toLowerCase()) || path.split('/').findLast(Boolean) === '$export',
      bulkExportRouter({ db, fhirStore, workflows, urls, config, withToken, jsonOnly }),
    ),
  );
  router.use(jsonOnly);
  router.use(
    onlyUnder(
      Object.values(PAS_OPERATION_PATHS).map((path) => `${base}${path}`),
      priorAuthorizationRouter({ db, workflows, withToken, retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE }),
    ),
  );
  router.get(`${base}/metadata`, (req, res) => sendFhir(req, res, 200, metadata));
  router.use(onlyUnder([`${base}/Subscription`], subscriptionRouter({ db, workflows, urls, config, withToken, resolveHost })));

  // IHE PDQm ITI-119, before `:type/:id` and the catch-all; an API key or a user/system-level SMART token.
  const patientMatch = worldPatientMatch({ fhirStore, config });
  const match: RequestHandler = async (req, res) => {
    const organizationId = res.locals.auth?.organizationId ?? res.locals.grant!.organizationId;
    const answer = await patientMatch.answer(
      matchInput(req),
      { db, organizationId, refusal: realIdentifiersRefusedInFhir },
      `${urls.fhirBase}/Patient/$match`,
    );
    sendFhir(req, res, 200, answer);
  };
  const matchPath = `${base}/Patient/$match`;
  router.post(matchPath, apiKeyRequestsOnly, ...apiKey, match);
  router.post(matchPath, withToken, patientMatchScope, match);
  // Middleware, not a route: an operation answered only to say which method it takes (405), not one to document.
  router.use(matchPath, (req) => {
    throw new FhirError(
      405,
      'not-supported',
      `Patient/$match is invoked with POST (got ${req.method}): a Parameters resource or a Patient in the body.`,
      {
        Allow: 'POST',
      },
    );
  });
  router.get(`${base}/:type/:id`, withToken, (req, res) => {
    const { type, id } = req.params as { type: string; id: string };
    const grant = res.locals.grant!;
    assertServed(fhirStore, type);
    const allowed = allowedBy(grant, type, 'read');
    const resource = RESOURCE_ID.test(id) ? fhirStore.read(type, id) : undefined;
    if (!resource) throw new FhirError(404, 'not-found', `${type}/${id} does not exist.`);
    assertOwnPatient(grant, resource);
    if (!allowed(resource)) throw outOfScope(grant, `${type}/${id} is outside the granular scopes of this token (${grant.scope}).`);
    const versionId = resource.meta?.versionId ?? '1';
    const etag = `W/"${versionId}"`;
    res.setHeader('ETag', etag);
    const lastModified = lastModifiedOf(resource);
    if (lastModified) res.setHeader('Last-Modified', lastModified);
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    sendFhir(req, res, 200, resource);
  });

  const search: RequestHandler = (req, res) => {
    const { type } = req.params as { type: string };
    const grant = res.locals.grant!;
    assertServed(fhirStore, type);
    const allowed = allowedBy(grant, type, 'search');
    const params = searchParams(req);
    const { candidates, applied: patientApplied } = compartment(fhirStore, grant, type, params);
    const { criteria, applied, ignored } = searchCriteria(type, params, req.header('prefer'));
    const matches = candidates.filter((resource) => allowed(resource) && criteria.every((matches) => matches(resource)));
    const count = pageNumber(params, '_count', DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
    const offset = pageNumber(params, '_offset', 0, Number.MAX_SAFE_INTEGER);
    const summaryCount = params.get('_summary') === 'count';
    sendFhir(
      req,
      res,
      200,
      searchsetBundle({
        fhirBase: urls.fhirBase,
        resourceType: type,
        applied: [...patientApplied, ...applied, ...(summaryCount ? [['_summary', 'count'] as [string, string]] : [])],
        matches,
        count: summaryCount ? 0 : count,
        offset,
        ...(ignored.length > 0 ? { outcome: ignoredParameters(type, ignored) } : {}),
      }),
    );
  };
  router.get(`${base}/:type`, withToken, search);
  router.post(`${base}/:type/_search`, formSearchOnly, express.urlencoded({ extended: false, limit: '64kb' }), withToken, search);

  router.all(`${base}/{*rest}`, (req) => {
    throw new FhirError(
      req.method === 'GET' ? 404 : 405,
      'not-supported',
      `${req.method} ${req.path} is not supported: this endpoint offers read, search, Patient/$match and metadata. See ${urls.fhirBase}/metadata.`,
    );
  });
  // Errors, whichever layer raises them, become OperationOutcomes in api/http/problem-handler.ts.
  return onlyUnder([base], router);
}

/** Last-Modified by resource: the fixtures are frozen, so each one's HTTP date is written once, not on every read. */
const lastModifiedDates = new WeakMap<FhirResource, string | undefined>();

function lastModifiedOf(resource: FhirResource): string | undefined {
  if (lastModifiedDates.has(resource)) return lastModifiedDates.get(resource);
  const date = resource.meta?.lastUpdated ? new Date(resource.meta.lastUpdated).toUTCString() : undefined;
  if (Object.isFrozen(resource)) lastModifiedDates.set(resource, date);
  return date;
}

/** RFC 6750 bearer tokens: missing, bad, expired or revoked is 401 with a WWW-Authenticate challenge. */
function requireAccessToken(tokens: TokenService, urls: SmartUrls): RequestHandler {
  const realm = `Bearer realm="${urls.fhirBase}"`;
  const admit = (check: AccessTokenCheck, res: Response, next: NextFunction): void => {
    if (!check.valid) {
      throw new FhirError(401, check.expired ? 'expired' : 'login', check.reason, {
        'WWW-Authenticate': `${realm}, error="invalid_token", error_description="${check.reason}"`,
      });
    }
    res.locals.grant = check.grant;
    next();
  };
  return (req, res, next) => {
    const credential = readBearer(req.headers.authorization);
    if (credential.kind === 'missing')
      throw new FhirError(401, 'login', 'This FHIR endpoint needs a SMART access token: Authorization: Bearer <access_token>.', {
        'WWW-Authenticate': realm,
      });
    if (credential.kind === 'malformed') {
      throw new FhirError(401, 'login', 'The Authorization header must be "Bearer <access_token>".', {
        'WWW-Authenticate': `${realm}, error="invalid_request"`,
      });
    }
    // A remembered token is answered at once: no promise to wait on for every read.
    const check = tokens.checkAccessToken(credential.token);
    if (check instanceof Promise) return check.then((checked) => admit(checked, res, next));
    admit(check, res, next);
  };
}

/** allowedBy's answers by grant (one object for every request with a remembered token), so its scopes are parsed once per type. */
const criteriaByGrant = new WeakMap<AccessGrant, Map<string, Criterion>>();

/** Which resources of a type the token's scopes allow for an interaction; 403 when none. Call it for a served type only. */
function allowedBy(grant: AccessGrant, type: string, interaction: Interaction): Criterion {
  let known = criteriaByGrant.get(grant);
  if (!known) {
    known = new Map();
    criteriaByGrant.set(grant, known);
  }
  const key = `${interaction} ${type}`;
  let allowed = known.get(key);
  if (!allowed) {
    allowed = scopeCriterion(grant, type, interaction);
    known.set(key, allowed);
  }
  return allowed;
}

function scopeCriterion(grant: AccessGrant, type: string, interaction: Interaction): Criterion {
  const allowed = permission(grant.scope, grant.context, type, interaction);
  if (!allowed.allowed) {
    const prefix = `${grant.context}/${type}`;
    const needed = interaction === 'read' ? `${prefix}.r` : `${prefix}.s`;
    throw outOfScope(
      grant,
      `The token's scopes (${grant.scope}) do not allow ${interaction === 'read' ? 'reading' : 'searching'} ${type}; it needs ${needed} (or ${prefix}.read).`,
    );
  }
  if (allowed.filters === 'all') return () => true;
  const definitions = searchParametersOf(type);
  // A filter this endpoint cannot evaluate is refused at grant; one on a token granted before that rule matches nothing.
  const alternatives = allowed.filters.map((filter) =>
    filter.map(([name, value]): Criterion => (Object.hasOwn(definitions, name) && criterion(definitions[name]!, value)) || (() => false)),
  );
  return (resource) => alternatives.some((all) => all.every((matches) => matches(resource)));
}

function outOfScope(grant: AccessGrant, detail: string): FhirError {
  return new FhirError(403, 'forbidden', detail, { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${grant.scope}"` });
}

function assertServed(fhirStore: FhirStore, type: string): void {
  if (!fhirStore.supportedTypes.includes(type)) {
    throw new FhirError(404, 'not-supported', `Resource type ${type} is not served here. Served: ${fhirStore.supportedTypes.join(', ')}.`);
  }
}

/**
 * The one rule for other patients' data (docs/api/smart-on-fhir.md, Access rules): 403 Forbidden, for reads and searches alike.
 * The synthetic world is public, so there is no existence to hide, and a clear refusal is what a
 * developer needs to see. Resources that belong to no patient (Practitioner, Organization, …)
 * are readable with a scope for their type.
 */
function assertOwnPatient(grant: AccessGrant, resource: FhirResource): void {
  // A system or user token reads every patient of the world its scopes allow (SMART Backend Services; a provider's user).
  if (grant.context !== 'patient') return;
  if (!grant.patientId)
    throw new FhirError(403, 'forbidden', 'This token has no patient context, so it cannot read patient data. Ask for launch/patient.');
  if (resource.resourceType === 'Group') {
    if (!isPatientsOwnGroup(resource, grant.patientId)) throw groupOutsideCompartment(grant, `Group/${resource.id}`);
    return;
  }
  const owner = patientOf(resource);
  if (owner !== undefined && owner !== grant.patientId) throw otherPatient(grant, `${resource.resourceType}/${resource.id}`);
}

/**
 * A Group lists patients, so it is in no patient's compartment: a patient-context token reads only a
 * Group whose members are its patient alone, and searches none (docs/api/smart-on-fhir.md, Access rules).
 */
function isPatientsOwnGroup(group: Group, patientId: string): boolean {
  const members = group.member ?? [];
  return members.length > 0 && members.every((member) => member.entity.reference === `Patient/${patientId}`);
}

function groupOutsideCompartment(grant: AccessGrant, what: string): FhirError {
  return new FhirError(
    403,
    'forbidden',
    `This access token is for Patient/${grant.patientId}; ${what} lists other patients, so it is outside the patient's compartment (a system token reads Groups).`,
  );
}

function otherPatient(grant: AccessGrant, what: string): FhirError {
  return new FhirError(403, 'forbidden', `This access token is for Patient/${grant.patientId}; ${what} is another patient's data.`);
}

/**
 * The token patient's resources of a type; a `patient`/`subject`/`_id` naming another patient is
 * refused. A system or user token's are every patient's, or those of the patients named.
 */
function compartment(
  fhirStore: FhirStore,
  grant: AccessGrant,
  type: string,
  params: URLSearchParams,
): { candidates: readonly FhirResource[]; applied: [string, string][] } {
  if (grant.context !== 'patient') return systemCompartment(fhirStore, type, params);
  if (!grant.patientId)
    throw new FhirError(403, 'forbidden', 'This token has no patient context, so it cannot search patient data. Ask for launch/patient.');
  const patientId = grant.patientId;
  const named = type === 'Patient' ? params.getAll('_id') : [...params.getAll('patient'), ...params.getAll('subject')];
  for (const value of named) {
    const id = value.replace(/^.*Patient\//, '');
    if (id !== patientId) throw otherPatient(grant, `Patient/${id}`);
  }
  if (type === 'Patient') {
    const patient = fhirStore.read('Patient', patientId);
    return { candidates: patient ? [patient] : [], applied: named.length > 0 ? [['_id', patientId]] : [] };
  }
  if (type === 'Group') throw groupOutsideCompartment(grant, 'a search for Groups');
  return { candidates: fhirStore.listForPatient(type, patientId), applied: [['patient', patientId]] };
}

/**
 * Every resource of the type, or those of the patients named by `patient` or `subject` (`_id` on
 * Patient). A comma means any of them; each parameter given narrows further (FHIR search).
 */
function systemCompartment(
  fhirStore: FhirStore,
  type: string,
  params: URLSearchParams,
): { candidates: readonly FhirResource[]; applied: [string, string][] } {
  const names = type === 'Patient' ? ['_id'] : ['patient', 'subject'];
  const applied = [...params].filter(([name]) => names.includes(name));
  if (applied.length === 0) return { candidates: fhirStore.list(type), applied: [] };
  const idsOf = (value: string) => value.split(',').map((reference) => reference.replace(/^.*Patient\//, ''));
  const named = applied.reduce((kept, [, value]) => kept.filter((id) => idsOf(value).includes(id)), [...new Set(idsOf(applied[0]![1]))]);
  const candidates =
    type === 'Patient'
      ? named.map((id) => fhirStore.read('Patient', id)).filter((patient): patient is FhirResource => patient !== undefined)
      : named.flatMap((id) => fhirStore.listForPatient(type, id));
  return { candidates, applied };
}

/**
 * The type's search parameters as criteria. Unknown parameters are ignored, left out of the `self`
 * link and named in a warning (FHIR's lenient default); with `Prefer: handling=strict` they are refused.
 */
function searchCriteria(
  type: string,
  params: URLSearchParams,
  prefer: string | undefined,
): { criteria: Criterion[]; applied: [string, string][]; ignored: string[] } {
  const definitions = searchParametersOf(type);
  const strict = /handling=strict/i.test(prefer ?? '');
  const criteria: Criterion[] = [];
  const applied: [string, string][] = [];
  const ignored: string[] = [];
  for (const [name, value] of params) {
    // The compartment (see compartment) applies these: the token's patient, and `_id` on Patient.
    if (RESULT_PARAMETERS.has(name) || ['patient', 'subject'].includes(name) || (name === '_id' && type === 'Patient')) continue;
    const definition = name === '_id' ? ID_PARAMETER : Object.hasOwn(definitions, name) ? definitions[name] : undefined;
    const parsed = definition ? criterion(definition, value) : null;
    if (definition && !parsed)
      throw new FhirError(400, 'invalid', `The value of ${name} (${value}) cannot be read as a ${definition.type} search value.`);
    if (!parsed) {
      if (strict)
        throw new FhirError(
          400,
          'not-supported',
          `Search parameter ${name} is not supported for ${type}. Supported: ${supportedParameters(type).join(', ')}.`,
        );
      if (!ignored.includes(name)) ignored.push(name);
      continue;
    }
    criteria.push(parsed);
    applied.push([name, value]);
  }
  return { criteria, applied, ignored };
}

function supportedParameters(type: string): string[] {
  return [...(type === 'Patient' ? [] : ['patient']), '_id', ...Object.keys(searchParametersOf(type))];
}

/** The warning a lenient search answers with, in its searchset, about the parameters it did not apply. */
function ignoredParameters(type: string, ignored: string[]): OperationOutcome {
  return {
    resourceType: 'OperationOutcome',
    issue: ignored.map((name) => ({
      severity: 'warning',
      code: 'not-supported',
      diagnostics: `Search parameter ${name} is not supported for ${type} and was ignored (send Prefer: handling=strict to have it refused). Supported: ${supportedParameters(type).join(', ')}.`,
    })),
  };
}

function searchParams(req: Request): URLSearchParams {
  const params = new URL(req.originalUrl, 'http://fhir.invalid').searchParams;
  if (req.method === 'POST' && req.body && typeof req.body === 'object') {
    for (const [name, value] of Object.entries(req.body as Record<string, string | string[]>)) {
      for (const single of [value].flat()) params.append(name, single);
    }
  }
  return params;
}

function pageNumber(params: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = params.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new FhirError(400, 'invalid', `${name} must be a whole number of 0 or more (got ${raw}).`);
  return Math.min(value, max);
}

/** POST _search carries its parameters as a form, as FHIR R4 search defines it, never as JSON or text. */
const formSearchOnly: RequestHandler = (req, _res, next) => {
  const hasContent = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (hasContent && !req.is('application/x-www-form-urlencoded')) {
    throw new FhirError(
      415,
      'not-supported',
      `Send the search parameters as application/x-www-form-urlencoded (got ${req.headers['content-type'] ?? 'no Content-Type'}).`,
    );
  }
  next();
};

/** JSON only: `_format` or an Accept header that rules JSON out is 406. */
const jsonOnly: RequestHandler = (req, _res, next) => {
  // Most reads carry no query string: the URL is parsed only when there is one.
  const format = hasQuery(req) ? new URL(req.originalUrl, 'http://fhir.invalid').searchParams.get('_format') : null;
  if (format !== null && !JSON_FORMATS.has(format.split(';')[0]!.trim())) {
    throw new FhirError(
      406,
      'not-supported',
      `_format=${format} is not supported; this endpoint speaks JSON (_format=json or application/fhir+json).`,
    );
  }
  if (format === null && req.headers.accept && !req.accepts([FHIR_JSON, 'application/json'])) {
    throw new FhirError(406, 'not-supported', `Accept: ${req.headers.accept} cannot be served; this endpoint speaks ${FHIR_JSON}.`);
  }
  next();
};

function hasQuery(req: Request): boolean {
  return req.originalUrl.includes('?');
}

function sendFhir(req: Request, res: Response, status: number, body: object): void {
  // Express parses the query string at every read of req.query.
  const pretty = hasQuery(req) && req.query._pretty === 'true';
  res
    .status(status)
    .type(`${FHIR_JSON}; charset=utf-8`)
    .send(pretty ? JSON.stringify(body, null, 2) : toJson(body));
}

/**
 * What a FHIR request costs against its address's budget (api/http/cost-limit.ts): a search scans a
 * patient's compartment and pages a Bundle, a read looks one resource up.
 */
export function fhirCost(req: Request): number {
  if (req.method === 'OPTIONS') return 0;
  // Mounted under /fhir, so the path is read whole.
  const segments = `${req.baseUrl}${req.path}`.split('/').filter(Boolean);
  // /fhir/R4/{type} or /fhir/R4/{type}/_search; reads are /fhir/R4/{type}/{id}.
  const isSearch = segments.length === 3 || segments[3] === '_search';
  return isSearch && segments[2] !== 'metadata' ? 3 : 1;
}
