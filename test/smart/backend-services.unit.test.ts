import { exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { ORGANIZATION_RESOURCE_PERMISSIONS } from '../../fhir/organization-resources';
import { algorithmsOf, type ClientJwk, jwksProblems, MAX_JWKS_KEYS } from '../../smart/client-jwks';
import { systemScope } from '../../smart/scopes';

const options = { resourceTypes: ['Patient', 'Observation', 'Condition'], canFilter: () => true, registered: null };

describe('system scopes for client_credentials', () => {
  it('grants create of Claim for the PAS operations, and nothing beyond what the organization types serve', () => {
    const withClaims = { ...options, organizationTypes: ORGANIZATION_RESOURCE_PERMISSIONS };
    expect(systemScope('system/Claim.c', withClaims)).toEqual({ scope: 'system/Claim.c' });
    expect(systemScope('system/Claim.cruds', withClaims)).toEqual({ scope: 'system/Claim.crs' });
    expect(systemScope('system/Claim.c', { ...withClaims, registered: 'system/*.rs' })).toMatchObject({
      reason: expect.stringContaining('registered'),
    });
  });

  it('grants system read and search in v1 and v2 syntax, leaving writes out', () => {
    expect(systemScope('system/Patient.read system/Observation.rs', options)).toEqual({ scope: 'system/Patient.read system/Observation.rs' });
    expect(systemScope('system/*.cruds system/Condition.write system/Condition.rs', options)).toEqual({
      refused: 'system/Condition.write',
      reason: expect.stringContaining('read and search'),
    });
    expect(systemScope('system/*.cruds', options)).toEqual({ scope: 'system/*.rs' });
  });

  it('refuses whole a request with a patient- or user-level scope, an unserved type, or beyond the registration', () => {
    for (const scope of ['patient/Patient.rs', 'user/Patient.rs', 'launch', 'openid', 'offline_access']) {
      expect(systemScope(`system/Patient.rs ${scope}`, options)).toMatchObject({ refused: scope, reason: expect.stringContaining('system-level') });
    }
    expect(systemScope('system/Claim.rs', options)).toMatchObject({ refused: 'system/Claim.rs' });
    expect(systemScope('system/Observation.rs', { ...options, registered: 'system/Patient.rs' })).toMatchObject({
      reason: expect.stringContaining('registered'),
    });
    expect(systemScope('system/Patient.s', { ...options, registered: 'system/*.rs' })).toEqual({ scope: 'system/Patient.s' });
  });
});

describe('system scopes on an organization’s own types (Subscription)', () => {
  const withSubscriptions = { ...options, organizationTypes: { Subscription: ['create', 'read', 'delete', 'search'] as const } };

  it('grants the permissions served for the type, in v2 syntax, and leaves update out', () => {
    expect(systemScope('system/Subscription.*', withSubscriptions)).toEqual({ scope: 'system/Subscription.crds' });
    expect(systemScope('system/Subscription.write system/Subscription.read', withSubscriptions)).toEqual({
      scope: 'system/Subscription.cd system/Subscription.read',
    });
    expect(systemScope('system/Subscription.rs', withSubscriptions)).toEqual({ scope: 'system/Subscription.rs' });
    // `*` stays read and search: a wildcard grants no create or delete anywhere.
    expect(systemScope('system/*.cruds', withSubscriptions)).toEqual({ scope: 'system/*.rs' });
  });

  it('refuses a scope that asks only what is not served, a filter, or more than the registration', () => {
    expect(systemScope('system/Subscription.u', withSubscriptions)).toMatchObject({
      refused: 'system/Subscription.u',
      reason: expect.stringContaining('of Subscription'),
    });
    expect(systemScope('system/Subscription.rs?status=active', withSubscriptions)).toMatchObject({ refused: 'system/Subscription.rs?status=active' });
    expect(systemScope('system/Subscription.*', { ...withSubscriptions, registered: 'system/Subscription.rs' })).toMatchObject({
      reason: expect.stringContaining('registered'),
    });
    expect(systemScope('system/Subscription.*', options)).toMatchObject({ refused: 'system/Subscription.*' });
  });
});

describe('client JWK Sets', () => {
  it('accepts public RSA and EC keys with a kid, and says which algorithms each verifies', async () => {
    const rsa = { ...(await exportJWK((await generateKeyPair('RS384', { extractable: true })).publicKey)), kid: 'rsa' };
    const ec = { ...(await exportJWK((await generateKeyPair('ES384', { extractable: true })).publicKey)), kid: 'ec', alg: 'ES384' };
    expect(jwksProblems({ keys: [rsa, ec] })).toEqual([]);
    expect(algorithmsOf(rsa as ClientJwk)).toEqual(['RS384', 'RS256']);
    expect(algorithmsOf(ec as ClientJwk)).toEqual(['ES384']);
  });

  it('refuses private members, symmetric and unknown keys, small RSA moduli, missing kids and too many keys', async () => {
    const pair = await generateKeyPair('RS384', { extractable: true });
    const privateJwk = { ...(await exportJWK(pair.privateKey)), kid: 'leaked' };
    const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'ok' };
    const messagesOf = (jwks: unknown) => jwksProblems(jwks).map((problem) => problem.message);
    expect(messagesOf({ keys: [privateJwk] })).toEqual([expect.stringContaining('private key material (d, p, q, dp, dq, qi)')]);
    expect(messagesOf({ keys: [{ kty: 'oct', kid: 'k', k: 'c2VjcmV0' }] })).toEqual([expect.stringContaining('(k)')]);
    expect(messagesOf({ keys: [{ kty: 'OKP', kid: 'k', crv: 'Ed25519', x: 'AA' }] })).toEqual([expect.stringContaining('kty must be RSA or EC')]);
    expect(messagesOf({ keys: [{ ...publicJwk, n: Buffer.alloc(128, 1).toString('base64url') }] })).toEqual([expect.stringContaining('2048 bits')]);
    expect(messagesOf({ keys: [{ ...publicJwk, kid: undefined }] })).toEqual([expect.stringContaining('kid is required')]);
    expect(messagesOf({ keys: [{ ...publicJwk, alg: 'HS256' }] })).toEqual([expect.stringContaining('alg must be one of')]);
    expect(messagesOf({ keys: [{ ...publicJwk, alg: 'ES384' }] })).toEqual([expect.stringContaining('does not fit')]);
    expect(messagesOf({ keys: [{ ...publicJwk, use: 'enc' }] })).toEqual([expect.stringContaining('use')]);
    expect(messagesOf({ keys: Array.from({ length: MAX_JWKS_KEYS + 1 }, () => publicJwk) })).toEqual([`at most ${MAX_JWKS_KEYS} keys`]);
    expect(messagesOf({ keys: [] })).toEqual(['the JWK Set holds no key']);
    expect(messagesOf({ keys: [{ ...publicJwk, padding: 'x'.repeat(70_000) }] })).toEqual([expect.stringContaining('at most')]);
    expect(messagesOf([publicJwk])).toEqual([expect.stringContaining('keys array')]);
  });
});
