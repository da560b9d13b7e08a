import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let publicOnly: TestService;
beforeAll(async () => {
  [service, publicOnly] = await Promise.all([startTestService(), startTestService({ ALLOW_PRIVATE_TARGETS: 'false' })]);
});
afterAll(() => Promise.all([service.stop(), publicOnly.stop()]));

const SECRET = /^sbx_whsec_[A-Za-z0-9_-]{43}$/;
const MASKED = /^sbx_whsec_…[A-Za-z0-9_-]{4}$/;

describe('connections', () => {
  it('creates a connection on the organization default, then shows it', async () => {
    const tenant = await service.newTenant();
    const created = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'Riverside EHR' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Riverside EHR', environment: 'sandbox', webhook_url: null, webhook_secret: null });
    expect(created.body.id).toMatch(/^conn_[0-9a-z]{26}$/);
    expect(new Date(created.body.created_at).toISOString()).toBe(created.body.created_at);

    const read = await service.call(`/v1/connections/${created.body.id}`, { key: tenant.key });
    expect(read.body).toEqual(created.body);
  });

  it('issues an own secret once, then masks it; rotation issues another; null drops it', async () => {
    const tenant = await service.newTenant();
    const created = await service.call('/v1/connections', {
      key: tenant.key,
      method: 'POST',
      body: { name: 'Lab feed', environment: 'staging', webhook_url: 'http://localhost:4010/hook', rotate_secret: true },
    });
    expect(created.status).toBe(201);
    expect(created.body.webhook_secret).toMatch(SECRET);
    const path = `/v1/connections/${created.body.id}`;

    const read = await service.call(path, { key: tenant.key });
    expect(read.body.webhook_secret).toMatch(MASKED);
    expect(read.body.webhook_secret.slice(-4)).toBe(created.body.webhook_secret.slice(-4));

    const rotated = await service.call(path, { key: tenant.key, method: 'PATCH', body: { rotate_secret: true } });
    expect(rotated.body.webhook_secret).toMatch(SECRET);
    expect(rotated.body.webhook_secret).not.toBe(created.body.webhook_secret);

    const dropped = await service.call(path, {
      key: tenant.key,
      method: 'PATCH',
      body: { webhook_secret: null, webhook_url: null, name: 'Lab feed 2' },
    });
    expect(dropped.status).toBe(200);
    expect(dropped.body).toMatchObject({ name: 'Lab feed 2', environment: 'staging', webhook_url: null, webhook_secret: null });
    expect(Date.parse(dropped.body.updated_at)).toBeGreaterThan(Date.parse(created.body.updated_at));
  });

  it('pages through connections newest first with next_cursor', async () => {
    const tenant = await service.newTenant();
    const names = ['one', 'two', 'three', 'four', 'five'];
    for (const name of names) {
      expect((await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name } })).status).toBe(201);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
      const page = await service.call(`/v1/connections${query}`, { key: tenant.key });
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((connection: { name: string }) => connection.name));
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...names].reverse());
  });

  it('rejects a bad cursor and an out-of-range limit with problem bodies', async () => {
    const tenant = await service.newTenant();
    const badCursor = await service.call('/v1/connections?cursor=not-a-cursor', { key: tenant.key });
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.code).toBe('invalid_cursor');
    const badLimit = await service.call('/v1/connections?limit=500', { key: tenant.key });
    expect(badLimit.status).toBe(422);
    expect(badLimit.body.errors).toEqual([{ path: 'query.limit', message: 'limit must be at most 200' }]);
  });

  it('lists every bad field of a create in one validation problem', async () => {
    const tenant = await service.newTenant();
    const response = await service.call('/v1/connections', {
      key: tenant.key,
      method: 'POST',
      body: { name: '', environment: 'prod', webhook_url: 'ftp://files.example/x', colour: 'blue' },
    });
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ code: 'validation_failed', status: 422, title: 'Unprocessable Content' });
    expect(response.body.errors).toEqual(
      expect.arrayContaining([
        { path: 'body.name', message: 'name must not be empty' },
        { path: 'body.environment', message: 'environment must be one of sandbox, development, staging, production' },
        { path: 'body.webhook_url', message: 'webhook_url must be an absolute http or https URL' },
        { path: 'body.colour', message: 'is not a field of this request' },
      ]),
    );
    expect(response.body.errors).toHaveLength(4);
    expect(response.body.detail).toContain('body.name');
  });

  it('answers malformed JSON with 400, a non-JSON body with 415, an oversized body with 413', async () => {
    const tenant = await service.newTenant();
    const malformed = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: '{"name": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('malformed_json');

    const form = await service.call('/v1/connections', {
      key: tenant.key,
      method: 'POST',
      body: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    expect(form.body.code).toBe('unsupported_media_type');

    const huge = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'x'.repeat(1_100_000) } });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe('body_too_large');
    expect((await service.call('/v1/connections', { key: tenant.key })).body.data).toEqual([]);
  });

  it('refuses private webhook targets unless the operator allows them', async () => {
    const tenant = await publicOnly.newTenant();
    for (const url of [
      'http://127.0.0.1:9000/hook',
      'http://localhost/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://10.1.2.3/hook',
      'http://[::1]/hook',
    ]) {
      const response = await publicOnly.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'x', webhook_url: url } });
      expect(response.status, url).toBe(422);
      expect(response.body.code).toBe('webhook_url_not_allowed');
      expect(response.body.errors[0].path).toBe('body.webhook_url');
    }
    const publicTarget = await publicOnly.call('/v1/connections', {
      key: tenant.key,
      method: 'POST',
      body: { name: 'x', webhook_url: 'https://93.184.215.14/hook' },
    });
    expect(publicTarget.status).toBe(201);
    expect((await publicOnly.call('/v1/connections', { key: tenant.key })).body.data).toHaveLength(1);
  });
});
