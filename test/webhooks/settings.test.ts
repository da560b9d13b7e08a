import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

const SECRET = /^sbx_whsec_[A-Za-z0-9_-]{43}$/;
const MASKED = /^sbx_whsec_…[A-Za-z0-9_-]{4}$/;

describe('organization webhook settings', () => {
  it('starts with a masked secret and no URL; rotation answers the new secret once', async () => {
    const tenant = await service.newTenant();
    const initial = await service.call('/v1/settings/webhook', { key: tenant.key });
    expect(initial.status).toBe(200);
    expect(initial.body.webhook_url).toBeNull();
    expect(initial.body.webhook_secret).toMatch(MASKED);

    const updated = await service.call('/v1/settings/webhook', {
      key: tenant.key,
      method: 'PATCH',
      body: { webhook_url: 'http://localhost:3004/webhooks' },
    });
    expect(updated.body).toMatchObject({ webhook_url: 'http://localhost:3004/webhooks', webhook_secret: initial.body.webhook_secret });

    const rotated = await service.call('/v1/settings/webhook', { key: tenant.key, method: 'PATCH', body: { rotate_secret: true } });
    expect(rotated.body.webhook_secret).toMatch(SECRET);
    expect(rotated.body.webhook_secret.slice(-4)).not.toBe(initial.body.webhook_secret.slice(-4));
    const after = await service.call('/v1/settings/webhook', { key: tenant.key });
    expect(after.body.webhook_secret).toBe(`sbx_whsec_…${rotated.body.webhook_secret.slice(-4)}`);
  });

  it('validates the settings body', async () => {
    const tenant = await service.newTenant();
    const response = await service.call('/v1/settings/webhook', {
      key: tenant.key,
      method: 'PATCH',
      body: { webhook_url: 42, rotate_secret: 'yes' },
    });
    expect(response.status).toBe(422);
    expect(response.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['body.rotate_secret', 'body.webhook_url']);
  });
});
