/**
 * SMART App Launch scopes, v1 (`patient/Observation.read`) and v2 (`patient/Observation.rs`, with
 * an optional granular filter `?category=…`). This sandbox serves patient-level reads and searches:
 * what it cannot honour is left out of the grant, and the granted scope string says exactly what
 * the token allows.
 */

export type ScopeContext = 'patient' | 'user' | 'system';
export type Interaction = 'read' | 'search';

export interface ResourceScope {
  context: ScopeContext;
  /** A resource type, or `*` for every type. */
  resourceType: string;
  read: boolean;
  search: boolean;
  /** v2 granular scopes: search parameters a resource must match, e.g. `[['category', 'laboratory']]`. */
  filter: [string, string][];
  syntax: 'v1' | 'v2';
}

/** The scopes that are not about resources, each granted only when it means something. */
export const CONTEXT_SCOPES = ['launch', 'launch/patient', 'launch/encounter', 'openid', 'fhirUser', 'offline_access', 'online_access'] as const;

const V1_SCOPE = /^(patient|user|system)\/(\*|[A-Z][A-Za-z]+)\.(read|write|\*)$/;
const V2_SCOPE = /^(patient|user|system)\/(\*|[A-Z][A-Za-z]+)\.(c?r?u?d?s?)(?:\?(.+))?$/;

export function parseResourceScope(text: string): ResourceScope | null {
  const v1 = V1_SCOPE.exec(text);
  if (v1) {
    const readable = v1[3] !== 'write';
    return { context: v1[1] as ScopeContext, resourceType: v1[2]!, read: readable, search: readable, filter: [], syntax: 'v1' };
  }
  const v2 = V2_SCOPE.exec(text);
  if (v2?.[3]) {
    const filter = v2[4] ? [...new URLSearchParams(v2[4]).entries()] : [];
    return { context: v2[1] as ScopeContext, resourceType: v2[2]!, read: v2[3].includes('r'), search: v2[3].includes('s'), filter, syntax: 'v2' };
  }
  return null;
}

function formatResourceScope(scope: ResourceScope): string {
  const prefix = `${scope.context}/${scope.resourceType}`;
  if (scope.syntax === 'v1') return `${prefix}.read`;
  const permissions = `${scope.read ? 'r' : ''}${scope.search ? 's' : ''}`;
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
  /** The client's registered scope: nothing outside it is granted. Null: no limit. */
  registered: string | null;
  launchKind: 'ehr' | 'standalone';
}

/**
 * What can be granted of a requested scope string, normalised: patient-level read and search
 * only (`.write`, `c`, `u`, `d` and user/system scopes are not served here), types this endpoint
 * serves, filters it can evaluate, and nothing beyond the client's registration. `launch/patient`
 * and `launch/encounter` are decided later, once the context is known (see `withLaunchContext`).
 */
export function grantableScopes(requested: string, options: GrantOptions): string[] {
  const registered = options.registered === null ? null : splitScope(options.registered);
  const registeredResources = (registered ?? []).map(parseResourceScope).filter((scope): scope is ResourceScope => scope !== null);
  const granted: string[] = [];
  for (const text of splitScope(requested)) {
    const resource = parseResourceScope(text);
    if (resource) {
      const normalised = servableResourceScope(resource, options);
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
  return [...new Set(granted)];
}

function servableResourceScope(scope: ResourceScope, options: GrantOptions): ResourceScope | null {
  if (scope.context !== 'patient' || !(scope.read || scope.search)) return null;
  if (scope.resourceType !== '*' && !options.resourceTypes.includes(scope.resourceType)) return null;
  if (scope.filter.length > 0 && (scope.resourceType === '*' || !options.canFilter(scope.resourceType, scope.filter))) return null;
  return scope;
}

/** Whether `outer` allows everything `inner` does. */
function covers(outer: ResourceScope, inner: ResourceScope): boolean {
  if (outer.context !== inner.context) return false;
  if (outer.resourceType !== '*' && outer.resourceType !== inner.resourceType) return false;
  if ((inner.read && !outer.read) || (inner.search && !outer.search)) return false;
  if (outer.filter.length === 0) return true;
  return new URLSearchParams(outer.filter).toString() === new URLSearchParams(inner.filter).toString();
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

/** Whether a standalone launch needs a patient chosen: patient context, patient data or an identity asked for. */
export function needsPatientChoice(scopes: string[]): boolean {
  return scopes.some((scope) => scope === 'launch/patient' || scope === 'fhirUser' || scope.startsWith('patient/'));
}

/** Whether a narrower scope asked for at refresh stays within the original grant (RFC 6749 §6). */
export function isWithin(requested: string[], granted: string[]): boolean {
  const grantedResources = granted.map(parseResourceScope).filter((scope): scope is ResourceScope => scope !== null);
  return requested.every((text) => {
    if (granted.includes(text)) return true;
    const resource = parseResourceScope(text);
    return resource !== null && grantedResources.some((outer) => covers(outer, resource));
  });
}

/**
 * What a token's scopes allow for one interaction on one type: nothing, everything, or the
 * resources matching at least one of the granular filters.
 */
export type Permission = { allowed: false } | { allowed: true; filters: [string, string][][] | 'all' };

export function permission(scope: string, resourceType: string, interaction: Interaction): Permission {
  const matching = splitScope(scope)
    .map(parseResourceScope)
    .filter((parsed): parsed is ResourceScope => parsed !== null)
    .filter((parsed) => parsed.context === 'patient' && (parsed.resourceType === '*' || parsed.resourceType === resourceType) && parsed[interaction]);
  if (matching.length === 0) return { allowed: false };
  if (matching.some((parsed) => parsed.filter.length === 0)) return { allowed: true, filters: 'all' };
  return { allowed: true, filters: matching.map((parsed) => parsed.filter) };
}
