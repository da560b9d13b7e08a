import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKeys } from '../../drizzle/schema';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

const create = (key: string, body: unknown, idempotencyKey?: string) =>
  service.call('/v1/connections', { key, method: 'POST', body, headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {} });

describe('Idempotency-Key on POST', () => {
  it('answers a retry with the first response and creates nothing new', async () => {
    const tenant = await service.newTenant();
    const idempotencyKey = randomUUID();
    const first = await create(tenant.key, { name: 'once', rotate_secret: true }, idempotencyKey);
    const retry = await create(tenant.key, { name: 'once', rotate_secret: true }, idempotencyKey);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    // The same connection, its secret shown once: the replay masks it (docs/api/webhooks.md, Webhook targets).
    expect(retry.body).toEqual({ ...first.body, webhook_secret: `sbx_whsec_…${first.body.webhook_secret.slice(-4)}` });
    expect((await service.call('/v1/connections', { key: tenant.key })).body.data).toHaveLength(1);
  });

  it('refuses the same key with another body', async () => {
    const tenant = await service.newTenant();
    const idempotencyKey = randomUUID();
    expect((await create(tenant.key, { name: 'first' }, idempotencyKey)).status).toBe(201);
    const reused = await create(tenant.key, { name: 'second' }, idempotencyKey);
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe('idempotency_key_reused');
    expect((await service.call('/v1/connections', { key: tenant.key })).body.data.map((c: { name: string }) => c.name)).toEqual(['first']);
  });

  it('replays a validation failure too, and keeps keys per organization', async () => {
    const first = await service.newTenant();
    const second = await service.newTenant();
    const idempotencyKey = randomUUID();
    const invalid = await create(first.key, { name: '' }, idempotencyKey);
    expect(invalid.status).toBe(422);
    expect((await create(first.key, { name: '' }, idempotencyKey)).headers.get('idempotent-replayed')).toBe('true');
    expect((await create(second.key, { name: 'other org, same key' }, idempotencyKey)).status).toBe(201);
  });

  it('lets exactly one of several concurrent requests with one key create the connection', async () => {
    const tenant = await service.newTenant();
    const idempotencyKey = randomUUID();
    const responses = await Promise.all(Array.from({ length: 5 }, () => create(tenant.key, { name: 'raced' }, idempotencyKey)));
    for (const response of responses) expect([201, 409]).toContain(response.status);
    const created = responses.filter((response) => response.status === 201);
    expect(new Set(created.map((response) => response.body.id)).size).toBe(1);
    for (const response of responses.filter((r) => r.status === 409)) {
      expect(response.body.code).toBe('idempotency_request_in_progress');
      expect(response.headers.get('retry-after')).toBe('1');
    }
    expect((await service.call('/v1/connections', { key: tenant.key })).body.data).toHaveLength(1);
  });

  it('frees a key whose first request was left in progress by a process that died', async () => {
    const tenant = await service.newTenant();
    const idempotencyKey = randomUUID();
    const abandonedAt = new Date(Date.now() - 120_000);
    await service.database.db.insert(idempotencyKeys).values({
      organizationId: tenant.organizationId,
      key: idempotencyKey,
      requestHash: 'from a request that never finished',
      state: 'in_progress',
      createdAt: abandonedAt,
      expiresAt: new Date(abandonedAt.getTime() + 24 * 3600_000),
    });
    const retry = await create(tenant.key, { name: 'after a crash' }, idempotencyKey);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect((await create(tenant.key, { name: 'after a crash' }, idempotencyKey)).headers.get('idempotent-replayed')).toBe('true');
  });

  it('rejects a malformed key', async () => {
    const tenant = await service.newTenant();
    const response = await create(tenant.key, { name: 'x' }, 'has spaces in it');
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_idempotency_key');
  });

  it('is documented on every POST in the OpenAPI document', async () => {
    const { body: document } = await service.call('/openapi.json');
    const parameters = document.paths['/v1/connections'].post.parameters;
    expect(parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'header', name: 'idempotency-key' })]));
  });
});
