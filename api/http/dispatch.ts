import type { NextFunction, Request, RequestHandler, Response } from 'express';

/*
 * Express tries every layer of every router mounted at the root, in order, for every request: with
 * all the routers and routes in one line, a read walked a few hundred layers (path matching, params,
 * `next` calls) before its own. These send each request to the one router its path can belong to.
 */

/**
 * `handler` (a router) entered only by paths under one of `prefixes` (the prefix itself, or it and
 * a `/`); every other request skips it. The URL is left as it is, so the router keeps its full paths.
 * Case-insensitive, as Express's own matching is.
 */
export function onlyUnder(prefixes: readonly string[], handler: RequestHandler): Dispatcher {
  const lowered = prefixes.map((prefix) => prefix.toLowerCase());
  return onlyWhere((path) => lowered.some((prefix) => isUnder(path, prefix)), handler);
}

/** `handler` entered only by requests whose path, lower-cased, passes `test`; every other request skips it. */
export function onlyWhere(test: (lowerCasePath: string) => boolean, handler: RequestHandler): Dispatcher {
  return dispatching([handler], (req, res, next) => {
    if (test(req.path.toLowerCase())) return handler(req, res, next);
    next();
  });
}

/** Whether `path` is `prefix` or below it (both lower-cased), as a router mounted at `prefix` sees it. */
export function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * `handlers` (middleware) run in order as one handler, the way a router runs its layers but without
 * matching a path for each: an error (thrown, rejected, or passed to `next`) goes on to `done`, and
 * so does the request when the last calls `next`. A handler that fails after it has passed the
 * request on (it called `next`, then threw or rejected) has its error logged, not sent down the
 * chain a second time, where it would answer a request already answered or on its way.
 */
export function series(handlers: readonly RequestHandler[]): Dispatcher {
  return dispatching(handlers, (req, res, done) => {
    new Series(handlers, req, res, done).step();
  });
}

/**
 * One request's walk through a series. A class, not a closure per request: under tsx every function
 * made per request is also named, at a cost; one bound `step` is made instead.
 */
class Series {
  private index = 0;
  private finished = false;
  private readonly next: NextFunction = this.step.bind(this);

  constructor(
    private readonly handlers: readonly RequestHandler[],
    private readonly req: Request,
    private readonly res: Response,
    private readonly done: NextFunction,
  ) {}

  step(error?: unknown): void {
    if (this.finished) return;
    const handler = this.handlers[this.index];
    this.index += 1;
    if (error || !handler) {
      this.finished = true;
      this.done(error);
      return;
    }
    const position = this.index;
    try {
      const returned: unknown = handler(this.req, this.res, this.next);
      if (returned instanceof Promise) returned.catch((rejected: unknown) => this.failed(position, rejected ?? new Error('Rejected promise')));
    } catch (thrown) {
      this.failed(position, thrown);
    }
  }

  /** The handler at `position` threw or rejected: the error goes on unless that handler had already passed the request on. */
  private failed(position: number, error: unknown): void {
    if (this.index === position && !this.finished) {
      this.finished = true;
      this.done(error);
      return;
    }
    this.req.log.error({ err: error }, 'A handler failed after passing the request on; the error was not answered');
  }
}

/**
 * One handler per first path segment (`/v1`, `/fhir`, …; case-insensitive, as Express matches), the
 * `rest` handler for every other path: what a request runs is chosen once, by a map lookup, instead
 * of each root middleware matching its own mount path in turn.
 */
export function byFirstSegment(handlers: Readonly<Record<string, RequestHandler>>, rest: RequestHandler): Dispatcher {
  const bySegment = new Map(Object.entries(handlers).map(([segment, handler]) => [segment.toLowerCase(), handler]));
  return dispatching([...new Set([...bySegment.values(), rest])], (req, res, next) =>
    (bySegment.get(pathPrefix(req.path, 1)) ?? rest)(req, res, next),
  );
}

/** A dispatcher that names the routers it sends to, so what reads the app's routes (the OpenAPI check) still finds them. */
export type Dispatcher = RequestHandler & { dispatchesTo: readonly RequestHandler[] };

export function dispatching(handlers: readonly RequestHandler[], dispatcher: RequestHandler): Dispatcher {
  return Object.assign(dispatcher, { dispatchesTo: handlers });
}

/** The first `depth` segments of a path, lower-cased, without a trailing `/`: `/v1/patients/syn-pat-0001` → `/v1/patients` at depth 2. */
export function pathPrefix(path: string, depth: number): string {
  // What `path.split('/', depth + 1).join('/')` gives, without the array: up to the (depth + 1)th `/`.
  let end = -1;
  for (let slashes = 0; slashes <= depth; slashes += 1) {
    end = path.indexOf('/', end + 1);
    if (end === -1) break;
  }
  const prefix = end === -1 ? path : path.slice(0, end);
  return (prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix).toLowerCase();
}

/**
 * One handler per path prefix (`pathPrefix(path, depth)`): a request goes straight to the handler of
 * its prefix, or on (`next`) when none has it.
 */
export function byPathPrefix(handlers: ReadonlyMap<string, RequestHandler>, depth: number): RequestHandler {
  return dispatching([...handlers.values()], (req, res, next) => {
    const handler = handlers.get(pathPrefix(req.path, depth));
    if (handler) return handler(req, res, next);
    next();
  });
}

/** `parser` (a body parser) run only for a request that has a body (RFC 9112 §6.3): most are reads, which it would only look at and pass on. */
export function withBodyOnly(parser: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const length = req.headers['content-length'];
    if (req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return next();
    return parser(req, res, next);
  };
}
