import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { pathPrefix, series } from '../../api/http/dispatch';

/** Runs `handlers` as one series on a stand-in request; answers what reached `done` and what was logged. */
async function run(handlers: RequestHandler[]) {
  const logged: unknown[] = [];
  const reachedDone: unknown[] = [];
  const req = { log: { error: (fields: unknown) => logged.push(fields) } } as unknown as Request;
  series(handlers)(req, {} as Response, ((error?: unknown) => reachedDone.push(error)) as NextFunction);
  // Rejections settle on the microtask queue.
  await new Promise((resolve) => setImmediate(resolve));
  return { reachedDone, logged };
}

describe('series', () => {
  it('runs the handlers in order and then passes the request on', async () => {
    const order: number[] = [];
    const step =
      (n: number): RequestHandler =>
      (_req, _res, next) => {
        order.push(n);
        next();
      };
    expect((await run([step(1), step(2), step(3)])).reachedDone).toEqual([undefined]);
    expect(order).toEqual([1, 2, 3]);
  });

  it('sends an error thrown, rejected or passed to next on, skipping the handlers after it', async () => {
    const failure = new Error('refused');
    const never: RequestHandler = () => {
      throw new Error('must not run');
    };
    const failing: RequestHandler[] = [
      () => {
        throw failure;
      },
      async () => {
        throw failure;
      },
      (_req, _res, next) => next(failure),
    ];
    for (const handler of failing) expect((await run([handler, never])).reachedDone).toEqual([failure]);
  });

  it('logs, and does not send on a second time, the failure of a handler that had already passed the request on', async () => {
    const failure = new Error('after next');
    const { reachedDone, logged } = await run([
      async (_req, _res, next) => {
        next();
        throw failure;
      },
    ]);
    expect(reachedDone).toEqual([undefined]);
    expect(logged).toEqual([{ err: failure }]);
  });
});

describe('pathPrefix', () => {
  it('answers the first segments of a path, lower-cased, without a trailing slash, as splitting it would', () => {
    const bySplit = (path: string, depth: number) => {
      const prefix = path.split('/', depth + 1).join('/');
      return (prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix).toLowerCase();
    };
    const paths = ['', '/', '/healthz', '/V1/Patients/syn-pat-0001', '/v1/', '/v1//x', '/v1/patients/', '//', 'no-slash', '/fhir/R4/Patient/$match'];
    for (const path of paths) for (const depth of [1, 2, 3]) expect(pathPrefix(path, depth), `${path} at ${depth}`).toBe(bySplit(path, depth));
    expect(pathPrefix('/V1/Patients/syn-pat-0001', 2)).toBe('/v1/patients');
  });
});
