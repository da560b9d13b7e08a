import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { z } from 'zod';
import { ID_KINDS, idPrefixOfPattern } from '../../platform/ids';
import { byPathPrefix, type Dispatcher, dispatching, pathPrefix, series } from './dispatch';
import { toJson } from './json';
import type { AuthContext } from './locals';
import { ApiProblem, invalidFields, type RequestPart, validationProblem } from './problem';

/**
 * One definition per operation: its zod schemas validate the request, type the handler and
 * produce the OpenAPI document (api/http/openapi.ts), so the three cannot drift apart.
 */

type Method = 'get' | 'post' | 'patch' | 'put' | 'delete';
type AuthMode = 'api_key' | 'none';
type EmptyObject = z.ZodObject<Record<never, z.ZodType>>;

export interface HandlerInput<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, A extends AuthMode> {
  params: z.output<P>;
  query: z.output<Q>;
  body: z.output<B>;
  auth: A extends 'api_key' ? AuthContext : undefined;
  req: Request;
  res: Response;
}

export interface RouteDefinition<
  P extends z.ZodType = EmptyObject,
  Q extends z.ZodType = EmptyObject,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodType,
  A extends AuthMode = AuthMode,
> {
  method: Method;
  /** OpenAPI style: `/v1/connections/{connection_id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * A plain-text body accepted beside the JSON one (HL7 v2 ER7): sent with one of these content
   * types, it reaches the handler as the JSON body `{ [field]: <text> }`.
   */
  textBody?: { contentTypes: readonly string[]; field: string; description: string };
  success: { status: 200 | 201 | 202; description: string; schema: R };
  /** Extra media types the success response may come in (the handler then sends it itself). */
  alsoResponds?: readonly string[];
  /** Problem statuses this operation can answer besides the ones every route can (401, 429, 500). */
  errors?: number[];
  /**
   * What an Idempotency-Key replay answers, when it must differ from the first response: a secret
   * shown once is left out, so it is never stored with the key; or a problem, when the response is of
   * no use without its secret.
   */
  replayed?: (response: z.input<R>) => z.input<R> | ApiProblem;
  handler(input: HandlerInput<P, Q, B, A>): Promise<z.input<R> | typeof RESPONDED>;
}

/** What a handler returns when it has sent the response itself (a body that is not JSON). */
export const RESPONDED: unique symbol = Symbol('responded');

// biome-ignore lint/suspicious/noExplicitAny: routes are stored together, so their individual schema types are erased here
export type AnyRoute = RouteDefinition<any, any, any, any, any>;

export function defineRoute<
  P extends z.ZodType = EmptyObject,
  Q extends z.ZodType = EmptyObject,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodType,
  A extends AuthMode = AuthMode,
>(definition: RouteDefinition<P, Q, B, R, A>): RouteDefinition<P, Q, B, R, A> {
  return definition;
}

export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}

export interface RouteMiddleware {
  /** Runs before a route whose `auth` is `api_key`: authentication, then the per-key rate limit. */
  apiKey: RequestHandler[];
  /** Runs after those before an API-key POST, which creates work: Idempotency-Key handling. */
  creatingWork: RequestHandler[];
}

/** POSTs create work, so they honour Idempotency-Key (CONVENTIONS.md). */
export function createsWork(route: AnyRoute): boolean {
  return route.method === 'post' && route.auth === 'api_key';
}

/** Routes are grouped by their first two path segments (`/v1/patients`), one router each (api/http/dispatch.ts). */
const GROUP_DEPTH = 2;

/**
 * Every route with its middleware, as one handler: a request goes straight to the router of its
 * first two path segments, so only the routes that share them are tried. Those segments are fixed
 * words in every path (never a `{param}`), so no request can belong to another group.
 */
export function routeTable(routes: AnyRoute[], middleware: RouteMiddleware): RequestHandler {
  const groups = new Map<string, RouteGroup>();
  for (const route of routes) {
    const group = pathPrefix(route.path, GROUP_DEPTH);
    if (group.includes('{')) throw new Error(`${route.path}: the first ${GROUP_DEPTH} segments of a route's path are fixed words`);
    const { router, entries } = groups.get(group) ?? { router: express.Router(), entries: [] };
    groups.set(group, { router, entries });
    const before = [...(route.auth === 'api_key' ? middleware.apiKey : []), ...(createsWork(route) ? middleware.creatingWork : [])];
    const answer = async (req: Request, res: Response) => {
      const params = route.params ? parseOrThrow('path', route.params, req.params) : {};
      // Express parses the query string at every read of req.query: only a route that takes one reads it.
      const query = route.query ? parseOrThrow('query', route.query, req.query) : {};
      const body = route.body ? parseBody(route, req) : undefined;
      const result = await route.handler({ params, query, body, auth: res.locals.auth as AuthContext, req, res });
      if (result === RESPONDED) return;
      if (route.replayed) {
        const replay = route.replayed(result);
        res.locals.replay =
          replay instanceof ApiProblem
            ? { status: replay.status, contentType: 'application/problem+json', body: JSON.stringify(replay.body(String(req.id), req.originalUrl)) }
            : { status: route.success.status, contentType: 'application/json', body: JSON.stringify(replay) };
      }
      res.status(route.success.status).type('application/json').send(toJson(result));
    };
    // One layer per route, its middleware run by `series`: Express's route would walk a layer for each.
    const handler = series([...before, answer]);
    router[route.method](expressPath(route.path), handler);
    entries.push({ layer: router.stack.at(-1) as unknown as RouteLayer, handler });
  }
  return byPathPrefix(new Map([...groups].map(([prefix, group]) => [prefix, straightToRoute(group)])), GROUP_DEPTH);
}

/** A route's layer in an Express router: what the router itself matches a request with. */
interface RouteLayer {
  /** The path's parameters when it matches (decoded; throws a 400 error when one is not valid percent-encoding), else false. */
  match(path: string): false | { params: Record<string, string> };
  route: { _handlesMethod(method: string): boolean };
}

interface RouteGroup {
  router: Router;
  entries: { layer: RouteLayer; handler: RequestHandler }[];
}

/**
 * A group's router, with a request sent straight to the first of its routes whose path and method
 * match, as the router's own walk would pick it (with its layers' matching): Router.handle makes a
 * dozen closures and objects per request around that matching, and the route another walk. What no
 * route takes at once (an OPTIONS, which the router answers with Allow; a method the path does not
 * have; a parameter that is not valid percent-encoding) goes through the router as before.
 */
function straightToRoute({ router, entries }: RouteGroup): Dispatcher {
  return dispatching([router], (req, res, next) => {
    if (req.method !== 'OPTIONS') {
      const path = req.path;
      for (const { layer, handler } of entries) {
        let matched: ReturnType<RouteLayer['match']>;
        try {
          matched = layer.match(path);
        } catch {
          break;
        }
        if (matched && layer.route._handlesMethod(req.method)) {
          req.params = matched.params;
          return handler(req, res, next);
        }
      }
    }
    return router(req, res, next);
  });
}

function parseOrThrow(where: 'path' | 'query', schema: z.ZodType, value: unknown): unknown {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw requestProblem(where, parsed.error, value);
  assertNoNul(where, parsed.data);
  return parsed.data;
}

function parseBody(route: AnyRoute, req: Request): unknown {
  const schema: z.ZodType = route.body;
  const hasContent = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (hasContent && route.textBody && req.is([...route.textBody.contentTypes])) {
    const parsed = schema.safeParse({ [route.textBody.field]: typeof req.body === 'string' ? req.body : '' });
    if (!parsed.success) throw validationProblem('body', parsed.error);
    return parsed.data;
  }
  if (hasContent && !req.is(['application/json', 'application/*+json'])) {
    throw new ApiProblem(
      415,
      'unsupported_media_type',
      `Send the request body as JSON with Content-Type: application/json (got ${req.headers['content-type'] ?? 'no Content-Type'}).`,
    );
  }
  const value = req.body ?? {};
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw requestProblem('body', parsed.error, value);
  assertNoNul('body', parsed.data);
  return parsed.data;
}

/**
 * A value that fails only the format of its id schemas (platform/ids.ts) names nothing that exists:
 * 404, as an unknown id is (CONVENTIONS.md, HTTP: ids), wherever it came from. Any other failure is the 422.
 */
function requestProblem(where: RequestPart, error: z.ZodError, value: unknown): ApiProblem {
  const malformedIds = error.issues.map((issue) => {
    const prefix = issue.code === 'invalid_format' && issue.format === 'regex' ? idPrefixOfPattern(issue.pattern) : undefined;
    return (
      prefix && { prefix, path: [where, ...issue.path].map(String).join('.'), value: String(valueAt(value, issue.path)), message: issue.message }
    );
  });
  if (!malformedIds.every((entry) => entry !== undefined)) return validationProblem(where, error);
  const [first] = malformedIds;
  return new ApiProblem(404, 'not_found', `No ${ID_KINDS[first!.prefix]} with id ${first!.value} exists in your organization.`, {
    errors: malformedIds.map(({ path, message }) => ({ path, message })),
  });
}

function valueAt(value: unknown, path: PropertyKey[]): unknown {
  return path.reduce<unknown>((inside, key) => (inside as Record<PropertyKey, unknown> | undefined)?.[key], value);
}

/**
 * Postgres refuses the NUL character in text, so a string carrying one would fail as a database
 * error: it is refused here. In a path it names nothing (404); in a query or body it is a bad field (422).
 */
function assertNoNul(where: RequestPart, value: unknown): void {
  // The walk that names the fields builds a path per value: it runs only once one is known to hold a NUL.
  if (!hasNul(value)) return;
  const found = pathsWithNul(value, [where]);
  if (found.length === 0) return;
  if (where === 'path') throw new ApiProblem(404, 'not_found', `The path names nothing that exists: ${found.join(', ')} contains a NUL character.`);
  throw invalidFields(
    where,
    found.map((path) => ({ path, message: 'must not contain the NUL character (U+0000)' })),
  );
}

function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(hasNul);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const key in value) if (hasNul((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

function pathsWithNul(value: unknown, path: string[]): string[] {
  if (typeof value === 'string') return value.includes('\u0000') ? [path.join('.')] : [];
  if (Array.isArray(value)) return value.flatMap((item, index) => pathsWithNul(item, [...path, String(index)]));
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.entries(value).flatMap(([key, item]) => pathsWithNul(item, [...path, key]));
  }
  return [];
}
