import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runToEnd } from '../support/processes';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

const keys = (...args: string[]) => runToEnd('bin/keys.ts', args, { DATABASE_URL: inject('databaseUrl') });

describe('npm run keys', () => {
  it('creates an organization and a key that works once, lists it by hint only, and revokes it', async () => {
    const created = await keys('create', '--org', 'Acme Health (synthetic)', '--name', 'ci');
    expect(created.code).toBe(0);
    const key = created.output.match(/API key +(sk_sandbox_[A-Za-z0-9_-]{43})/)![1]!;
    const keyId = created.output.match(/Key id +(key_\w+)/)![1]!;
    const organizationId = created.output.match(/Organization (org_\w+)/)![1]!;
    expect(created.output).toContain('not shown again');

    expect((await service.call('/v1/connections', { key })).body).toEqual({ data: [], next_cursor: null });

    const second = await keys('create', '--org-id', organizationId);
    const secondKey = second.output.match(/API key +(sk_sandbox_\S+)/)![1]!;
    await service.call('/v1/connections', { key, method: 'POST', body: { name: 'shared by both keys' } });
    expect((await service.call('/v1/connections', { key: secondKey })).body.data).toHaveLength(1);

    const listed = await keys('list');
    expect(listed.code).toBe(0);
    expect(listed.output).toContain(keyId);
    expect(listed.output).toContain(`${key.slice(0, 15)}…${key.slice(-4)}`);
    expect(listed.output).not.toContain(key);

    const revoked = await keys('revoke', keyId);
    expect(revoked.code).toBe(0);
    expect((await service.call('/v1/connections', { key })).status).toBe(401);
    expect((await service.call('/v1/connections', { key: secondKey })).status).toBe(200);
  });

  it('explains what is wrong with a bad command', async () => {
    const noOrg = await keys('create');
    expect(noOrg.code).toBe(1);
    expect(noOrg.output).toContain('create needs --org');
    const unknownOrg = await keys('create', '--org-id', 'org_doesnotexist');
    expect(unknownOrg.code).toBe(1);
    expect(unknownOrg.output).toContain('No organization org_doesnotexist');
    const unknownKey = await keys('revoke', 'key_doesnotexist');
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.output).toContain('No active key matches key_doesnotexist');
  });
});
