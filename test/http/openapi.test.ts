import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smartConfigurationSchema } from '../../api/smart/discovery';
import { mountedRoutes } from '../support/mounted-routes';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let document: any;

beforeAll(async () => {
  service = await startTestService();
  document = (await service.call('/openapi.json')).body;
});
afterAll(() => service.stop());

/**
 * The operations the app answers, as OpenAPI writes them: `:id` is `{id}`; a path that answers
 * everything below it (the dashboard-owned `/v1/api-keys{/*rest}`) is its root. Left out: CORS
 * preflights (OPTIONS, not operations) and the FHIR catch-all, which answers only "not supported".
 */
function answeredOperations(): string[] {
  return mountedRoutes(service.app)
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
        expect.objectContaining({ in: 'path', name: 'type', schema: expect.objectContaining({ enum: service.fhirStore.supportedTypes }) }),
      ]),
    );
  });

  it('describes the SMART and OAuth answers with the schemas that type them', async () => {
    const served = (await service.call('/.well-known/smart-configuration')).body;
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
