import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../platform/organizations';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

function expectUnauthorized(response: { status: number; headers: Headers; body: any }, code: string) {
  expect(response.status).toBe(401);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="sandbox"/);
  expect(response.body).toMatchObject({ status: 401, title: 'Unauthorized', code, type: `urn:sandbox:problem:${code}` });
  expect(response.body.detail).toEqual(expect.any(String));
}

describe('API key authentication', () => {
  it('answers a fresh organization with an empty connection list', async () => {
    const tenant = await service.newTenant();
    const response = await service.call('/v1/connections', { key: tenant.key });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: [], next_cursor: null });
  });

  it('refuses a request without a key', async () => {
    expectUnauthorized(await service.call('/v1/connections'), 'missing_api_key');
  });

  it('refuses a malformed Authorization header', async () => {
    const response = await service.call('/v1/connections', { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expectUnauthorized(response, 'invalid_authorization_header');
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_request"');
  });

  it('refuses an unknown key', async () => {
    const response = await service.call('/v1/connections', { key: 'sk_sandbox_thisKeyWasNeverIssuedByTheServiceAtAll000' });
    expectUnauthorized(response, 'invalid_api_key');
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('refuses a key once it is revoked', async () => {
    const tenant = await service.newTenant();
    expect((await service.call('/v1/connections', { key: tenant.key })).status).toBe(200);
    expect(await revokeApiKey(service.database.db, tenant.keyId)).toBe(true);
    // Keys are cached per process; the revocation's NOTIFY clears them within a second (test/http/across-processes.test.ts).
    const refused = await waitUntil(
      async () => {
        const response = await service.call('/v1/connections', { key: tenant.key });
        return response.status === 200 ? undefined : response;
      },
      { what: 'the revoked key being refused', timeoutMs: 1_000, intervalMs: 20 },
    );
    expectUnauthorized(refused, 'revoked_api_key');
  });

  it('leaves the open endpoints open', async () => {
    for (const path of ['/healthz', '/readyz', '/openapi.json', '/docs']) {
      expect((await service.call(path)).status, path).toBe(200);
    }
  });
});

describe('tenancy', () => {
  it("answers 404 for another organization's connection, and never lists it", async () => {
    const owner = await service.newTenant('Owner Health');
    const stranger = await service.newTenant('Stranger Health');
    const created = await service.call('/v1/connections', { key: owner.key, method: 'POST', body: { name: 'Owner EHR' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    const read = await service.call(`/v1/connections/${id}`, { key: stranger.key });
    expect(read.status).toBe(404);
    expect(read.body).toMatchObject({ code: 'not_found', status: 404 });
    expect(JSON.stringify(read.body)).not.toContain('Owner EHR');

    const patch = await service.call(`/v1/connections/${id}`, { key: stranger.key, method: 'PATCH', body: { name: 'hijacked' } });
    expect(patch.status).toBe(404);
    expect((await service.call('/v1/connections', { key: stranger.key })).body.data).toEqual([]);

    const ownerView = await service.call(`/v1/connections/${id}`, { key: owner.key });
    expect(ownerView.body.name).toBe('Owner EHR');
  });

  it('keeps webhook settings per organization', async () => {
    const first = await service.newTenant();
    const second = await service.newTenant();
    await service.call('/v1/settings/webhook', { key: first.key, method: 'PATCH', body: { webhook_url: 'http://localhost:4010/first' } });
    expect((await service.call('/v1/settings/webhook', { key: second.key })).body.webhook_url).toBeNull();
    expect((await service.call('/v1/settings/webhook', { key: first.key })).body.webhook_url).toBe('http://localhost:4010/first');
  });
});

describe('dashboard-owned endpoints', () => {
  it.each([
    ['GET', '/v1/auth/status'],
    ['GET', '/v1/api-keys'],
    ['POST', '/v1/api-keys'],
    ['DELETE', '/v1/api-keys/key_123'],
  ])('%s %s answers 501 with a problem body naming the dashboard', async (method, path) => {
    const tenant = await service.newTenant();
    const response = await service.call(path, { key: tenant.key, method });
    expect(response.status).toBe(501);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 501, code: 'owned_by_dashboard' });
    expect(response.body.detail).toContain('dashboard');
  });
});
