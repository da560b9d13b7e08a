/**
 * SMART App Launch scopes, v1 (`patient/Observation.read`) and v2 (`patient/Observation.rs`, with
 * an optional granular filter `?category=…`). An app launch is granted patient-level reads and
 * searches, or user-level ones (and the organization's own types: `user/Claim.c`,
 * `user/Subscription.crds`) when its registration names them; what it cannot honour is left out of
 * the grant, and the granted scope string says exactly what the token allows.
 */

export type ScopeContext = 'patient' | 'user' | 'system';

/** SMART v2 permissions in their canonical order (`c r u d s`); v1 `.read` is `rs`, `.write` is `cud`, `.*` all five. */
const PERMISSIONS = ['create', 'read', 'update', 'delete', 'search'] as const;
export type PermissionName = (typeof PERMISSIONS)[number];
/** The interaction a request makes, named by the permission it needs. */
export type Interaction = PermissionName;

/** Types an organization keeps its own resources of (fhir/organization-resources.ts), with the permissions their interactions take. */
export type OrganizationTypes = Readonly<Record<string, readonly PermissionName[]>>;

export interface ResourceScope extends Record<PermissionName, boolean> {
  context: ScopeContext;
  /** A resource type, or `*` for every type. */
  resourceType: string;
  /** v2 granular scopes: search parameters a resource must match, e.g. `[['category', 'laboratory']]`. */
  filter: [string, string][];
  syntax: 'v1' | 'v2';
}

/** The scopes that are not about resources, each granted only when it means something. */
export const CONTEXT_SCOPES = ['launch', 'launch/patient', 'launch/encounter', 'openid', 'fhirUser', 'offline_access', 'online_access'] as const;

// Anchored, with no nested or adjacent unbounded repetition: linear on any input.
const V1_SCOPE = /^(patient|user|system)\/(\*|[A-Z][A-Za-z]+)\.(read|write|\*)$/;
const V2_SCOPE = /^(patient|user|system)\/(\*|[A-Z][A-Za-z]+)\.(c?r?u?d?s?)(?:\?(.+))?$/;

export function parseResourceScope(text: string): ResourceScope | null {
  const v1 = V1_SCOPE.exec(text);
  if (v1) {
    const reads = v1[3] !== 'write';
    const writes = v1[3] !== 'read';
    return {
      context: v1[1] as ScopeContext,
      resourceType: v1[2]!,
      create: writes,
      read: reads,
      update: writes,
      delete: writes,
      search: reads,
      filter: [],
      syntax: 'v1',
    };
  }
  const v2 = V2_SCOPE.exec(text);
  if (v2?.[3]) {
    const letters = v2[3];
    const filter = v2[4] ? [...new URLSearchParams(v2[4]).entries()] : [];
    return {
      context: v2[1] as ScopeContext,
      resourceType: v2[2]!,
      create: letters.includes('c'),
      read: letters.includes('r'),
      update: letters.includes('u'),
      delete: letters.includes('d'),
      search: letters.includes('s'),
      filter,
      syntax: 'v2',
    };
  }
  return null;
}

function formatResourceScope(scope: ResourceScope): string {
  const prefix = `${scope.context}/${scope.resourceType}`;
  if (scope.syntax === 'v1' && scope.read && scope.search && !scope.create && !scope.update && !scope.delete) return `${prefix}.read`;
  const permissions = PERMISSIONS.filter((name) => scope[name])
    .map((name) => name[0])
    .join('');
  const filter = scope.filter.length > 0 ? `?${new URLSearchParams(scope.filter).toString()}` : '';
  return `${prefix}.${permissions}${filter}`;
}

export function splitScope(scope: string | null | undefined): string[] {
  return [...new Set((scope ?? '').split(' ').filter((part) => part.length > 0))];
}

export interface GrantOptions {
  /** Resource types the FHIR endpoint serves. */
  resourceTypes: readonly string[];
  /** Whether a granular filter can be evaluated for the type (its parameters are searchable). */
  canFilter(resourceType: string, filter: [string, string][]): boolean;
  /** The client's registered scope: nothing outside it is granted. Null: no limit, except that user-level scopes are granted only where it names them. */
  registered: string | null;
  launchKind: 'ehr' | 'standalone';
  /** Types an organization keeps its own resources of, with the permissions their interactions take. */
  organizationTypes?: OrganizationTypes;
}

/**
 * What can be granted of a requested scope string, normalised: patient-level read and search
 * (`.write`, `c`, `u`, `d` are not served on the synthetic world), types this endpoint serves,
 * filters it can evaluate, and nothing beyond the client's registration. User-level scopes (a
 * provider-side app acting as its user) are granted only when the registration names them, with the
 * permissions served on the organization's own types; a grant is then user-level, and patient-level
 * scopes asked alongside are left out (one grant, one context: `grantContext`). `launch/patient`
 * and `launch/encounter` are decided later, once the context is known (see `withLaunchContext`).
 */
export function grantableScopes(requested: string, options: GrantOptions): string[] {
  const registered = options.registered === null ? null : splitScope(options.registered);
  const registeredResources = (registered ?? []).map(parseResourceScope).filter((scope): scope is ResourceScope => scope !== null);
  const granted: string[] = [];
  for (const text of splitScope(requested)) {
    const resource = parseResourceScope(text);
    if (resource) {
      const context = resource.context === 'user' && registered !== null ? 'user' : 'patient';
      const normalised = servableScope(resource, context, options);
      if (normalised && (registered === null || registeredResources.some((allowed) => covers(allowed, normalised)))) {
        granted.push(formatResourceScope(normalised));
      }
      continue;
    }
    if (!(CONTEXT_SCOPES as readonly string[]).includes(text)) continue;
    if (text === 'launch' && options.launchKind !== 'ehr') continue;
    if (registered !== null && !registered.includes(text)) continue;
    granted.push(text);
  }
  const userLevel = grantContext('app', granted) === 'user';
  return [...new Set(granted.filter((scope) => !userLevel || parseResourceScope(scope)?.context !== 'patient'))];
}

/**
 * Whose data a grant's scopes reach: `system` for a client_credentials grant; for an app launch,
 * `user` when it holds a user-level resource scope (grantableScopes never mixes them with
 * patient-level ones), else `patient`.
 */
export function grantContext(grant: 'system' | 'app', scopes: string | readonly string[]): ScopeContext {
  if (grant === 'system') return 'system';
  const texts = typeof scopes === 'string' ? splitScope(scopes) : scopes;
  return texts.some((text) => parseResourceScope(text)?.context === 'user') ? 'user' : 'patient';
}

/**
 * A scope of the context as this endpoint can serve it: at user or system level on an
 * organization's own types, the permissions their interactions take (no filter); else read and
 * search of a served type of the synthetic world, with a filter it can evaluate. Null when nothing
 * of it can be served.
 */
function servableScope(
  scope: ResourceScope,
  context: ScopeContext,
  options: Pick<GrantOptions, 'resourceTypes' | 'canFilter' | 'organizationTypes'>,
): ResourceScope | null {
  if (scope.context !== context) return null;
  const organizationTypes = context === 'patient' ? {} : (options.organizationTypes ?? {});
  if (Object.hasOwn(organizationTypes, scope.resourceType)) return organizationScope(scope, organizationTypes[scope.resourceType]!);
  if (!(scope.read || scope.search)) return null;
  if (scope.resourceType !== '*' && !options.resourceTypes.includes(scope.resourceType)) return null;
  if (scope.filter.length > 0 && (scope.resourceType === '*' || !options.canFilter(scope.resourceType, scope.filter))) return null;
  return { ...scope, create: false, update: false, delete: false };
}

/**
 * What a client_credentials grant gives (SMART Backend Services): system-level read and search, on
 * types this endpoint serves, with filters it can evaluate, and on an organization's own types
 * (`organizationTypes`: Subscription) the permissions their interactions take, within the client's
 * registration. It is all or nothing: a scope that cannot be granted as asked (a patient- or
 * user-level scope, a type not served, a scope beyond the registration) refuses the request and says
 * which and why, since no person is there to see a narrowed grant. Permissions nothing here serves
 * (writes on the synthetic world, `update` of a Subscription) are left out of what is granted.
 */
export function systemScope(
  requested: string,
  options: Pick<GrantOptions, 'resourceTypes' | 'canFilter' | 'registered'> & { organizationTypes?: OrganizationTypes },
): { scope: string } | { refused: string; reason: string } {
  const registered = splitScope(options.registered)
    .map(parseResourceScope)
    .filter((scope): scope is ResourceScope => scope !== null);
  const organizationTypes = options.organizationTypes ?? {};
  const granted: string[] = [];
  for (const text of splitScope(requested)) {
    const resource = parseResourceScope(text);
    if (resource?.context !== 'system') {
      return { refused: text, reason: 'client_credentials grants system-level resource scopes only (system/Patient.rs, system/*.read)' };
    }
    const servable = servableScope(resource, 'system', { ...options, organizationTypes });
    if (!servable) {
      const organizationServed = Object.entries(organizationTypes).map(([type, permissions]) => `${permissions.join(', ')} of ${type}`);
      return {
        refused: text,
        reason:
          resource.filter.length > 0
            ? 'its filter cannot be evaluated by this FHIR endpoint'
            : `this FHIR endpoint serves read and search of ${options.resourceTypes.join(', ')}${organizationServed.length > 0 ? `; and ${organizationServed.join('; ')}` : ''}`,
      };
    }
    if (options.registered !== null && !registered.some((allowed) => covers(allowed, servable))) {
      return { refused: text, reason: `it is outside the scope registered for this client (${options.registered})` };
    }
    granted.push(formatResourceScope(servable));
  }
  return { scope: [...new Set(granted)].join(' ') };
}

/** A scope on an organization's own type, narrowed to the permissions served for it; null when it asks none of them, or filters. */
function organizationScope(scope: ResourceScope, served: readonly PermissionName[]): ResourceScope | null {
  const kept = PERMISSIONS.filter((name) => scope[name] && served.includes(name));
  if (kept.length === 0 || scope.filter.length > 0) return null;
  return { ...scope, ...(Object.fromEntries(PERMISSIONS.map((name) => [name, kept.includes(name)])) as Record<PermissionName, boolean>) };
}

/**
 * The requested scopes whose granular filter this endpoint cannot evaluate (an unknown parameter,
 * an unreadable value, or a filter on `*`). Granting such a scope without its filter would widen
 * it, so it is refused where it is asked for rather than failing every read later.
 */
export function unevaluableFilters(requested: string, canFilter: GrantOptions['canFilter']): string[] {
  return splitScope(requested).filter((text) => {
    const resource = parseResourceScope(text);
    return resource !== null && resource.filter.length > 0 && (resource.resourceType === '*' || !canFilter(resource.resourceType, resource.filter));
  });
}

/**
 * Whether `outer` allows everything `inner` does: the same context, the same type or `*`, no
 * permission `outer` lacks, and every condition of `outer`'s filter also in `inner`'s (a filter
 * with more conditions matches fewer resources).
 */
function covers(outer: ResourceScope, inner: ResourceScope): boolean {
  if (outer.context !== inner.context) return false;
  if (outer.resourceType !== '*' && outer.resourceType !== inner.resourceType) return false;
  if (PERMISSIONS.some((name) => inner[name] && !outer[name])) return false;
  return outer.filter.every(([name, value]) => inner.filter.some(([innerName, innerValue]) => innerName === name && innerValue === value));
}

/**
 * Settles the context scopes once the launch context is known: `launch/patient` and
 * `launch/encounter` only when that context exists.
 */
export function withLaunchContext(scopes: string[], context: { patientId: string | null; encounterId: string | null }): string[] {
  return scopes.filter((scope) => {
    if (scope === 'launch/patient') return context.patientId !== null;
    if (scope === 'launch/encounter') return context.encounterId !== null;
    return true;
  });
}

/**
 * Whether a standalone launch needs a patient chosen: patient context, patient data or, for a
 * patient-level grant, an identity (a user-level grant's user is a practitioner, not a patient).
 */
export function needsPatientChoice(scopes: string[]): boolean {
  const patientIdentity = grantContext('app', scopes) === 'patient' && scopes.includes('fhirUser');
  return patientIdentity || scopes.some((scope) => scope === 'launch/patient' || scope.startsWith('patient/'));
}

/**
 * The scope a refresh may be granted (RFC 6749 §6, SMART App Launch 2.x): each scope asked for
 * must be one of the grant's context scopes or a resource scope the grant covers, with a filter
 * this endpoint can evaluate; the answer is normalised as at authorization. A refusal says which
 * scope and why, and spends nothing.
 */
export function narrowedScope(
  requested: string[],
  granted: string[],
  canFilter: GrantOptions['canFilter'],
): { scope: string } | { refused: string; reason: string } {
  const grantedResources = granted.map(parseResourceScope).filter((scope): scope is ResourceScope => scope !== null);
  const narrowed: string[] = [];
  for (const text of requested) {
    const resource = parseResourceScope(text);
    if (resource === null) {
      if (!granted.includes(text)) return { refused: text, reason: 'it is not part of the original grant' };
      narrowed.push(text);
      continue;
    }
    if (!grantedResources.some((outer) => covers(outer, resource))) return { refused: text, reason: 'it is wider than the original grant' };
    if (unevaluableFilters(text, canFilter).length > 0) return { refused: text, reason: 'its filter cannot be evaluated by this FHIR endpoint' };
    narrowed.push(formatResourceScope(resource));
  }
  return { scope: [...new Set(narrowed)].join(' ') };
}

/**
 * What a token's scopes of its context (`grantContext`: `patient` or `user` for a launch, `system`
 * for client_credentials) allow for one interaction on one type: nothing, everything, or the resources matching at least
 * one of the granular filters.
 */
export type Permission = { allowed: false } | { allowed: true; filters: [string, string][][] | 'all' };

export function permission(scope: string, context: ScopeContext, resourceType: string, interaction: Interaction): Permission {
  const matching = splitScope(scope)
    .map(parseResourceScope)
    .filter((parsed): parsed is ResourceScope => parsed !== null)
    .filter((parsed) => parsed.context === context && (parsed.resourceType === '*' || parsed.resourceType === resourceType) && parsed[interaction]);
  if (matching.length === 0) return { allowed: false };
  if (matching.some((parsed) => parsed.filter.length === 0)) return { allowed: true, filters: 'all' };
  return { allowed: true, filters: matching.map((parsed) => parsed.filter) };
}
