import { describe, expect, it } from 'vitest';
import {
  type GrantOptions,
  grantableScopes,
  grantContext,
  narrowedScope,
  needsPatientChoice,
  parseResourceScope,
  permission,
  unevaluableFilters,
  withLaunchContext,
} from '../../smart/scopes';

const options: GrantOptions = {
  resourceTypes: ['Patient', 'Observation', 'Condition'],
  canFilter: (type, filter) => type === 'Observation' && filter.every(([name]) => name === 'category'),
  registered: null,
  launchKind: 'standalone',
};

describe('SMART scopes', () => {
  it('reads v1 and v2 resource scopes, with a v2 granular filter', () => {
    expect(parseResourceScope('patient/Observation.read')).toMatchObject({
      context: 'patient',
      resourceType: 'Observation',
      read: true,
      search: true,
      syntax: 'v1',
    });
    expect(parseResourceScope('patient/Observation.rs?category=laboratory')).toMatchObject({
      read: true,
      search: true,
      filter: [['category', 'laboratory']],
      syntax: 'v2',
    });
    expect(parseResourceScope('patient/Observation.write')).toMatchObject({ create: true, read: false, update: true, delete: true, search: false });
    expect(parseResourceScope('patient/Observation.*')).toMatchObject({ create: true, read: true, update: true, delete: true, search: true });
    expect(parseResourceScope('patient/Observation.cruds')).toMatchObject({ create: true, read: true, update: true, delete: true, search: true });
    expect(parseResourceScope('launch/patient')).toBeNull();
  });

  it('grants only patient-level reads of served types, filters it can evaluate, and launch only for EHR launches', () => {
    const granted = grantableScopes(
      'launch openid fhirUser patient/Observation.rs?category=laboratory patient/Condition.rs patient/Claim.rs user/Patient.rs patient/Patient.c patient/Condition.rs?code=E11 unknown',
      options,
    );
    expect(granted).toEqual(['openid', 'fhirUser', 'patient/Observation.rs?category=laboratory', 'patient/Condition.rs']);
    expect(grantableScopes('launch patient/Patient.rs', { ...options, launchKind: 'ehr' })).toEqual(['launch', 'patient/Patient.rs']);
  });

  it('never grants beyond what the client registered', () => {
    const registered = { ...options, registered: 'openid patient/Observation.rs' };
    expect(grantableScopes('openid fhirUser patient/Observation.rs?category=laboratory patient/Condition.rs', registered)).toEqual([
      'openid',
      'patient/Observation.rs?category=laboratory',
    ]);
  });

  it('grants user-level scopes only where the registration names them, with what the organization types serve, and then no patient-level ones', () => {
    const organizationTypes = { Claim: ['create', 'read', 'search'], Subscription: ['create', 'read', 'delete', 'search'] } as const;
    const provider: GrantOptions = {
      ...options,
      registered: 'openid fhirUser patient/*.rs user/Claim.c user/Subscription.* user/*.rs',
      organizationTypes,
    };
    const granted = grantableScopes(
      'openid fhirUser user/Claim.write user/Subscription.* user/Observation.rs patient/Observation.rs user/Patient.c user/Condition.cruds',
      provider,
    );
    expect(granted).toEqual(['openid', 'fhirUser', 'user/Claim.c', 'user/Subscription.crds', 'user/Observation.rs', 'user/Condition.rs']);
    expect(grantContext('app', granted)).toBe('user');
    // Registered without user-level scopes (or without a registered scope at all): none is granted.
    for (const registered of [null, 'openid patient/*.rs user/Observation.rs']) {
      expect(grantableScopes('user/Claim.c patient/Observation.rs', { ...provider, registered }), String(registered)).toEqual([
        'patient/Observation.rs',
      ]);
    }
    // A patient-level grant never creates Claims or reaches Subscriptions, whatever it asks.
    expect(grantableScopes('patient/Claim.c patient/Subscription.rs patient/Observation.rs', { ...options, organizationTypes })).toEqual([
      'patient/Observation.rs',
    ]);
    expect(grantContext('app', ['openid', 'patient/Observation.rs'])).toBe('patient');
    expect(grantContext('system', 'system/Claim.c')).toBe('system');
    expect(permission('user/Claim.c user/Subscription.crds', 'user', 'Claim', 'create')).toEqual({ allowed: true, filters: 'all' });
    expect(permission('user/Claim.c', 'patient', 'Claim', 'create')).toEqual({ allowed: false });
  });

  it('settles launch context scopes once the context is known', () => {
    const scopes = ['launch/patient', 'launch/encounter', 'openid'];
    expect(withLaunchContext(scopes, { patientId: 'syn-pat-0001', encounterId: null })).toEqual(['launch/patient', 'openid']);
    expect(needsPatientChoice(['openid'])).toBe(false);
    expect(needsPatientChoice(['patient/Observation.rs'])).toBe(true);
    expect(needsPatientChoice(['fhirUser'])).toBe(true);
    // A user-level grant's user is a practitioner: a patient is chosen only when launch/patient asks for one.
    expect(needsPatientChoice(['openid', 'fhirUser', 'user/Claim.c'])).toBe(false);
    expect(needsPatientChoice(['launch/patient', 'user/Claim.c'])).toBe(true);
  });

  it('allows a narrower scope at refresh, never a wider one, in either syntax', () => {
    const granted = ['openid', 'offline_access', 'patient/Observation.rs', 'patient/Condition.read'];
    const narrow = (requested: string) => narrowedScope(requested.split(' '), granted, options.canFilter);
    expect(narrow('patient/Observation.rs?category=laboratory offline_access')).toEqual({
      scope: 'patient/Observation.rs?category=laboratory offline_access',
    });
    expect(narrow('patient/Observation.r patient/Condition.s patient/Condition.rs patient/Observation.read')).toEqual({
      scope: 'patient/Observation.r patient/Condition.s patient/Condition.rs patient/Observation.read',
    });
    for (const wider of [
      'patient/Observation.write',
      'patient/Observation.cruds',
      'patient/Observation.*',
      'patient/Observation.rsc',
      'patient/Condition.cruds',
      'patient/*.rs',
      'patient/*.read',
      'user/Observation.rs',
      'system/Observation.rs',
      'patient/Patient.rs',
      'launch/patient',
      'fhirUser',
      'anything-else',
    ]) {
      expect(narrow(wider), wider).toMatchObject({ refused: wider });
    }
    const filtered = ['patient/Observation.rs?category=laboratory'];
    expect(narrowedScope(['patient/Observation.rs'], filtered, options.canFilter)).toMatchObject({ refused: 'patient/Observation.rs' });
    expect(narrowedScope(['patient/Observation.rs?category=vital-signs'], filtered, options.canFilter)).toMatchObject({
      refused: expect.any(String),
    });
    expect(narrowedScope(['patient/Observation.r?category=laboratory'], filtered, options.canFilter)).toEqual({
      scope: 'patient/Observation.r?category=laboratory',
    });
  });

  it('names the filters it cannot evaluate, so they are refused where they are asked for', () => {
    expect(
      unevaluableFilters(
        'patient/Observation.rs?foo=bar patient/Observation.rs?category=laboratory patient/*.rs?category=x openid',
        options.canFilter,
      ),
    ).toEqual(['patient/Observation.rs?foo=bar', 'patient/*.rs?category=x']);
    expect(narrowedScope(['patient/Observation.rs?foo=bar'], ['patient/Observation.rs'], options.canFilter)).toMatchObject({
      reason: expect.stringContaining('cannot be evaluated'),
    });
  });

  it('answers what a token may read: nothing, everything, or what matches its filters', () => {
    expect(permission('patient/Observation.rs', 'patient', 'Condition', 'read')).toEqual({ allowed: false });
    expect(permission('patient/*.rs', 'patient', 'Condition', 'search')).toEqual({ allowed: true, filters: 'all' });
    expect(
      permission('patient/Observation.rs?category=laboratory patient/Observation.rs?category=vital-signs', 'patient', 'Observation', 'search'),
    ).toEqual({
      allowed: true,
      filters: [[['category', 'laboratory']], [['category', 'vital-signs']]],
    });
  });
});
