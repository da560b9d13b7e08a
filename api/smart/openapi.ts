import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { MAX_ASSERTION_LIFETIME_SECONDS } from '../../smart/client-assertion';
import { ASSERTION_ALGORITHMS } from '../../smart/client-jwks';
import { CLIENT_ASSERTION_TYPE, GRANT_TYPES } from '../../smart/clients';
import { SMART_PATHS } from '../../smart/endpoints';
import { oauthErrorSchema } from '../../smart/oauth-error';
import { tokenResponseSchema } from '../../smart/token-response';
import { introspectionSchema } from '../../smart/tokens';
import { jwksSchema, openidConfigurationSchema, smartConfigurationSchema } from './discovery';

/**
 * SMART discovery and the OAuth endpoints in /openapi.json. These routers are plain Express (their
 * bodies are forms, their errors RFC 6749 objects or HTML pages), so they are described here, from
 * the schemas the served documents and token answers are typed by.
 */

const FORM = 'application/x-www-form-urlencoded';
const HTML = { 'text/html': { schema: { type: 'string' as const } } };

const oauthError = (description: string) => ({ description, content: { 'application/json': { schema: oauthErrorSchema } } });
const redirect = (description: string) => ({
  description,
  headers: { Location: { description: 'Where the browser goes next.', schema: { type: 'string' as const } } },
});

const authorizationParameters = z.object({
  response_type: z.literal('code'),
  client_id: z.string().meta({ description: 'A client registered with POST /v1/smart/clients.' }),
  redirect_uri: z.string().meta({ description: 'One of the client’s registered redirect URIs, exactly.' }),
  scope: z.string().meta({
    description:
      'Space-separated, e.g. `launch/patient openid fhirUser patient/*.rs offline_access`; a client whose registered scope names user-level scopes may ask for them (`openid fhirUser user/Claim.c user/Subscription.crds`): the token then acts as a synthetic Practitioner of its organization.',
  }),
  state: z.string(),
  aud: z.string().meta({ description: 'The FHIR base URL (`/fhir/R4` on this server).' }),
  code_challenge: z.string().meta({ description: 'PKCE (S256), required.' }),
  code_challenge_method: z.literal('S256'),
  launch: z.string().optional().meta({ description: 'EHR launch: the handle from POST /v1/smart/launch.' }),
});

const authorizationAnswers = {
  '302': redirect(
    'To the client’s redirect_uri with `code` and `state` (or an RFC 6749 `error`), or to the patient picker when a patient must be chosen.',
  ),
  '303': redirect('Same as 302, after a POST.'),
  '400': { description: 'An unknown client_id or redirect_uri: an error page, never a redirect.', content: HTML },
};

const clientCredentials = {
  client_id: z.string().optional().meta({ description: 'A public client’s id (confidential clients use HTTP Basic instead).' }),
  client_secret: z.string().optional().meta({ description: 'A confidential client may send its secret here instead of in HTTP Basic.' }),
  client_assertion_type: z
    .literal(CLIENT_ASSERTION_TYPE)
    .optional()
    .meta({ description: 'private_key_jwt (RFC 7523): a backend services client authenticates with client_assertion.' }),
  client_assertion: z
    .string()
    .optional()
    .meta({
      description: `private_key_jwt: a JWT signed with a key of the client’s JWK Set (${ASSERTION_ALGORITHMS.join(', ')}; kid in the header), iss = sub = client_id, aud = the token endpoint, exp at most ${MAX_ASSERTION_LIFETIME_SECONDS} s ahead, a jti never used before.`,
    }),
};

const tokenForm = z.object({
  grant_type: z.enum(GRANT_TYPES),
  code: z.string().optional().meta({ description: 'authorization_code: the code from the redirect (single use).' }),
  redirect_uri: z.string().optional().meta({ description: 'authorization_code: the redirect_uri of the authorization request.' }),
  code_verifier: z.string().optional().meta({ description: 'authorization_code: the PKCE verifier.' }),
  refresh_token: z.string().optional().meta({ description: 'refresh_token: the refresh token (each refresh replaces it).' }),
  scope: z.string().optional().meta({
    description:
      'refresh_token: a narrower scope, if wanted. client_credentials (required): system scopes, e.g. `system/Patient.rs system/Observation.read`.',
  }),
  ...clientCredentials,
});

const revokeForm = z.object({ token: z.string().meta({ description: 'An access or refresh token.' }), ...clientCredentials });

// A confidential client authenticates with HTTP Basic, a backend services client with a client assertion in the form; a public one sends only its client_id.
const clientAuth: Record<string, string[]>[] = [{ clientBasic: [] }, {}];
const discovery = (summary: string, schema: z.ZodType, operationId: string): ZodOpenApiOperationObject => ({
  operationId,
  summary,
  tags: ['SMART on FHIR'],
  security: [],
  responses: { '200': { description: summary, content: { 'application/json': { schema } } } },
});

export function smartOpenApiPaths(): ZodOpenApiPathsObject {
  return {
    [SMART_PATHS.smartConfiguration]: {
      get: discovery('SMART configuration (discovery)', smartConfigurationSchema, 'getSmartConfiguration'),
    },
    [`${SMART_PATHS.fhirBase}${SMART_PATHS.smartConfiguration}`]: {
      get: discovery('SMART configuration under the FHIR base, where SMART clients look', smartConfigurationSchema, 'getFhirSmartConfiguration'),
    },
    [SMART_PATHS.openidConfiguration]: {
      get: discovery('OpenID Connect discovery', openidConfigurationSchema, 'getOpenidConfiguration'),
    },
    [SMART_PATHS.jwks]: {
      get: {
        ...discovery('The keys that sign access and id tokens', jwksSchema, 'getJwks'),
        responses: { '200': { description: 'The JSON Web Key Set', content: { 'application/jwk-set+json': { schema: jwksSchema } } } },
      },
    },
    [SMART_PATHS.authorize]: {
      get: {
        operationId: 'authorize',
        summary: 'OAuth authorization (SMART EHR or standalone launch)',
        description: 'A browser request. Answers with redirects; errors the client can be trusted with go to its redirect_uri.',
        tags: ['OAuth'],
        security: [],
        requestParams: { query: authorizationParameters },
        responses: authorizationAnswers,
      },
      post: {
        operationId: 'authorizeWithForm',
        summary: 'OAuth authorization with the parameters as a form (SMART authorize-post)',
        tags: ['OAuth'],
        security: [],
        requestBody: { required: true, content: { [FORM]: { schema: authorizationParameters } } },
        responses: authorizationAnswers,
      },
    },
    [SMART_PATHS.patientPicker]: {
      get: {
        operationId: 'showPatientPicker',
        summary: 'The patient picker of a standalone launch (HTML)',
        tags: ['OAuth'],
        security: [],
        requestParams: {
          query: z.object({
            request: z.string().meta({ description: 'The pending authorization request, from the redirect.' }),
            q: z.string().optional().meta({ description: 'Find patients by id or by name words.' }),
          }),
        },
        responses: {
          '200': { description: 'The picker page', content: HTML },
          '302': redirect('The request expired: to the client with an error.'),
        },
      },
      post: {
        operationId: 'choosePatient',
        summary: 'Choose the patient (or deny) and continue the authorization',
        tags: ['OAuth'],
        security: [],
        requestBody: {
          required: true,
          content: {
            [FORM]: {
              schema: z.object({ request: z.string(), patient: z.string().optional(), deny: z.string().optional() }),
            },
          },
        },
        responses: { '303': redirect('To the client’s redirect_uri with the code, or access_denied.'), '400': authorizationAnswers['400'] },
      },
    },
    [SMART_PATHS.token]: {
      post: {
        operationId: 'issueToken',
        summary: 'Exchange an authorization code or a refresh token for tokens, or get a system token (client_credentials)',
        description:
          'SMART Backend Services: grant_type=client_credentials with a private_key_jwt client assertion and system scopes answers an access token alone. A bad assertion (signature, kid, aud, exp, reused jti, alg) is 401 invalid_client.',
        tags: ['OAuth'],
        security: clientAuth,
        requestBody: { required: true, content: { [FORM]: { schema: tokenForm } } },
        responses: {
          '200': { description: 'Tokens (Cache-Control: no-store)', content: { 'application/json': { schema: tokenResponseSchema } } },
          '400': oauthError('invalid_request, invalid_grant, invalid_scope, unauthorized_client or unsupported_grant_type'),
          '401': oauthError('invalid_client'),
        },
      },
    },
    [SMART_PATHS.introspect]: {
      post: {
        operationId: 'introspectToken',
        summary: 'Token introspection (RFC 7662)',
        description:
          'Your organization’s API key sees the tokens of its clients; a confidential client (HTTP Basic) sees its own. Anything else is `{ "active": false }`.',
        tags: ['OAuth'],
        security: [{ apiKey: [] }, { clientBasic: [] }],
        requestBody: { required: true, content: { [FORM]: { schema: z.object({ token: z.string() }) } } },
        responses: {
          '200': { description: 'The token’s facts', content: { 'application/json': { schema: introspectionSchema } } },
          '400': oauthError('invalid_request'),
          '401': oauthError('invalid_client: no or bad credentials'),
        },
      },
    },
    [SMART_PATHS.revoke]: {
      post: {
        operationId: 'revokeToken',
        summary: 'Token revocation (RFC 7009); a refresh token revokes its whole authorization',
        tags: ['OAuth'],
        security: clientAuth,
        requestBody: { required: true, content: { [FORM]: { schema: revokeForm } } },
        responses: {
          '200': { description: 'Revoked (or already unknown, as RFC 7009 asks)' },
          '400': oauthError('invalid_request'),
          '401': oauthError('invalid_client'),
        },
      },
    },
  };
}
