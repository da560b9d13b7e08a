import { randomUUID } from 'node:crypto';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import type { TestService } from './service';
import { postForm } from './smart';

/** SMART Backend Services helpers for tests: a client's key pair, its registration, its assertions, a system token. */

export interface ClientKey {
  alg: 'RS384' | 'ES384' | 'RS256' | 'ES256';
  kid: string;
  privateKey: CryptoKey;
  /** The public half as registered: kid, alg and use set. */
  publicJwk: JWK;
}

export async function newClientKey(alg: ClientKey['alg'] = 'ES384'): Promise<ClientKey> {
  const pair = await generateKeyPair(alg, { extractable: true });
  const kid = `key-${randomUUID()}`;
  return { alg, kid, privateKey: pair.privateKey, publicJwk: { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' } };
}

export async function registerBackendClient(
  service: TestService,
  apiKey: string,
  metadata: Record<string, unknown>,
): Promise<{ client_id: string; [field: string]: unknown }> {
  const response = await service.call('/v1/smart/clients', {
    key: apiKey,
    method: 'POST',
    body: {
      client_name: 'Backend service (synthetic)',
      token_endpoint_auth_method: 'private_key_jwt',
      grant_types: ['client_credentials'],
      ...metadata,
    },
  });
  if (response.status !== 201) throw new Error(`backend client registration failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** An RFC 7523 client assertion as SMART Backend Services asks for it; `claims` and `header` override the defaults. */
export async function signAssertion(
  service: TestService,
  clientId: string,
  key: ClientKey,
  options: { claims?: JWTPayload; header?: Record<string, unknown>; expiresInSeconds?: number } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: clientId,
    sub: clientId,
    aud: `${service.baseUrl}/oauth/token`,
    exp: now + (options.expiresInSeconds ?? 240),
    jti: randomUUID(),
    ...options.claims,
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...options.header })
    .sign(key.privateKey);
}

export function clientCredentials(service: TestService, assertion: string, scope: string, extra: Record<string, string> = {}) {
  return postForm(service, '/oauth/token', {
    grant_type: 'client_credentials',
    scope,
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: assertion,
    ...extra,
  });
}

/**
 * A system access token for a backend services client of a new tenant (or of `apiKey`'s
 * organization): the shortest way to a real system token for a test.
 */
export async function systemToken(
  service: TestService,
  scope: string,
  apiKey?: string,
): Promise<{ accessToken: string; clientId: string; clientKey: ClientKey; apiKey: string; organizationId: string | null }> {
  const tenant = apiKey ? { key: apiKey, organizationId: null } : await service.newTenant();
  const key = await newClientKey();
  const client = await registerBackendClient(service, tenant.key, { jwks: { keys: [key.publicJwk] } });
  const response = await clientCredentials(service, await signAssertion(service, client.client_id, key), scope);
  if (response.status !== 200) throw new Error(`client_credentials failed: ${response.status} ${JSON.stringify(response.body)}`);
  return {
    accessToken: response.body.access_token,
    clientId: client.client_id,
    clientKey: key,
    apiKey: tenant.key,
    organizationId: tenant.organizationId,
  };
}
