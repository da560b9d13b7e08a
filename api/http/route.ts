import type { Request, RequestHandler, Response, Router } from 'express';
import type { z } from 'zod';
import type { AuthContext } from './locals';
import { ApiProblem, validationProblem } from './problem';

/**
 * One definition per operation: its zod schemas validate the request, type the handler and
 * produce the OpenAPI document (api/openapi.ts), so the three cannot drift apart.
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
   * shown once is left out, so it is never stored with the key.
   */
  replayed?: (response: z.input<R>) => z.input<R>;
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

export function mountRoutes(router: Router, routes: AnyRoute[], middleware: RouteMiddleware): void {
  for (const route of routes) {
    const before = [...(route.auth === 'api_key' ? middleware.apiKey : []), ...(createsWork(route) ? middleware.creatingWork : [])];
    router[route.method](expressPath(route.path), ...before, async (req: Request, res: Response) => {
      const params = parseOrThrow('path', route.params, req.params);
      const query = parseOrThrow('query', route.query, req.query);
      const body = route.body ? parseBody(route, req) : undefined;
      const result = await route.handler({ params, query, body, auth: res.locals.auth as AuthContext, req, res });
      if (result === RESPONDED) return;
      if (route.replayed) res.locals.replayBody = JSON.stringify(route.replayed(result));
      res.status(route.success.status).json(result);
    });
  }
}

function parseOrThrow(where: 'path' | 'query', schema: z.ZodType | undefined, value: unknown): unknown {
  if (!schema) return {};
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationProblem(where, parsed.error);
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
  const parsed = schema.safeParse(req.body ?? {});
  if (!parsed.success) throw validationProblem('body', parsed.error);
  return parsed.data;
}
