import { z } from 'zod';
import type { SmartClient } from '../../drizzle/schema';
import type { Database } from '../../platform/database';
import { GRANT_TYPES, registerClient, TOKEN_ENDPOINT_AUTH_METHODS } from '../../smart/clients';
import { CONTEXT_SCOPES, parseResourceScope, splitScope } from '../../smart/scopes';
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
    redirect_uris: z.array(appUrl('each redirect URI')).min(1, 'register at least one redirect URI').max(20, 'at most 20 redirect URIs'),
    token_endpoint_auth_method: z
      .enum(TOKEN_ENDPOINT_AUTH_METHODS, {
        message: 'token_endpoint_auth_method must be none (public client) or client_secret_basic (confidential client)',
      })
      .default('client_secret_basic')
      .meta({ description: 'none: a public app (PKCE only). client_secret_basic (the RFC 7591 default): a confidential app, given a secret once.' }),
    scope: scopeField
      .optional()
      .meta({ description: 'The most this client may ever be granted, space-separated. Omitted: any scope the sandbox grants.' }),
    launch_uri: appUrl('launch_uri').optional().meta({ description: 'Where an EHR launch opens the app (with iss and launch)' }),
  })
  .strict()
  .meta({ id: 'SmartClientRegistration' });

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
    response_types: z.array(z.literal('code')),
    scope: z.string().optional(),
    launch_uri: z.string().optional(),
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
    grant_types: [...GRANT_TYPES],
    response_types: ['code'],
    ...(client.scope ? { scope: client.scope } : {}),
    ...(client.launchUri ? { launch_uri: client.launchUri } : {}),
  };
}

/** SMART client registration with RFC 7591 metadata names; clients belong to the registering organization. */
export function smartClientRoutes({ db }: { db: Database }) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/smart/clients',
      operationId: 'registerSmartClient',
      summary: 'Register a SMART on FHIR client',
      description:
        'A confidential client (client_secret_basic) gets its client_secret in this response only. An Idempotency-Key replay answers the same client without the secret.',
      tag: 'SMART on FHIR',
      auth: 'api_key',
      body: registrationSchema,
      success: { status: 201, description: 'The registered client (RFC 7591 client information response)', schema: clientSchema },
      errors: [415, 422],
      replayed: ({ client_secret: _secret, ...rest }) => rest,
      handler: async ({ auth, body }) => {
        const { client, secret } = await registerClient(db, auth.organizationId, {
          name: body.client_name,
          redirectUris: [...new Set(body.redirect_uris)],
          scope: body.scope === undefined ? null : splitScope(body.scope).join(' '),
          tokenEndpointAuthMethod: body.token_endpoint_auth_method,
          launchUri: body.launch_uri ?? null,
        });
        return present(client, secret);
      },
    }),
  ];
}
