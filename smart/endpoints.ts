import { trimTrailing } from '../platform/text';

/**
 * Where the SMART and FHIR endpoints live: routers mount these paths and discovery documents
 * publish them as absolute URLs, from this one list.
 */
export const SMART_PATHS = {
  smartConfiguration: '/.well-known/smart-configuration',
  openidConfiguration: '/.well-known/openid-configuration',
  jwks: '/.well-known/jwks.json',
  authorize: '/oauth/authorize',
  patientPicker: '/oauth/authorize/patient',
  token: '/oauth/token',
  introspect: '/oauth/introspect',
  revoke: '/oauth/revoke',
  fhirBase: '/fhir/R4',
} as const;

export type SmartUrls = Record<keyof typeof SMART_PATHS, string> & { issuer: string };

/** Absolute URLs from PUBLIC_BASE_URL; the FHIR base is also the `aud` tokens are issued for. */
export function smartUrls(publicBaseUrl: string): SmartUrls {
  const base = trimTrailing(publicBaseUrl, '/');
  const absolute = Object.fromEntries(Object.entries(SMART_PATHS).map(([name, path]) => [name, `${base}${path}`])) as Record<
    keyof typeof SMART_PATHS,
    string
  >;
  return { ...absolute, issuer: base };
}
