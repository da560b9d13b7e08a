import { randomFillSync } from 'node:crypto';
import { type IncomingMessage, ServerResponse } from 'node:http';
import express, { type Express, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { redactUrl } from '../../platform/logger';

declare module 'node:http' {
  interface IncomingMessage {
    /** The request's id (requestContext), echoed as X-Request-Id and in problem bodies. */
    id: string;
    /** A logger bound to the request (requestContext): what it logs carries the request's id, method and URL. */
    log: Logger;
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Probes answer every few seconds: their lines would drown the rest. */
const UNLOGGED_PATHS = new Set(['/healthz', '/readyz']);

/** Random bytes drawn from the kernel in batches: asking it per request was a tenth of the work of a small read. */
const ID_BYTES = 12;
const idPool = Buffer.alloc(ID_BYTES * 256);
let idOffset = idPool.length;

/** `req_` and 24 hex digits (96 random bits). */
function newRequestId(): string {
  if (idOffset === idPool.length) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  idOffset += ID_BYTES;
  return `req_${idPool.toString('hex', idOffset - ID_BYTES, idOffset)}`;
}

/** Where a request keeps what requestContext gives it beyond its id: when it arrived, its logger once made. */
const RECEIVED_AT = Symbol('receivedAt');
const LOGGER = Symbol('logger');
type Tracked = Request & { [RECEIVED_AT]: number; [LOGGER]?: Logger };

/**
 * The key Express's router keeps a request's matched path under (router 2's `matchedRoute`, for its
 * tracing), set on every request; not exported, so found once by letting a router match a stand-in
 * request. Undefined if a later router names it otherwise: that request property is then added as before.
 */
const MATCHED_ROUTE = (() => {
  const probe = express.Router();
  probe.use((_req, _res, next) => next());
  const standIn = { method: 'GET', url: '/' } as Request;
  probe(standIn, {} as Response, () => {});
  return Object.getOwnPropertySymbols(standIn).find((key) => key.description === 'router.tracing.matchedRoute');
})();

const DEFAULT_STATUS = { code: ServerResponse.prototype.statusCode, message: ServerResponse.prototype.statusMessage };

/** Express's `app.handle(req, res, callback)`: what the app, as the server's request listener, calls for every request. */
type Handle = (req: IncomingMessage, res: ServerResponse, callback?: unknown) => void;

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, else a new one), echoes it
 * in the response, gives it `req.log` (a child of the logger bound to the request: id, method, URL
 * with its credentials redacted) and logs it once answered, at `info` (`error` for a 5xx), with the
 * same fields and line as pino-http's. Written on pino directly rather than with pino-http, which
 * builds that child logger, serializing the request, and adds three listeners on every request
 * even when nothing is logged. `req.log` is a getter on the app's request prototype, defined once,
 * that makes the child the first time it is read, so a request that logs nothing allocates nothing
 * for it; nothing below makes a function per request (under tsx each one made is also named, at a cost).
 *
 * It runs before the app's middleware, wrapping `app.handle`: Express then changes the request's and
 * the response's prototypes (to the app's), and V8 makes every property added to an object after such
 * a change a new hidden class of that object alone (2 µs each here, measured, and every function that
 * reads the request then sees a new class each time). So the request is given here, before that, its
 * id and arrival time, and the properties Express's router, `app.handle` and Node add to every request
 * and response, with the values they would give (`originalUrl`, `baseUrl`, `params`, `next`, `route`,
 * the router's matched path, parseurl's `_parsedUrl`, `_eventsCount`; `res.locals`, `statusCode`,
 * `statusMessage`): each then only changes a value, and every request has the same hidden class.
 * Mounted inside another app (whose `handle` has run), it keeps what that app gave.
 */
export function requestContext(app: Express, logger: Logger): void {
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: Tracked): Logger {
      this[LOGGER] ??= logger.child({ req: { id: this.id, method: this.method, url: redactUrl(this.originalUrl) } });
      return this[LOGGER];
    },
  });
  /** A response's 'close' (once, whether it was sent or the caller went away first): the request's line. */
  function logAnswered(this: ServerResponse<IncomingMessage>): void {
    const req = this.req as Tracked;
    const level = this.statusCode >= 500 ? 'error' : 'info';
    if (!logger.isLevelEnabled(level) || UNLOGGED_PATHS.has(req.path)) return;
    const fields = { res: { statusCode: this.statusCode }, responseTime: Date.now() - req[RECEIVED_AT] };
    if (level === 'error') req.log.error({ ...fields, err: new Error(`failed with status code ${this.statusCode}`) }, 'request errored');
    else req.log.info(fields, this.writableFinished ? 'request completed' : 'request aborted');
  }
  const expressApp = app as unknown as { handle: Handle };
  const expressHandle = expressApp.handle;
  expressApp.handle = function handle(this: Express, req, res, callback) {
    const shaped = req as Partial<Tracked> & { _parsedUrl?: unknown };
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : newRequestId();
    shaped.id = id;
    shaped[RECEIVED_AT] = Date.now();
    shaped.originalUrl ||= req.url!;
    shaped.baseUrl ??= '';
    shaped.params ??= {};
    shaped.next ??= undefined;
    shaped.route ??= undefined;
    shaped._parsedUrl ??= undefined;
    if (MATCHED_ROUTE) (shaped as Record<symbol, unknown>)[MATCHED_ROUTE] ??= undefined;
    // Node's streams leave the listener count on EventEmitter's prototype (0) until a listener is
    // added, which Node does once the request is answered.
    if (!Object.hasOwn(req, '_eventsCount')) (req as unknown as { _eventsCount: number })._eventsCount = 0;
    (res as Partial<Response>).locals ??= Object.create(null);
    if (!Object.hasOwn(res, 'statusCode')) {
      // Own properties from here on, with ServerResponse.prototype's values: Node sets both when it writes the head.
      res.statusCode = DEFAULT_STATUS.code;
      res.statusMessage = DEFAULT_STATUS.message;
    }
    res.setHeader('X-Request-Id', id);
    // A response closes once: `on` spares the wrapper `once` makes per request.
    if (logger.isLevelEnabled('error')) res.on('close', logAnswered);
    expressHandle.call(this, req, res, callback);
  };
}
