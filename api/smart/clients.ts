import { z } from 'zod';
import type { SmartClient } from '../../drizzle/schema';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { type ClientJwks, jwksField } from '../../smart/client-jwks';
import { GRANT_TYPES, grantTypesFor, registerClient, TOKEN_ENDPOINT_AUTH_METHODS } from '../../smart/clients';
import { CONTEXT_SCOPES, parseResourceScope, splitScope } from '../../smart/scopes';
import { type ResolveHost, webhookUrlProblem } from '../../webhooks/targets';
import { guardRequest, privacyWarningSchema, withWarnings } from '../http/privacy';
import { invalidFields } from '../http/problem';
import { defineRoute } from '../http/route';

const appUrl = (field: string) =>
  z
    .string()
    .url(`${field} must be an absolute URL`)
    .regex(/^https?:\/\//i, `${field} must be an http or https URL`)
    .refine((value) => !value.includes('#'), `${field} must not contain a fragment (RFC 6749 §3.1.2)`);

const scopeField = z
  .string()
  .trim()
  .min(1, 'scope must not be empty; leave it out to allow every scope this sandbox grants')
  .superRefine((value, context) => {
    for (const scope of splitScope(value)) {
      if (!(CONTEXT_SCOPES as readonly string[]).includes(scope) && !parseResourceScope(scope)) {
        context.addIssue({
          code: 'custom',
          message: `${scope} is not a SMART scope (e.g. launch, launch/patient, patient/*.rs, patient/Observation.read, openid, fhirUser, offline_access)`,
        });
      }
    }
  });

const registrationSchema = z
  .object({
    client_name: z.string().trim().min(1, 'client_name must not be empty').max(200, 'client_name must be at most 200 characters'),
    redirect_uris: z
      .array(appUrl('each redirect URI'))
      .max(20, 'at most 20 redirect URIs')
      .optional()
      .meta({ description: 'Required for apps that launch (at least one); a backend services client has none.' }),
    token_endpoint_auth_method: z
      .enum(TOKEN_ENDPOINT_AUTH_METHODS, {
        message:
          'token_endpoint_auth_method must be none (public client), client_secret_basic (confidential client) or private_key_jwt (backend services)',
      })
      .default('client_secret_basic')
      .meta({
        description:
          'none: a public app (PKCE only). client_secret_basic (the RFC 7591 default): a confidential app, given a secret once. private_key_jwt: a backend services client (SMART Backend Services) that signs assertions with a key of its jwks or jwks_uri.',
      }),
    grant_types: z.array(z.enum(GRANT_TYPES)).max(GRANT_TYPES.length).optional().meta({
      description: 'Follows from token_endpoint_auth_method: ["client_credentials"] for private_key_jwt, else authorization_code and refresh_token.',
    }),
    jwks: jwksField.optional().meta({ description: 'private_key_jwt: the client’s public keys, inline (or give jwks_uri).' }),
    jwks_uri: z
      .url({ protocol: /^https?$/, message: 'jwks_uri must be an absolute http or https URL' })
      .max(2048, 'jwks_uri must be at most 2048 characters')
      .optional()
      .meta({ description: 'private_key_jwt: where the client serves its JWK Set, fetched at each assertion (or give jwks).' }),
    scope: scopeField.optional().meta({
      description:
        'The most this client may ever be granted, space-separated. Omitted: any scope the sandbox grants, except user-level ones: an app acting as its user (user/Claim.c, user/Subscription.crds, user/*.rs) is granted them only when its registration names them.',
    }),
    launch_uri: appUrl('launch_uri').optional().meta({ description: 'Where an EHR launch opens the app (with iss and launch)' }),
  })
  .strict()
  .superRefine((body, context) => {
    const problem = (path: string, message: string) => context.addIssue({ code: 'custom', path: [path], message });
    const expected = grantTypesFor(body.token_endpoint_auth_method);
    if (body.grant_types && !sameSet(body.grant_types, expected)) {
      problem(
        'grant_types',
        body.grant_types.includes('client_credentials')
          ? 'client_credentials needs token_endpoint_auth_method private_key_jwt (SMART Backend Services), and goes alone'
          : `a ${body.token_endpoint_auth_method} client has grant_types ${JSON.stringify(expected)}`,
      );
    }
    if (body.token_endpoint_auth_method !== 'private_key_jwt') {
      if (!body.redirect_uris || body.redirect_uris.length === 0) problem('redirect_uris', 'register at least one redirect URI');
      for (const field of ['jwks', 'jwks_uri'] as const) {
        if (body[field] !== undefined) problem(field, `${field} is for token_endpoint_auth_method private_key_jwt only`);
      }
      return;
    }
    if ((body.jwks === undefined) === (body.jwks_uri === undefined))
      problem('jwks', 'a private_key_jwt client registers its public keys: jwks or jwks_uri, one of them');
    for (const field of ['redirect_uris', 'launch_uri'] as const) {
      if (body[field] !== undefined) problem(field, `a backend services client (private_key_jwt) does not launch, so it has no ${field}`);
    }
    for (const scope of splitScope(body.scope)) {
      if (parseResourceScope(scope)?.context !== 'system')
        problem('scope', `${scope} is not a system scope: a backend services client is granted system/ scopes only`);
    }
  })
  .meta({ id: 'SmartClientRegistration' });

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return new Set(a).size === new Set(b).size && a.every((value) => b.includes(value));
}

const clientSchema = z
  .object({
    client_id: z.string().meta({ example: 'cli_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    client_secret: z.string().optional().meta({ description: 'Confidential clients only, and only in this response: it is stored hashed.' }),
    client_secret_expires_at: z.number().int().optional().meta({ description: '0: the secret does not expire' }),
    client_id_issued_at: z.number().int(),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.enum(TOKEN_ENDPOINT_AUTH_METHODS),
    grant_types: z.array(z.enum(GRANT_TYPES)),
    response_types: z.array(z.literal('code')).meta({ description: '["code"] for apps that launch, [] for backend services clients' }),
    jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).optional(),
    jwks_uri: z.string().optional(),
    scope: z.string().optional(),
    launch_uri: z.string().optional(),
    warnings: z
      .array(privacyWarningSchema)
      .optional()
      .meta({ description: 'When client_name held a real identifier: what the privacy guard masked (docs/api/privacy.md)' }),
  })
  .meta({ id: 'SmartClient', description: 'RFC 7591 client information' });

type ClientInformation = z.input<typeof clientSchema>;

function present(client: SmartClient, secret: string | null): ClientInformation {
  return {
    client_id: client.id,
    ...(secret ? { client_secret: secret } : {}),
    ...(client.secretHash ? { client_secret_expires_at: 0 } : {}),
    client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    grant_types: grantTypesFor(client.tokenEndpointAuthMethod),
    response_types: client.tokenEndpointAuthMethod === 'private_key_jwt' ? [] : ['code'],
    ...(client.jwks ? { jwks: client.jwks } : {}),
    ...(client.jwksUri ? { jwks_uri: client.jwksUri } : {}),
    ...(client.scope ? { scope: client.scope } : {}),
    ...(client.launchUri ? { launch_uri: client.launchUri } : {}),
  };
}

/** SMART client registration with RFC 7591 metadata names; clients belong to the registering organization. */
export function smartClientRoutes({
  db,
  config,
  resolveHost,
}: {
  db: Database;
  config: Pick<Config, 'ALLOW_PRIVATE_TARGETS'>;
  /** The DNS lookup a jwks_uri is checked with (the system resolver when absent). */
  resolveHost?: ResolveHost | undefined;
}) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/smart/clients',
      operationId: 'registerSmartClient',
      summary: 'Register a SMART on FHIR client',
      description:
        'A confidential client (client_secret_basic) gets its client_secret in this response only. An Idempotency-Key replay answers the same client without the secret. A backend services client (private_key_jwt, SMART Backend Services) registers public keys (jwks, or a jwks_uri checked as a webhook URL is) and gets system tokens with client_credentials.',
      tag: 'SMART on FHIR',
      auth: 'api_key',
      body: registrationSchema,
      success: { status: 201, description: 'The registered client (RFC 7591 client information response)', schema: clientSchema },
      errors: [415, 422],
      replayed: ({ client_secret: _secret, ...rest }) => rest,
      handler: async ({ auth, body }) => {
        if (body.jwks_uri) {
          const problem = await webhookUrlProblem(body.jwks_uri, config.ALLOW_PRIVATE_TARGETS, resolveHost);
          if (problem) throw invalidFields('body', [{ path: 'body.jwks_uri', message: `jwks_uri ${problem}` }], 'jwks_uri_not_allowed');
        }
        const name = await guardRequest(db, auth.organizationId, body.client_name, 'body.client_name');
        const { client, secret } = await registerClient(db, auth.organizationId, {
          name: name.value,
          redirectUris: [...new Set(body.redirect_uris ?? [])],
          scope: body.scope === undefined ? null : splitScope(body.scope).join(' '),
          tokenEndpointAuthMethod: body.token_endpoint_auth_method,
          launchUri: body.launch_uri ?? null,
          jwks: body.jwks === undefined ? null : { keys: body.jwks.keys as ClientJwks['keys'] },
          jwksUri: body.jwks_uri ?? null,
        });
        return withWarnings(present(client, secret), name.warnings);
      },
    }),
  ];
}
