import express, { type RequestHandler, type Router } from 'express';
import { z } from 'zod';
import { ASSERTION_ALGORITHMS } from '../../smart/client-jwks';
import { GRANT_TYPES, TOKEN_ENDPOINT_AUTH_METHODS } from '../../smart/clients';
import { SMART_PATHS, type SmartUrls } from '../../smart/endpoints';
import { CONTEXT_SCOPES } from '../../smart/scopes';
import { SIGNING_ALGORITHM } from '../../smart/signing-key';
import type { TokenService } from '../../smart/tokens';
import { openCors } from '../http/cors';

/** Only what is true of this server (SMART App Launch 2.x, "Capabilities"). */
const SMART_CAPABILITIES = [
  'launch-ehr',
  'launch-standalone',
  'authorize-post',
  'client-public',
  'client-confidential-symmetric',
  'client-confidential-asymmetric',
  'sso-openid-connect',
  'context-ehr-patient',
  'context-ehr-encounter',
  'context-standalone-patient',
  'permission-offline',
  'permission-online',
  'permission-patient',
  'permission-user',
  'permission-v1',
  'permission-v2',
] as const;

/** The discovery documents as served; they also describe them in /openapi.json. */
export const smartConfigurationSchema = z
  .object({
    issuer: z.string(),
    jwks_uri: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    token_endpoint_auth_methods_supported: z.array(z.enum(TOKEN_ENDPOINT_AUTH_METHODS)),
    token_endpoint_auth_signing_alg_values_supported: z.array(z.enum(ASSERTION_ALGORITHMS)),
    grant_types_supported: z.array(z.enum(GRANT_TYPES)),
    introspection_endpoint: z.string(),
    revocation_endpoint: z.string(),
    scopes_supported: z.array(z.string()),
    response_types_supported: z.array(z.literal('code')),
    code_challenge_methods_supported: z.array(z.literal('S256')),
    capabilities: z.array(z.enum(SMART_CAPABILITIES)),
  })
  .meta({ id: 'SmartConfiguration', description: 'SMART App Launch 2.x discovery document.' });

export const openidConfigurationSchema = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    jwks_uri: z.string(),
    response_types_supported: z.array(z.literal('code')),
    subject_types_supported: z.array(z.literal('public')),
    id_token_signing_alg_values_supported: z.array(z.literal(SIGNING_ALGORITHM)),
    scopes_supported: z.array(z.string()),
    claims_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.enum(TOKEN_ENDPOINT_AUTH_METHODS)),
    token_endpoint_auth_signing_alg_values_supported: z.array(z.enum(ASSERTION_ALGORITHMS)),
    grant_types_supported: z.array(z.enum(GRANT_TYPES)),
    code_challenge_methods_supported: z.array(z.literal('S256')),
  })
  .meta({ id: 'OpenIdConfiguration', description: 'OpenID Connect discovery for the issuer.' });

export const jwksSchema = z
  .object({ keys: z.array(z.object({ kty: z.string(), kid: z.string(), alg: z.string(), use: z.string() }).loose()) })
  .meta({ id: 'JsonWebKeySet', description: 'The public keys that verify access and id tokens (RFC 7517).' });

/**
 * SMART discovery (`/.well-known/smart-configuration`, at the root as the spec lists it and under
 * the FHIR base where SMART clients look), OpenID Connect discovery for the issuer, and the JWKS
 * that verifies access and id tokens. Open and CORS-enabled.
 */
export function smartDiscoveryRouter({ urls, tokens }: { urls: SmartUrls; tokens: TokenService }): Router {
  const router = express.Router();
  // User-level scopes are granted to a client whose registration names them (docs/api/smart-on-fhir.md, Scopes).
  const scopesSupported = [
    ...CONTEXT_SCOPES,
    'patient/*.rs',
    'patient/*.read',
    'user/*.rs',
    'user/*.read',
    'user/Claim.c',
    'user/Subscription.crds',
    'system/*.rs',
    'system/*.read',
    'system/Claim.c',
    'system/Subscription.crds',
  ];
  const smartConfiguration: z.input<typeof smartConfigurationSchema> = {
    issuer: urls.issuer,
    jwks_uri: urls.jwks,
    authorization_endpoint: urls.authorize,
    token_endpoint: urls.token,
    token_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
    grant_types_supported: [...GRANT_TYPES],
    introspection_endpoint: urls.introspect,
    revocation_endpoint: urls.revoke,
    scopes_supported: scopesSupported,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    capabilities: [...SMART_CAPABILITIES],
  };
  const openidConfiguration: z.input<typeof openidConfigurationSchema> = {
    issuer: urls.issuer,
    authorization_endpoint: urls.authorize,
    token_endpoint: urls.token,
    jwks_uri: urls.jwks,
    response_types_supported: ['code'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALGORITHM],
    scopes_supported: ['openid', 'fhirUser'],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'nonce', 'fhirUser'],
    token_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
  };
  const cacheable: RequestHandler = (_req, res, next) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    next();
  };

  const smartConfigurationPaths = [SMART_PATHS.smartConfiguration, `${SMART_PATHS.fhirBase}${SMART_PATHS.smartConfiguration}`];
  router.get(smartConfigurationPaths, openCors, cacheable, (_req, res) => {
    res.json(smartConfiguration);
  });
  router.get(SMART_PATHS.openidConfiguration, openCors, cacheable, (_req, res) => {
    res.json(openidConfiguration);
  });
  router.get(SMART_PATHS.jwks, openCors, cacheable, async (_req, res) => {
    res.type('application/jwk-set+json').send(JSON.stringify(await tokens.jwks()));
  });
  router.options([...smartConfigurationPaths, SMART_PATHS.openidConfiguration, SMART_PATHS.jwks], openCors);
  return router;
}
