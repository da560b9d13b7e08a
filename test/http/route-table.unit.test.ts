import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Dispatcher } from '../../api/http/dispatch';
import { type AnyRoute, defineRoute, routeTable } from '../../api/http/route';

const id = z.object({ id: z.string() });
const ok = { status: 200 as const, description: 'ok', schema: z.unknown() };
const routes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/v1/things',
    operationId: 'list',
    summary: '',
    tag: 't',
    auth: 'none',
    success: ok,
    handler: async () => ({ all: true }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/things/{id}',
    operationId: 'read',
    summary: '',
    tag: 't',
    auth: 'none',
    params: id,
    success: ok,
    handler: async ({ params }) => ({ read: params.id }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/things/{id}',
    operationId: 'post',
    summary: '',
    tag: 't',
    auth: 'none',
    params: id,
    success: ok,
    handler: async ({ params }) => ({ posted: params.id }),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/things/{id}/parts/{part}',
    operationId: 'remove',
    summary: '',
    tag: 't',
    auth: 'none',
    params: z.object({ id: z.string(), part: z.string() }),
    success: ok,
    handler: async ({ params }) => ({ removed: `${params.id}/${params.part}` }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/other/{id}',
    operationId: 'other',
    summary: '',
    tag: 't',
    auth: 'none',
    params: id,
    success: ok,
    handler: async () => {
      throw new Error('handler failed');
    },
  }),
];

/** An app answering through `handler`, with a 404 and an error handler after it that show what reached them. */
function appWith(handlers: RequestHandler[]) {
  const app = express();
  for (const handler of handlers) app.use(handler);
  app.use((_req, res) => {
    res.status(404).json({ unrouted: true });
  });
  const onError: ErrorRequestHandler = (error, _req, res, _next) => {
    res.status(error.status ?? 500).json({ error: error.message });
  };
  app.use(onError);
  return app;
}

const servers: Server[] = [];
afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

async function listening(app: express.Express): Promise<string> {
  const server = await new Promise<Server>((resolve) => {
    const started: Server = app.listen(0, '127.0.0.1', () => resolve(started));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('routeTable', () => {
  it('answers every request as the routes on Express routers do: methods, HEAD, OPTIONS, case, trailing slash, encoding, errors', async () => {
    const table = routeTable(routes, { apiKey: [], creatingWork: [] }) as Dispatcher;
    // The same routes as Express routers, one per group, each request walking them as Express does.
    const routers = table.dispatchesTo.flatMap((group) => (group as Dispatcher).dispatchesTo);
    expect(routers.length).toBe(2);
    const ours = await listening(appWith([table]));
    const reference = await listening(appWith(routers));
    const requests: [string, string][] = [
      ['GET', '/v1/things'],
      ['GET', '/V1/Things/'],
      ['GET', '/v1/things/a%20b'],
      ['GET', '/v1/things/%ZZ'],
      ['GET', '/v1/things/a/'],
      ['HEAD', '/v1/things/a'],
      ['OPTIONS', '/v1/things/a'],
      ['OPTIONS', '/v1/nothing'],
      ['POST', '/v1/things/a'],
      ['PUT', '/v1/things/a'],
      ['DELETE', '/v1/things/a/parts/b'],
      ['GET', '/v1/things/a/parts/b'],
      ['GET', '/v1/things/a/b/c'],
      ['GET', '/v1/other/x'],
      ['GET', '/v1/nothing'],
      ['GET', '/healthz'],
    ];
    const answer = async (base: string, method: string, path: string) => {
      const response = await fetch(`${base}${path}`, { method });
      return {
        status: response.status,
        allow: response.headers.get('allow'),
        type: response.headers.get('content-type'),
        body: await response.text(),
      };
    };
    for (const [method, path] of requests) {
      expect(await answer(ours, method, path), `${method} ${path}`).toEqual(await answer(reference, method, path));
    }
    expect(await answer(ours, 'GET', '/v1/things/a%20b')).toMatchObject({ status: 200, body: '{"read":"a b"}' });
    expect(await answer(ours, 'OPTIONS', '/v1/things/a')).toMatchObject({ status: 200, allow: 'GET, HEAD, POST' });
    expect(await answer(ours, 'GET', '/v1/things/%ZZ')).toMatchObject({ status: 400 });
    expect(await answer(ours, 'PUT', '/v1/things/a')).toMatchObject({ status: 404, body: '{"unrouted":true}' });
    expect(await answer(ours, 'GET', '/v1/other/x')).toMatchObject({ status: 500, body: '{"error":"handler failed"}' });
  });
});
