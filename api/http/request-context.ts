import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
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

/**
 * 24 hex digits (about 90 random bits) from randomUUID, which draws on a pooled buffer: randomBytes
 * asks the kernel on every call, a tenth of the synchronous work of a single-resource read.
 */
const newRequestId = () => `req_${randomUUID().replaceAll('-', '').slice(0, 24)}`;

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, else a new one), echoes it
 * in the response, gives it `req.log` (a child of the logger bound to the request: id, method, URL
 * with its credentials redacted) and logs it once answered, at `info` (`error` for a 5xx), with the
 * same fields and line as pino-http's. Written on pino directly rather than with pino-http, which
 * builds that child logger, serializing the request, and adds three listeners on every request
 * even when nothing is logged; here the child is made the first time something logs with it, and
 * nothing below makes a function per request (under tsx each one made is also named, at a cost).
 */
export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : newRequestId();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    const log = new RequestLog(logger, req);
    req.log = new Proxy(log as unknown as Logger, MADE_WHEN_USED);
    if (logger.isLevelEnabled('error') && !UNLOGGED_PATHS.has(req.path)) {
      answered.set(res, log);
      // A response closes once: `on` spares the wrapper `once` makes per request.
      res.on('close', logAnswered);
    }
    next();
  };
}

/** A request's logger, made the first time it is asked for. */
class RequestLog {
  private made: Logger | undefined;
  readonly startedAt = Date.now();

  constructor(
    readonly parent: Logger,
    private readonly req: Request,
  ) {}

  get logger(): Logger {
    this.made ??= this.parent.child({ req: { id: this.req.id, method: this.req.method, url: redactUrl(this.req.originalUrl) } });
    return this.made;
  }
}

/**
 * `req.log` is a proxy that hands every use to the request's logger, made on the first: a getter
 * on the request instead would turn it into a slow dictionary for everything after.
 */
const MADE_WHEN_USED: ProxyHandler<Logger> = {
  get(target, property) {
    const logger = (target as unknown as RequestLog).logger;
    const value = Reflect.get(logger, property, logger);
    return typeof value === 'function' ? value.bind(logger) : value;
  },
};

const answered = new WeakMap<ServerResponse, RequestLog>();

/** A response's 'close' (once, whether it was sent or the caller went away first): the request's line. */
function logAnswered(this: ServerResponse<IncomingMessage>): void {
  const log = answered.get(this);
  if (!log) return;
  const level = this.statusCode >= 500 ? 'error' : 'info';
  if (!log.parent.isLevelEnabled(level)) return;
  const fields = { res: { statusCode: this.statusCode }, responseTime: Date.now() - log.startedAt };
  if (level === 'error') log.logger.error({ ...fields, err: new Error(`failed with status code ${this.statusCode}`) }, 'request errored');
  else log.logger.info(fields, this.writableFinished ? 'request completed' : 'request aborted');
}
