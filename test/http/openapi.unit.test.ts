import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { drizzle } from 'drizzle-orm/postgres-js';
import type { Express } from 'express';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { smartConfigurationSchema } from '../../api/smart/discovery';
import * as schema from '../../drizzle/schema';
import { type FhirStore, loadFhirStore } from '../../fixtures/store';
import { loadConfig } from '../../platform/config';
import type { Database } from '../../platform/database';
import { createLogger } from '../../platform/logger';
import { mountedRoutes } from '../support/mounted-routes';

/**
 * The document the app serves, from the app itself with no database and no Temporal behind it: the
 * document and the discovery answer are built from route definitions alone. The database client
 * points at a closed port (postgres.js connects on the first query, which would fail), and any use of
 * the Temporal client throws.
 */
function unreachable(name: string): never {
  return new Proxy({} as object, {
    get(_target, property) {
      throw new Error(`serving /openapi.json used the ${name} (${String(property)})`);
    },
  }) as never;
}

let app: Express;
let server: Server;
let baseUrl: string;
let fhirStore: FhirStore;
let document: any;

async function get(path: string): Promise<any> {
  const response = await fetch(`${baseUrl}${path}`);
  expect(response.status).toBe(200);
  return response.json();
}

beforeAll(async () => {
  fhirStore = loadFhirStore();
  app = createApp({
    config: loadConfig({ NODE_ENV: 'test', PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }),
    db: drizzle(postgres('postgres://nobody@127.0.0.1:1/none', { max: 1 }), { schema }) as unknown as Database,
    listen: async () => {},
    temporal: unreachable('Temporal client'),
    logger: createLogger('silent', { pretty: false }),
    version: 'test',
    fhirStore,
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  document = await get('/openapi.json');
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/**
 * The operations the app answers, as OpenAPI writes them: `:id` is `{id}`; a path that answers
 * everything below it (the dashboard-owned `/v1/api-keys{/*rest}`) is its root. Left out: CORS
 * preflights (OPTIONS, not operations) and the FHIR catch-all, which answers only "not supported".
 */
function answeredOperations(): string[] {
  return mountedRoutes(app)
    .filter((route) => route.method !== 'options' && !route.path.endsWith('/{*rest}'))
    .map((route) => `${route.method} ${route.path.replace('{/*rest}', '').replace(/:(\w+)/g, '{$1}')}`);
}

function documentedOperations(): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item as object).map((method) => `${method} ${path}`));
}

describe('/openapi.json', () => {
  it('lists every route the service answers, and only those', () => {
    const answered = answeredOperations();
    expect(answered).toEqual(
      expect.arrayContaining(['get /.well-known/smart-configuration', 'post /oauth/token', 'get /fhir/R4/{type}/{id}', 'get /v1/connections']),
    );
    expect(documentedOperations()).toEqual(expect.arrayContaining(answered));
    expect(Object.keys(document.paths).sort()).toEqual([...new Set(answered.map((operation) => operation.split(' ')[1]))].sort());
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
  });

  it('describes the API key and the SMART access token, and which operations take which', () => {
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['apiKey', 'clientBasic', 'smartAccessToken']);
    expect(document.components.securitySchemes.smartAccessToken).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(document.paths['/fhir/R4/{type}/{id}'].get.security).toEqual([{ smartAccessToken: [] }]);
    expect(document.paths['/fhir/R4/metadata'].get.security).toEqual([]);
    expect(document.paths['/oauth/introspect'].post.security).toEqual([{ apiKey: [] }, { clientBasic: [] }]);
    expect(document.paths['/v1/connections'].get.security).toEqual([{ apiKey: [] }]);
    expect(document.paths['/fhir/R4/{type}'].get.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ in: 'path', name: 'type', schema: expect.objectContaining({ enum: fhirStore.supportedTypes }) }),
      ]),
    );
  });

  it('describes the SMART and OAuth answers with the schemas that type them', async () => {
    const served = await get('/.well-known/smart-configuration');
    expect(smartConfigurationSchema.safeParse(served).success).toBe(true);
    const discovery = document.paths['/.well-known/smart-configuration'].get.responses['200'].content['application/json'].schema;
    expect(discovery).toEqual({ $ref: '#/components/schemas/SmartConfiguration' });
    expect(document.components.schemas.SmartConfiguration.required).toEqual(expect.arrayContaining(['token_endpoint', 'capabilities']));

    const token = document.paths['/oauth/token'].post;
    expect(Object.keys(token.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
    expect(token.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SmartTokenResponse' });
    expect(token.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OAuthError' });
    expect(document.components.schemas.OAuthError.properties.error.enum).toContain('invalid_grant');
    expect(document.paths['/fhir/R4/{type}/{id}'].get.responses['404'].content['application/fhir+json'].schema).toEqual({
      $ref: '#/components/schemas/OperationOutcome',
    });
  });
});
