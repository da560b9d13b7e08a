import { randomUUID } from 'node:crypto';
import { and, eq, isNull, lt, or, type SQL } from 'drizzle-orm';
import { type JWTPayload, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { type SmartAuthorization, type SmartClient, smartAuthorizations, smartClients, smartTokens } from '../drizzle/schema';
import type { Config } from '../platform/config';
import type { Database, Listen } from '../platform/database';
import { createNotifiedCache } from '../platform/notified-cache';
import { excerpt } from '../platform/text';
import { recordSystemAuthorization, revokeAuthorizationRecord } from './authorizations';
import type { SmartUrls } from './endpoints';
import { OAuthError } from './oauth-error';
import { digest, newOpaqueToken } from './opaque-token';
import { type GrantOptions, grantContext, narrowedScope, type ScopeContext, splitScope } from './scopes';
import { loadSigningKey, SIGNING_ALGORITHM, type SigningKey } from './signing-key';
import type { TokenResponse } from './token-response';

/** RFC 7662's answer: the token's facts when it is active and the caller may see it, else `{ active: false }` alone. */
export const introspectionSchema = z
  .object({
    active: z.boolean(),
    token_type: z.enum(['Bearer', 'refresh_token']).optional(),
    scope: z.string().optional(),
    client_id: z.string().optional(),
    sub: z.string().optional(),
    iss: z.string().optional(),
    aud: z.string().optional(),
    iat: z.number().int().optional(),
    exp: z.number().int().optional(),
    patient: z.string().optional(),
    encounter: z.string().optional(),
    fhirUser: z.string().optional(),
  })
  .meta({ id: 'TokenIntrospection' });

/** What a valid access token lets its bearer do, as the FHIR endpoint sees it. */
export interface AccessGrant {
  tokenId: string;
  clientId: string;
  /** The organization the client belongs to: what a system or user token may see of the organization's own objects. */
  organizationId: string;
  /**
   * Which scopes apply (smart/scopes.ts grantContext): `patient/` ones for an app launch, `user/` ones
   * for an app launch granted user-level scopes, `system/` ones for a client_credentials token.
   */
  context: ScopeContext;
  scope: string;
  patientId: string | null;
  encounterId: string | null;
}

export type AccessTokenCheck = { valid: true; grant: AccessGrant } | { valid: false; expired: boolean; reason: string };

/** A valid access token as remembered: its grant, the authorization it came from, and its expiry (epoch ms). */
type ValidAccessToken = { valid: true; grant: AccessGrant; authorizationId: string; expiresAt: number };

/** The channel the smart_tokens and smart_authorizations triggers (drizzle/0010_smart_token_cache.sql) notify with a row's id. */
export const SMART_TOKEN_CHANGED_CHANNEL = 'smart_token_changed';

type TokenLifetimes = Pick<Config, 'SMART_ACCESS_TOKEN_SECONDS' | 'SMART_REFRESH_TOKEN_SECONDS'>;

/**
 * Issues, checks, refreshes and revokes tokens. Access and id tokens are JWTs signed with the
 * stored key; every token also has a row, so revocation and refresh take effect at once. `listen`
 * (DatabaseHandle.listen) tells this process when another one revoked a token it remembers.
 */
export function createTokenService({
  db,
  lifetimes,
  urls,
  listen,
  canFilter,
}: {
  db: Database;
  lifetimes: TokenLifetimes;
  urls: SmartUrls;
  listen: Listen;
  /** Whether a granular scope filter can be evaluated (fhir/search-parameters canEvaluate): a refresh asking for one that cannot is refused. */
  canFilter: GrantOptions['canFilter'];
}) {
  let signingKey: Promise<SigningKey> | undefined;
  const key = () => {
    signingKey ??= loadSigningKey(db).catch((error: unknown) => {
      signingKey = undefined;
      throw error;
    });
    return signingKey;
  };

  /** Signs an access token for the authorization; `now` is a parameter so expiry can be exercised. */
  async function signAccessToken(authorization: SmartAuthorization, scope: string, now = new Date()): Promise<{ token: string; expiresAt: Date }> {
    const jti = randomUUID();
    const { token, expiresAt } = await sign(authorization, 'at+jwt', urls.fhirBase, now, {
      jti,
      scope,
      client_id: authorization.clientId,
      ...(authorization.patientId ? { patient: authorization.patientId } : {}),
      ...(authorization.encounterId ? { encounter: authorization.encounterId } : {}),
      ...fhirUserClaim(authorization),
    });
    await db.insert(smartTokens).values({ id: jti, authorizationId: authorization.id, kind: 'access', scope, createdAt: now, expiresAt });
    return { token, expiresAt };
  }

  async function signIdToken(authorization: SmartAuthorization): Promise<string> {
    const { token } = await sign(authorization, 'JWT', authorization.clientId, new Date(), {
      ...fhirUserClaim(authorization),
      ...(authorization.nonce ? { nonce: authorization.nonce } : {}),
    });
    return token;
  }

  /** Access and id tokens alike: issued by this server about the authorization's user, for the access token lifetime. */
  async function sign(
    authorization: SmartAuthorization,
    typ: 'at+jwt' | 'JWT',
    audience: string,
    now: Date,
    claims: JWTPayload,
  ): Promise<{ token: string; expiresAt: Date }> {
    const { privateKey, kid } = await key();
    const issuedAt = Math.floor(now.getTime() / 1000);
    const expiresAt = issuedAt + lifetimes.SMART_ACCESS_TOKEN_SECONDS;
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ })
      .setIssuer(urls.issuer)
      .setAudience(audience)
      .setSubject(authorization.fhirUser ?? authorization.clientId)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(privateKey);
    return { token, expiresAt: new Date(expiresAt * 1000) };
  }

  function fhirUserClaim(authorization: SmartAuthorization): { fhirUser?: string } {
    return authorization.fhirUser ? { fhirUser: `${urls.fhirBase}/${authorization.fhirUser}` } : {};
  }

  /** The token response for an authorization, with the given (possibly narrowed) scope. */
  async function issue(authorization: SmartAuthorization, scope: string): Promise<TokenResponse> {
    const scopes = splitScope(scope);
    const access = await signAccessToken(authorization, scope);
    let refreshToken: string | undefined;
    if (scopes.includes('offline_access') || scopes.includes('online_access')) {
      refreshToken = newOpaqueToken();
      await db.insert(smartTokens).values({
        id: digest(refreshToken),
        authorizationId: authorization.id,
        kind: 'refresh',
        scope,
        expiresAt: new Date(Date.now() + lifetimes.SMART_REFRESH_TOKEN_SECONDS * 1000),
      });
    }
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: lifetimes.SMART_ACCESS_TOKEN_SECONDS,
      scope,
      ...(authorization.patientId ? { patient: authorization.patientId } : {}),
      ...(authorization.encounterId ? { encounter: authorization.encounterId } : {}),
      need_patient_banner: authorization.launchKind === 'standalone',
      ...(scopes.includes('openid') ? { id_token: await signIdToken(authorization) } : {}),
      ...(refreshToken ? { refresh_token: refreshToken } : {}),
    };
  }

  /**
   * The client_credentials grant (SMART Backend Services): an access token alone, no refresh or id
   * token, under an authorization row born granted (recordSystemAuthorization).
   */
  async function issueSystem(client: SmartClient, scope: string): Promise<TokenResponse> {
    const now = new Date();
    const authorization = await recordSystemAuthorization(db, {
      clientId: client.id,
      scope,
      expiresAt: new Date(now.getTime() + lifetimes.SMART_ACCESS_TOKEN_SECONDS * 1000),
    });
    const access = await signAccessToken(authorization, scope, now);
    return { access_token: access.token, token_type: 'Bearer', expires_in: lifetimes.SMART_ACCESS_TOKEN_SECONDS, scope };
  }

  /**
   * Valid access tokens remembered by their exact text, so a FHIR read costs neither the token's row
   * nor the RS256 verification (which takes about as long as a bare Express request). Revocation
   * reaches every process through the triggers' NOTIFY; an entry is never served past the token's exp.
   */
  const validTokens = createNotifiedCache({
    channel: SMART_TOKEN_CHANGED_CHANNEL,
    listen,
    lookUp: verifyAccessToken,
    keeps: (check): check is ValidAccessToken => check.valid,
    idsOf: (check) => [check.grant.tokenId, check.authorizationId],
    expiresAt: (check) => check.expiresAt,
    maxAgeMs: 60_000,
    maxEntries: 10_000,
  });

  /** At once when the token is remembered (no promise to wait on for every FHIR read), else after verifying it. */
  function checkAccessToken(token: string): AccessTokenCheck | Promise<AccessTokenCheck> {
    const remembered = validTokens.remembered(token);
    if (remembered?.valid) return { valid: true, grant: remembered.grant };
    return validTokens.get(token).then((check) => (check.valid ? { valid: true, grant: check.grant } : check));
  }

  async function verifyAccessToken(token: string): Promise<ValidAccessToken | Extract<AccessTokenCheck, { valid: false }>> {
    const { publicKey } = await key();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, publicKey, {
        issuer: urls.issuer,
        audience: urls.fhirBase,
        algorithms: [SIGNING_ALGORITHM],
        typ: 'at+jwt',
      }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) return { valid: false, expired: true, reason: 'The access token has expired.' };
      return { valid: false, expired: false, reason: 'The access token is not one this server issued for this FHIR endpoint.' };
    }
    const [row] = await db
      .select({ token: smartTokens, authorization: smartAuthorizations, organizationId: smartClients.organizationId })
      .from(smartTokens)
      .innerJoin(smartAuthorizations, eq(smartTokens.authorizationId, smartAuthorizations.id))
      .innerJoin(smartClients, eq(smartAuthorizations.clientId, smartClients.id))
      .where(and(eq(smartTokens.id, payload.jti ?? ''), eq(smartTokens.kind, 'access')));
    if (!row || row.token.revokedAt || row.authorization.revokedAt) {
      return { valid: false, expired: false, reason: 'The access token has been revoked or replaced by a refresh.' };
    }
    const { authorization } = row;
    return {
      valid: true,
      grant: {
        tokenId: row.token.id,
        clientId: authorization.clientId,
        organizationId: row.organizationId,
        context: grantContext(authorization.launchKind === 'system' ? 'system' : 'app', row.token.scope),
        scope: row.token.scope,
        patientId: authorization.patientId,
        encounterId: authorization.encounterId,
      },
      authorizationId: authorization.id,
      // jose refuses a token once the clock reaches exp (whole seconds); the cache stops serving it at the same instant.
      expiresAt: (payload.exp ?? 0) * 1000,
    };
  }

  /** Revokes the authorization and every token it produced (code reuse, refresh token revocation). */
  async function revokeAuthorization(authorizationId: string): Promise<void> {
    const now = new Date();
    await revokeAuthorizationRecord(db, authorizationId, now);
    await db
      .update(smartTokens)
      .set({ revokedAt: now })
      .where(and(eq(smartTokens.authorizationId, authorizationId), isNull(smartTokens.revokedAt)));
    // At once in this process; the others forget on the triggers' NOTIFY.
    validTokens.forget(authorizationId);
  }

  /**
   * The refresh_token grant: the refresh token is spent (rotation), the access tokens it replaces
   * stop working, and a narrower scope may be asked for. Everything that can refuse the request is
   * checked before the token is spent, so a refused refresh leaves it valid (RFC 6749 §6: only a
   * successful refresh issues a new one).
   */
  async function refresh(client: SmartClient, refreshToken: string, requestedScope: string | undefined): Promise<TokenResponse> {
    const now = new Date();
    const unusable = () => new OAuthError('invalid_grant', 'The refresh token is unknown, expired, revoked or already used.');
    const [found] = await tokensWithAuthorization(and(eq(smartTokens.id, digest(refreshToken)), eq(smartTokens.kind, 'refresh')));
    if (!found || found.token.revokedAt || found.authorization.revokedAt || found.token.expiresAt <= now) throw unusable();
    const { token: stored, authorization } = found;
    if (authorization.clientId !== client.id) {
      await revokeAuthorization(authorization.id);
      throw new OAuthError('invalid_grant', 'The refresh token was issued to another client.');
    }
    let scope = stored.scope;
    // A blank scope is read as an omitted one: the grant's scope, unchanged.
    if (requestedScope !== undefined && splitScope(requestedScope).length > 0) {
      const narrowed = narrowedScope(splitScope(requestedScope), splitScope(stored.scope), canFilter);
      if ('refused' in narrowed) {
        throw new OAuthError(
          'invalid_scope',
          `${excerpt(narrowed.refused)} cannot be granted at refresh: ${narrowed.reason}. A refresh may keep or narrow the scope granted (${stored.scope}); the refresh token is still valid.`,
        );
      }
      scope = narrowed.scope;
    }
    // Spent only by the request that finds it unspent: of two concurrent refreshes one wins.
    const [spent] = await db
      .update(smartTokens)
      .set({ revokedAt: now })
      .where(and(eq(smartTokens.id, stored.id), isNull(smartTokens.revokedAt)))
      .returning({ id: smartTokens.id });
    if (!spent) throw unusable();
    await db
      .update(smartTokens)
      .set({ revokedAt: now })
      .where(and(eq(smartTokens.authorizationId, authorization.id), eq(smartTokens.kind, 'access'), isNull(smartTokens.revokedAt)));
    validTokens.forget(authorization.id);
    await db.delete(smartTokens).where(and(eq(smartTokens.authorizationId, authorization.id), lt(smartTokens.expiresAt, now)));
    return issue(authorization, scope);
  }

  /** RFC 7009: a refresh token revokes its whole grant; an access token just itself. Unknown tokens are ignored. */
  async function revoke(client: SmartClient, token: string): Promise<void> {
    const found = await findToken(token);
    if (!found || found.authorization.clientId !== client.id) return;
    if (found.token.kind === 'refresh') return revokeAuthorization(found.authorization.id);
    await db.update(smartTokens).set({ revokedAt: new Date() }).where(eq(smartTokens.id, found.token.id));
    validTokens.forget(found.token.id);
  }

  /** RFC 7662 (introspectionSchema). */
  async function introspect(token: string, visibleTo: (clientId: string) => Promise<boolean>): Promise<z.input<typeof introspectionSchema>> {
    const found = await findToken(token);
    const now = new Date();
    if (
      !found ||
      found.token.revokedAt ||
      found.authorization.revokedAt ||
      found.token.expiresAt <= now ||
      !(await visibleTo(found.authorization.clientId))
    ) {
      return { active: false };
    }
    const { token: row, authorization } = found;
    return {
      active: true,
      token_type: row.kind === 'access' ? 'Bearer' : 'refresh_token',
      scope: row.scope,
      client_id: authorization.clientId,
      sub: authorization.fhirUser ?? authorization.clientId,
      iss: urls.issuer,
      aud: urls.fhirBase,
      iat: Math.floor(row.createdAt.getTime() / 1000),
      exp: Math.floor(row.expiresAt.getTime() / 1000),
      ...(authorization.patientId ? { patient: authorization.patientId } : {}),
      ...(authorization.encounterId ? { encounter: authorization.encounterId } : {}),
      ...fhirUserClaim(authorization),
    };
  }

  /** An access token (by its verified jti) or a refresh token (by its digest), with its authorization. */
  async function findToken(token: string) {
    let jti: string | undefined;
    try {
      ({
        payload: { jti },
      } = await jwtVerify(token, (await key()).publicKey, { issuer: urls.issuer, algorithms: [SIGNING_ALGORITHM], typ: 'at+jwt' }));
    } catch {
      jti = undefined;
    }
    const [row] = await tokensWithAuthorization(
      or(
        and(eq(smartTokens.id, digest(token)), eq(smartTokens.kind, 'refresh')),
        jti ? and(eq(smartTokens.id, jti), eq(smartTokens.kind, 'access')) : undefined,
      ),
    );
    return row;
  }

  function tokensWithAuthorization(where: SQL | undefined) {
    return db
      .select({ token: smartTokens, authorization: smartAuthorizations })
      .from(smartTokens)
      .innerJoin(smartAuthorizations, eq(smartTokens.authorizationId, smartAuthorizations.id))
      .where(where);
  }

  return {
    issue,
    issueSystem,
    signAccessToken,
    checkAccessToken,
    refresh,
    revoke,
    revokeAuthorization,
    introspect,
    jwks: async () => ({ keys: [(await key()).publicJwk] }),
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
