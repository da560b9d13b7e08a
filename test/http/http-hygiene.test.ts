import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { createLogger } from '../../platform/logger';
import { VERSION } from '../../platform/version';
import { listen } from '../../runtime/services';
import { call, startTestService, type TestService } from '../support/service';

let service: TestService;
let limited: TestService;
beforeAll(async () => {
  [service, limited] = await Promise.all([startTestService(), startTestService({ RATE_LIMIT_PER_MINUTE: '3' })]);
});
afterAll(() => Promise.all([service.stop(), limited.stop()]));

describe('request ids', () => {
  it('gives every response an id, echoing a sane caller id and replacing an unsafe one', async () => {
    const generated = await service.call('/healthz');
    expect(generated.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);

    const echoed = await service.call('/v1/connections', { headers: { 'x-request-id': 'partner-trace-42' } });
    expect(echoed.headers.get('x-request-id')).toBe('partner-trace-42');
    expect(echoed.body.request_id).toBe('partner-trace-42');

    const unsafe = await service.call('/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^req_/);
  });
});

describe('unknown routes', () => {
  it('answers 404 problem+json pointing at the docs', async () => {
    const response = await service.call('/v1/nothing-here');
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ code: 'route_not_found', status: 404 });
    expect(response.body.detail).toContain('/docs');
  });
});

describe('routing', () => {
  it('finds a route whatever the case of its path, with or without a trailing slash, on every router', async () => {
    const tenant = await service.newTenant();
    for (const path of ['/V1/Connections', '/v1/connections/', '/HEALTHZ']) {
      expect((await service.call(path, { key: tenant.key })).status, path).toBe(200);
    }
    expect((await service.call('/FHIR/R4/metadata')).status).toBe(200);
    expect((await service.call('/Docs')).status).toBe(200);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After once a key spends its budget, without touching other keys', async () => {
    const busy = await limited.newTenant();
    const calm = await limited.newTenant();
    for (let i = 0; i < 3; i += 1) expect((await limited.call('/v1/connections', { key: busy.key })).status).toBe(200);
    const refused = await limited.call('/v1/connections', { key: busy.key });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', status: 429 });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await limited.call('/v1/connections', { key: calm.key })).status).toBe(200);
  });
});

describe('health', () => {
  it('reports liveness and readiness with both dependencies checked', async () => {
    expect((await service.call('/healthz')).body).toEqual({ status: 'ok' });
    expect((await service.call('/readyz')).body).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('is not ready, and says why, when Temporal does not answer', async () => {
    const unreachable = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 500 }) });
    const app = createApp({
      config: service.config,
      db: service.database.db,
      listen: service.database.listen,
      temporal: unreachable,
      logger: createLogger('silent', { pretty: false }),
      version: VERSION,
      fhirStore: service.fhirStore,
    });
    const server = await listen(app, '127.0.0.1', 0, 1);
    try {
      const response = await call(`http://127.0.0.1:${server.port}`, '/readyz');
      expect(response.status).toBe(503);
      expect(response.body.code).toBe('not_ready');
      expect(response.body.detail).toContain('temporal:');
      expect(response.body.detail).not.toContain('database:');
      expect(response.headers.get('retry-after')).toBe('5');
    } finally {
      await server.close();
    }
  });
});

describe('OpenAPI document and docs page', () => {
  it('describes every operation from the zod schemas, with the problem shape', async () => {
    const { status, body: document } = await service.call('/openapi.json');
    expect(status).toBe(200);
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/connections',
        '/v1/connections/{connection_id}',
        '/v1/settings/webhook',
        '/v1/auth/status',
        '/healthz',
        '/readyz',
      ]),
    );
    const create = document.paths['/v1/connections'].post;
    expect(create.security).toEqual([{ apiKey: [] }]);
    expect(create.responses['422'].content['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
    const createBody = document.components.schemas.CreateConnection;
    expect(createBody.required).toEqual(['name']);
    expect(createBody.properties.environment.enum).toEqual(['sandbox', 'development', 'staging', 'production']);
    expect(document.components.schemas.Problem.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'detail', 'code']));
  });

  it('serves the docs page and its assets from node_modules', async () => {
    const page = await service.call('/docs');
    expect(page.body).toContain('/docs/assets/swagger-ui-bundle.js');
    expect(page.body).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs)/);
    const asset = await fetch(`${service.baseUrl}/docs/assets/swagger-ui-bundle.js`);
    expect(asset.status).toBe(200);
    expect((await asset.text()).length).toBeGreaterThan(100_000);
  });
});
