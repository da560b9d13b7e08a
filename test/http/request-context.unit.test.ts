import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { requestContext } from '../../api/http/request-context';
import { createLogger } from '../../platform/logger';

const servers: Server[] = [];
afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

/** An app with requestContext at `level`, its log lines collected; its routes show what a handler sees of the request. */
async function appLoggingAt(level: string) {
  const lines: Record<string, unknown>[] = [];
  const shapes: { atHandler: Record<'req' | 'res', string[]>; atClose: Record<'req' | 'res', string[]> }[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const app = express();
  app.disable('x-powered-by');
  requestContext(app, createLogger(level, { pretty: false, destination }));
  const seen = express.Router();
  seen.get('/v1/:thing/seen', (req, res) => {
    req.log.warn('looked at');
    res.json({
      id: req.id,
      params: req.params,
      originalUrl: req.originalUrl,
      baseUrl: req.baseUrl,
      path: req.path,
      route: req.route?.path,
      query: req.query,
    });
  });
  app.use(seen);
  app.get('/v1/shape', (req, res) => {
    const atHandler = { req: Reflect.ownKeys(req).map(String), res: Reflect.ownKeys(res).map(String) };
    res.on('close', () => shapes.push({ atHandler, atClose: { req: Reflect.ownKeys(req).map(String), res: Reflect.ownKeys(res).map(String) } }));
    res.json({});
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/fails', () => {
    throw new Error('broken');
  });
  app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ failed: true });
  });
  const server = await new Promise<Server>((resolve) => {
    const started: Server = app.listen(0, '127.0.0.1', () => resolve(started));
  });
  servers.push(server);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The request line is written once the response has closed, after the client has its answer.
  const settled = async (count: number) => {
    for (let waited = 0; lines.length < count && waited < 200; waited += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    return lines;
  };
  return { base, lines, settled, shapes };
}

describe('requestContext', () => {
  it('gives each request its id, the X-Request-Id header, req.log, and what Express gives a handler', async () => {
    const { base, settled } = await appLoggingAt('warn');
    const response = await fetch(`${base}/v1/things/seen?token=secret&x=1`);
    expect(response.status).toBe(200);
    expect(response.statusText).toBe('OK');
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_[0-9a-f]{24}$/);
    expect(await response.json()).toEqual({
      id: requestId,
      params: { thing: 'things' },
      originalUrl: '/v1/things/seen?token=secret&x=1',
      baseUrl: '',
      path: '/v1/things/seen',
      route: '/v1/:thing/seen',
      query: { token: 'secret', x: '1' },
    });
    const [line] = await settled(1);
    expect(line).toMatchObject({ level: 40, msg: 'looked at', req: { id: requestId, method: 'GET', url: '/v1/things/seen?token=redacted&x=1' } });
    const echoed = await fetch(`${base}/v1/things/seen`, { headers: { 'x-request-id': 'partner-trace-42' } });
    expect(((await echoed.json()) as { id: string }).id).toBe('partner-trace-42');
  });

  it('gives a request and its response every property before Express changes their prototypes, so none is added after', async () => {
    // V8 gives an object a hidden class of its own for each property added after its prototype
    // changed (api/http/request-context.ts). Express sets req.res just before it changes the
    // request's prototype: a string key after it was added later; a key that first appears at
    // 'close' was added once answered.
    const { base, shapes } = await appLoggingAt('warn');
    await fetch(`${base}/v1/shape?x=1`);
    for (let waited = 0; shapes.length === 0 && waited < 200; waited += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    const [{ atHandler, atClose }] = shapes as [(typeof shapes)[number]];
    const strings = atClose.req.filter((key) => !key.startsWith('Symbol('));
    expect(strings.slice(strings.indexOf('res') + 1)).toEqual([]);
    expect(atClose.req).toEqual(atHandler.req);
    expect(atClose.res).toEqual(atHandler.res);
    expect(atHandler.req).toContain('Symbol(router.tracing.matchedRoute)');
  });

  it('logs each answered request at info, a 5xx at error, and no line for the probes', async () => {
    const { base, lines, settled } = await appLoggingAt('info');
    await fetch(`${base}/healthz`);
    const fine = await fetch(`${base}/v1/things/seen`);
    const failed = await fetch(`${base}/fails`);
    expect(failed.status).toBe(500);
    await settled(3);
    const requestLines = lines.filter((line) => line.msg !== 'looked at');
    expect(requestLines).toHaveLength(2);
    expect(requestLines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 30,
          msg: 'request completed',
          req: { id: fine.headers.get('x-request-id'), method: 'GET', url: '/v1/things/seen' },
          res: { statusCode: 200 },
          responseTime: expect.any(Number),
        }),
        expect.objectContaining({
          level: 50,
          msg: 'request errored',
          req: { id: failed.headers.get('x-request-id'), method: 'GET', url: '/fails' },
          res: { statusCode: 500 },
          err: expect.objectContaining({ message: 'failed with status code 500' }),
        }),
      ]),
    );
  });
});
