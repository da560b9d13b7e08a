import { timingSafeEqual } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { type SmartClient, smartClients } from '../drizzle/schema';
import type { Database } from '../platform/database';
import { isId, newId } from '../platform/ids';
import { excerpt } from '../platform/text';
import type { ClientJwks } from './client-jwks';
import { OAuthError } from './oauth-error';
import { digest, newOpaqueToken } from './opaque-token';

export const TOKEN_ENDPOINT_AUTH_METHODS = ['none', 'client_secret_basic', 'private_key_jwt'] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];
/** Every grant the token endpoint knows. */
export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/**
 * The grants a client may use, from how it authenticates: an app that launches (public or with a
 * secret) gets codes and refreshes; a backend services client (private_key_jwt) gets
 * client_credentials only, having no redirect URI and no user.
 */
export function grantTypesFor(method: TokenEndpointAuthMethod): GrantType[] {
  return method === 'private_key_jwt' ? ['client_credentials'] : ['authorization_code', 'refresh_token'];
}

/** RFC 7523 §2.2: the client authenticates with a JWT it signed (private_key_jwt). */
export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** Client secrets carry a recognisable prefix so secret scanners can spot a leaked one. */
const CLIENT_SECRET_PREFIX = 'sbx_cs_';

export interface ClientRegistration {
  name: string;
  redirectUris: string[];
  scope: string | null;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  launchUri: string | null;
  /** A backend services client's public keys: inline, or where to fetch them. */
  jwks: ClientJwks | null;
  jwksUri: string | null;
}

/** Registers a client for the organization; a confidential client's secret is returned once. */
export async function registerClient(
  db: Database,
  organizationId: string,
  registration: ClientRegistration,
): Promise<{ client: SmartClient; secret: string | null }> {
  const secret = registration.tokenEndpointAuthMethod === 'client_secret_basic' ? newOpaqueToken(CLIENT_SECRET_PREFIX) : null;
  const [client] = await db
    .insert(smartClients)
    .values({
      id: newId('cli'),
      organizationId,
      name: registration.name,
      redirectUris: registration.redirectUris,
      scope: registration.scope,
      tokenEndpointAuthMethod: registration.tokenEndpointAuthMethod,
      launchUri: registration.launchUri,
      secretHash: secret === null ? null : digest(secret),
      jwks: registration.jwks,
      jwksUri: registration.jwksUri,
    })
    .returning();
  return { client: client!, secret };
}

export async function findClient(db: Database, clientId: string): Promise<SmartClient | undefined> {
  // A value that is not a client id names no client, and never reaches the database (NUL bytes).
  if (!isId('cli', clientId)) return undefined;
  const [client] = await db.select().from(smartClients).where(eq(smartClients.id, clientId));
  return client;
}

export interface ClientCredentials {
  authorization: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
}

/**
 * Authenticates the caller of the token, revocation or introspection endpoint (RFC 6749 §2.3):
 * a confidential client with HTTP Basic, a public client by its `client_id` alone.
 */
export async function authenticateClient(db: Database, credentials: ClientCredentials): Promise<SmartClient> {
  if (credentials.clientSecret !== undefined) {
    throw new OAuthError('invalid_client', 'Send the client secret with HTTP Basic authentication (client_secret_basic), not in the request body.');
  }
  const basic = credentials.authorization === undefined ? null : parseBasic(credentials.authorization);
  if (basic) {
    if (credentials.clientId !== undefined && credentials.clientId !== basic.clientId) {
      throw new OAuthError('invalid_request', 'The client_id in the body differs from the one in the Authorization header.');
    }
    const client = await findClient(db, basic.clientId);
    if (!client || client.secretHash === null || !sameDigest(client.secretHash, digest(basic.secret))) {
      throw new OAuthError('invalid_client', 'Client authentication failed: unknown client_id or wrong client_secret.');
    }
    return client;
  }
  if (credentials.clientId === undefined) {
    throw new OAuthError('invalid_client', 'Identify the client: HTTP Basic for a confidential client, client_id in the body for a public one.');
  }
  const client = await findClient(db, credentials.clientId);
  if (!client) throw new OAuthError('invalid_client', `No client ${excerpt(credentials.clientId)} is registered.`);
  if (client.tokenEndpointAuthMethod === 'private_key_jwt') {
    throw new OAuthError(
      'invalid_client',
      `This client authenticates with a signed assertion: send client_assertion_type=${CLIENT_ASSERTION_TYPE} and client_assertion.`,
    );
  }
  if (client.tokenEndpointAuthMethod !== 'none') {
    throw new OAuthError('invalid_client', 'This client is confidential: authenticate with HTTP Basic (client_id and client_secret).');
  }
  return client;
}

/** RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined and base64-encoded. */
function parseBasic(header: string): { clientId: string; secret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'The Basic credentials must be client_id:client_secret.');
  const formDecode = (part: string) => {
    try {
      return decodeURIComponent(part.replace(/\+/g, ' '));
    } catch {
      throw new OAuthError('invalid_client', 'The Basic credentials are not valid form-urlencoded text.');
    }
  };
  return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

function sameDigest(a: string, b: string): boolean {
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}
