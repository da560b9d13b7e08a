import type { ErrorRequestHandler, Request, Response } from 'express';
import { FhirError, type IssueCode } from '../../fhir/operation-outcome';
import { isDatabaseUnavailable } from '../../platform/database';
import { WorkflowEngineUnavailableError, WorkflowRefusedError } from '../../platform/workflow-gateway';
import { SMART_PATHS } from '../../smart/endpoints';
import { OAuthError, type OAuthErrorCode } from '../../smart/oauth-error';
import { JSON_DEPTH_LIMIT } from './body-depth';
import { openCors } from './cors';
import { ApiProblem, databaseUnavailable, workflowEngineUnavailable } from './problem';

export const JSON_BODY_LIMIT = '1mb';

/**
 * The one error handler, whatever layer raised the error (a body parser, the router, a route):
 * RFC 9457 problem+json on the API, RFC 6749 `{ error, error_description }` on /oauth/*, an
 * OperationOutcome on /fhir/R4/* (CONVENTIONS.md, HTTP and FHIR and OAuth). Unexpected errors are
 * logged and never leak a stack.
 */
export const problemHandler: ErrorRequestHandler = (raised, req, res, next) => {
  if (res.headersSent) return next(raised);
  let error: unknown = raised;
  let problem = toProblem(error, req);
  // An address past its failed-authentication budget (api/http/cost-limit.ts): a credential that fails is 429.
  if (problem.status === 401 && res.locals.failedAuthentication) {
    error = res.locals.failedAuthentication;
    problem = res.locals.failedAuthentication;
  }
  if (problem.status >= 500 && problem.code === 'internal_error') req.log.error({ err: error }, 'Unhandled error');
  for (const [name, value] of Object.entries(problem.extra.headers ?? {})) res.setHeader(name, value);
  const surface = surfaceOf(req.path);
  if (surface === 'api') {
    res
      .status(problem.status)
      .type('application/problem+json')
      .send(JSON.stringify(problem.body(String(req.id), req.originalUrl)));
    return;
  }
  const send = () => (surface === 'oauth' ? sendOAuthError(res, error, problem) : sendOperationOutcome(req, res, error, problem));
  // Browser apps call these directly, so their errors carry the CORS headers their answers do (a
  // preflight that failed is answered as the error, not as a CORS preflight).
  if (req.method === 'OPTIONS') send();
  else openCors(req, res, send);
};

type Surface = 'api' | 'oauth' | 'fhir';

function surfaceOf(path: string): Surface {
  if (path === '/oauth' || path.startsWith('/oauth/')) return 'oauth';
  if (path === SMART_PATHS.fhirBase || path.startsWith(`${SMART_PATHS.fhirBase}/`)) return 'fhir';
  return 'api';
}

function toProblem(error: unknown, req: Request): ApiProblem {
  if (error instanceof ApiProblem) return error;
  if (error instanceof OAuthError) return new ApiProblem(error.status, error.error, error.description);
  if (error instanceof FhirError) return new ApiProblem(error.status, error.code, error.diagnostics, { headers: error.headers });
  // A workflow said no: the request conflicts with the run's state, and the workflow says why.
  if (error instanceof WorkflowRefusedError) return new ApiProblem(409, error.code, error.message);
  if (error instanceof WorkflowEngineUnavailableError) return workflowEngineUnavailable(error);
  if (isDatabaseUnavailable(error)) {
    req.log.warn({ err: error }, 'Database unavailable');
    return databaseUnavailable();
  }
  const raised = (error ?? {}) as HttpErrorLike;
  return bodyProblem(raised, req) ?? clientError(raised) ?? internalError();
}

interface HttpErrorLike {
  type?: string;
  status?: number;
  statusCode?: number;
  expose?: boolean;
  limit?: number;
  message?: string;
}

/** What the body parsers (express.json, express.urlencoded) raise, per body-parser's error types. */
function bodyProblem(error: HttpErrorLike, req: Request): ApiProblem | null {
  const contentType = req.headers['content-type'] ?? 'no Content-Type';
  switch (error.type) {
    case 'entity.parse.failed':
      return req.is(['application/json', 'application/*+json'])
        ? new ApiProblem(400, 'malformed_json', 'The request body is not valid JSON.')
        : new ApiProblem(400, 'malformed_body', `The request body cannot be read as ${contentType}.`);
    case 'entity.too.large':
      return new ApiProblem(413, 'body_too_large', `The request body is larger than this endpoint accepts (${formatBytes(error.limit)}).`);
    case 'entity.too.deep':
      return new ApiProblem(
        400,
        'body_too_deep',
        `The JSON body nests deeper than ${JSON_DEPTH_LIMIT} levels, more than any request to this API needs.`,
      );
    case 'parameters.too.many':
      return new ApiProblem(413, 'too_many_parameters', 'The form has more parameters than this endpoint accepts.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiProblem(415, 'unsupported_encoding', `Send the body as UTF-8 (got ${contentType}).`);
    case 'request.aborted':
    case 'request.size.invalid':
      return new ApiProblem(400, 'incomplete_body', 'The request body ended before its Content-Length.');
    default:
      return null;
  }
}

const CLIENT_ERROR_CODES: Record<number, string> = { 400: 'bad_request', 404: 'not_found', 405: 'method_not_allowed', 413: 'body_too_large' };

/** Any other error that carries a 4xx status (http-errors, the router) keeps it. */
function clientError(error: HttpErrorLike): ApiProblem | null {
  const status = error.status ?? error.statusCode;
  if (typeof status !== 'number' || status < 400 || status > 499) return null;
  // The router could not percent-decode a path parameter (%ZZ, a lone %): the path is malformed.
  if (error instanceof URIError) {
    return new ApiProblem(400, 'malformed_path', 'The path is not valid percent-encoding: every % must start a %XX escape of UTF-8 bytes.');
  }
  const detail = error.expose !== false && error.message ? error.message : 'The request cannot be answered as sent.';
  return new ApiProblem(status, CLIENT_ERROR_CODES[status] ?? 'client_error', detail);
}

function internalError(): ApiProblem {
  return new ApiProblem(500, 'internal_error', 'Something went wrong on our side. Quote the request_id when you report it.');
}

function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return 'its limit';
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** RFC 6749 §5.2: `{ error, error_description }` as application/json, never cached. */
function sendOAuthError(res: Response, error: unknown, problem: ApiProblem): void {
  const oauthError = error instanceof OAuthError ? error : new OAuthError(oauthCode(problem.status), problem.detail, problem.status);
  if (oauthError.status === 401) res.setHeader('WWW-Authenticate', 'Basic realm="sandbox"');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.status(oauthError.status).json(oauthError.body());
}

function oauthCode(status: number): OAuthErrorCode {
  if (status === 401) return 'invalid_client';
  // RFC 6749 has no code for a rate limit; the 429 and its Retry-After say the rest.
  if (status === 429) return 'temporarily_unavailable';
  if (status === 503) return 'temporarily_unavailable';
  return status >= 500 ? 'server_error' : 'invalid_request';
}

const ISSUE_CODES: Record<number, IssueCode> = {
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  405: 'not-supported',
  406: 'not-supported',
  413: 'too-costly',
  415: 'not-supported',
  429: 'throttled',
  503: 'transient',
};

function sendOperationOutcome(req: Request, res: Response, error: unknown, problem: ApiProblem): void {
  const fhirError =
    error instanceof FhirError
      ? error
      : new FhirError(
          problem.status,
          ISSUE_CODES[problem.status] ?? (problem.status >= 500 ? 'exception' : 'invalid'),
          problem.code === 'internal_error'
            ? `Something went wrong on our side. Quote request id ${String(req.id)} when you report it.`
            : problem.detail,
        );
  res
    .status(fhirError.status)
    .type('application/fhir+json; charset=utf-8')
    .send(JSON.stringify(fhirError.outcome(), null, req.query._pretty === 'true' ? 2 : undefined));
}
