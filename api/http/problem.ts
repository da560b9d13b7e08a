import { z } from 'zod';

/**
 * How many field errors one answer lists: a 10,000-item array with a bad field in each would
 * otherwise answer megabytes; the rest are counted in `errors_omitted`.
 */
export const MAX_LISTED_ERRORS = 50;

/**
 * RFC 9457 problem details, the one error shape of the API (CONVENTIONS.md, HTTP): `type`, `title`,
 * `status`, `detail`, a stable snake_case `code`, and `errors` for validation failures.
 */
export const problemSchema = z
  .object({
    type: z.string().meta({ example: 'urn:sandbox:problem:not_found' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().meta({ description: 'Stable snake_case error code' }),
    instance: z.string().optional(),
    request_id: z.string().optional(),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .meta({ description: `The invalid fields, the first ${MAX_LISTED_ERRORS} of them when there are more (see errors_omitted).` }),
    errors_omitted: z.number().int().optional().meta({ description: 'How many further invalid fields were found but not listed.' }),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details' });

export type ProblemBody = z.infer<typeof problemSchema>;

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly extra: {
      errors?: { path: string; message: string }[];
      headers?: Record<string, string>;
      /** Further members of the problem body (RFC 9457 extension members), e.g. an HL7 ACK. */
      members?: Record<string, unknown>;
    } = {},
  ) {
    super(detail);
  }

  body(requestId?: string, instance?: string): ProblemBody {
    return {
      type: `urn:sandbox:problem:${this.code}`,
      title: TITLES[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      code: this.code,
      ...(instance ? { instance } : {}),
      ...(requestId ? { request_id: requestId } : {}),
      ...(this.extra.errors ? { errors: this.extra.errors.slice(0, MAX_LISTED_ERRORS) } : {}),
      ...(this.extra.errors && this.extra.errors.length > MAX_LISTED_ERRORS ? { errors_omitted: this.extra.errors.length - MAX_LISTED_ERRORS } : {}),
      ...this.extra.members,
    };
  }
}

/**
 * The one 404 for an id that names nothing the caller may see: unknown, or another organization's
 * (CONVENTIONS.md, HTTP). `errors` names the field the id came from, as for an id of the wrong format
 * (api/http/route.ts).
 */
export function notFound(what: string, id: string, field: string): ApiProblem {
  return new ApiProblem(404, 'not_found', `No ${what} with id ${id} exists in your organization.`, {
    errors: [{ path: field, message: `names no ${what} of your organization` }],
  });
}

export type RequestPart = 'body' | 'query' | 'path';
export interface FieldError {
  path: string;
  message: string;
}

const PART_NAMES: Record<RequestPart, string> = { body: 'body', query: 'query string', path: 'path' };

/**
 * The one 422: every bad field in `errors: [{ path, message }]`, each path rooted at where the value
 * came from (`body.webhook_url`). `code` names the rule when it is more specific than a schema failure.
 */
export function invalidFields(where: RequestPart, errors: FieldError[], code = 'validation_failed'): ApiProblem {
  const listed = errors.slice(0, MAX_LISTED_ERRORS).map((entry) => `${entry.path}: ${entry.message}`);
  const more = errors.length > MAX_LISTED_ERRORS ? `; and ${errors.length - MAX_LISTED_ERRORS} more` : '';
  return new ApiProblem(422, code, `The request ${PART_NAMES[where]} is invalid: ${listed.join('; ')}${more}`, { errors });
}

/** Turns zod issues into the 422 of invalidFields. */
export function validationProblem(where: RequestPart, error: z.ZodError): ApiProblem {
  const errors = error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: [where, ...issue.path, key].map(String).join('.'), message: 'is not a field of this request' }))
      : [{ path: [where, ...issue.path].map(String).join('.'), message: issue.message }],
  );
  return invalidFields(where, errors);
}

/** Seconds a client is asked to wait while a dependency is down (a restart takes a few). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;
const retryLater = { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) };

/** The database does not answer (restart, failover): 503, as a brief outage, never a 500. */
export function databaseUnavailable(detail?: string): ApiProblem {
  return new ApiProblem(
    503,
    'service_unavailable',
    detail ??
      `The service is briefly unavailable: its database does not answer. Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} seconds; a POST retried with the same Idempotency-Key is never done twice.`,
    { headers: retryLater },
  );
}

/** Temporal does not answer (restart): 503 saying so. `detail` replaces the generic sentence. */
export function workflowEngineUnavailable(cause: Error, detail?: string): ApiProblem {
  return new ApiProblem(
    503,
    'workflow_engine_unavailable',
    detail ??
      `The service is briefly unavailable: the workflow engine could not be reached in time (${cause.message}), so the request may not have taken effect. Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} seconds.`,
    { headers: retryLater },
  );
}
