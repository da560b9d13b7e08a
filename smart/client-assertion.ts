import { lte } from 'drizzle-orm';
import { decodeJwt, decodeProtectedHeader, importJWK, type JWTPayload, errors as joseErrors, jwtVerify, type ProtectedHeaderParameters } from 'jose';
import { type SmartClient, smartClientAssertions } from '../drizzle/schema';
import type { Database } from '../platform/database';
import { excerpt } from '../platform/text';
import { ASSERTION_ALGORITHMS, type AssertionAlgorithm, algorithmsOf, type ClientJwks } from './client-jwks';
import { CLIENT_ASSERTION_TYPE, findClient } from './clients';
import { OAuthError } from './oauth-error';

/** SMART Backend Services: `exp` no more than five minutes in the future. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 300;
/**
 * How far a client's clock may be from ours, on `exp`, `nbf` and `iat` alike: clients sign with
 * `round` or `ceil` of their time, and their clocks drift; production authorization servers allow a
 * minute or more (docs/api/smart-backend-services.md).
 */
export const ASSERTION_CLOCK_SKEW_SECONDS = 60;
/** A signed JWT with a 4096-bit RSA signature is under 2 KiB; anything far larger is not an assertion. */
const MAX_ASSERTION_LENGTH = 8 * 1024;
const MAX_JTI_LENGTH = 256;

/**
 * The client's JWK Set: its registered one, or the one its jwks_uri serves (fetched by the API
 * layer), given the kid the assertion names so a set that lacks it can be fetched again.
 */
export type LoadClientJwks = (client: SmartClient, kid: string) => Promise<ClientJwks>;

export interface AssertionForm {
  clientId: string | undefined;
  assertionType: string | undefined;
  assertion: string | undefined;
}

/**
 * Authenticates a client by its assertion (SMART App Launch 2.x, Backend Services; RFC 7523 §3):
 * `iss` and `sub` are the client_id, `aud` the token endpoint, signed with RS384, ES384, RS256 or
 * ES256 by a key of the client's JWK Set named by `kid`, expiring within five minutes, with a `jti`
 * never seen before for this client while it is valid. Times are read with ASSERTION_CLOCK_SKEW_SECONDS
 * of allowance either way. Every refusal is `invalid_client`.
 */
export async function authenticateByAssertion(
  db: Database,
  form: AssertionForm,
  options: { tokenEndpoint: string; loadJwks: LoadClientJwks; now?: Date },
): Promise<SmartClient> {
  if (form.assertionType !== CLIENT_ASSERTION_TYPE) {
    throw new OAuthError('invalid_client', `client_assertion_type must be ${CLIENT_ASSERTION_TYPE}.`);
  }
  if (!form.assertion) throw new OAuthError('invalid_request', 'client_assertion is required: a JWT signed with the client’s private key.');
  if (form.assertion.length > MAX_ASSERTION_LENGTH)
    throw new OAuthError('invalid_client', `client_assertion is longer than ${MAX_ASSERTION_LENGTH} characters.`);
  const { header, claims } = decode(form.assertion);
  const alg = header.alg;
  if (!(ASSERTION_ALGORITHMS as readonly unknown[]).includes(alg)) {
    throw new OAuthError(
      'invalid_client',
      `The client assertion is signed with ${excerpt(String(alg))}; this server accepts ${ASSERTION_ALGORITHMS.join(', ')}.`,
    );
  }
  if (typeof header.kid !== 'string' || header.kid.length === 0) {
    throw new OAuthError('invalid_client', 'The client assertion header must name its key with kid (SMART Backend Services).');
  }
  if (typeof claims.iss !== 'string' || claims.iss !== claims.sub) {
    throw new OAuthError('invalid_client', 'The client assertion must have iss and sub both equal to the client_id.');
  }
  if (form.clientId !== undefined && form.clientId !== claims.iss) {
    throw new OAuthError('invalid_client', 'client_id differs from the iss and sub of the client assertion.');
  }
  const client = await findClient(db, claims.iss);
  if (!client) throw new OAuthError('invalid_client', `No client ${excerpt(claims.iss)} is registered.`);
  if (client.tokenEndpointAuthMethod !== 'private_key_jwt') {
    throw new OAuthError(
      'invalid_client',
      `This client is registered with token_endpoint_auth_method ${client.tokenEndpointAuthMethod}, not private_key_jwt, so it cannot authenticate with an assertion.`,
    );
  }
  const now = options.now ?? new Date();
  const payload = await verifySignature(form.assertion, alg as AssertionAlgorithm, header.kid, await options.loadJwks(client, header.kid), {
    clientId: client.id,
    tokenEndpoint: options.tokenEndpoint,
    now,
  });
  const nowSeconds = Math.floor(now.getTime() / 1000);
  if (payload.exp > nowSeconds + MAX_ASSERTION_LIFETIME_SECONDS + ASSERTION_CLOCK_SKEW_SECONDS) {
    throw new OAuthError(
      'invalid_client',
      `The client assertion's exp is more than ${MAX_ASSERTION_LIFETIME_SECONDS} seconds ahead (${ASSERTION_CLOCK_SKEW_SECONDS} s of clock skew allowed); make it short-lived.`,
    );
  }
  // jose checks iat only against a maximum age; an assertion issued in the future is a clock far off.
  if (typeof payload.iat === 'number' && payload.iat > nowSeconds + ASSERTION_CLOCK_SKEW_SECONDS) {
    throw new OAuthError(
      'invalid_client',
      `The client assertion's iat is more than ${ASSERTION_CLOCK_SKEW_SECONDS} seconds in the future; check the client's clock.`,
    );
  }
  if (typeof payload.jti !== 'string' || payload.jti.length === 0 || payload.jti.length > MAX_JTI_LENGTH) {
    throw new OAuthError('invalid_client', `The client assertion needs a jti: a unique value of at most ${MAX_JTI_LENGTH} characters.`);
  }
  // Kept as long as the assertion verifies, allowance included, so it cannot be replayed meanwhile.
  await spendJti(db, client.id, payload.jti, new Date((payload.exp + ASSERTION_CLOCK_SKEW_SECONDS) * 1000), now);
  return client;
}

function decode(assertion: string): { header: ProtectedHeaderParameters; claims: JWTPayload } {
  try {
    return { header: decodeProtectedHeader(assertion), claims: decodeJwt(assertion) };
  } catch {
    throw new OAuthError('invalid_client', 'client_assertion is not a signed JWT (JWS compact serialization).');
  }
}

/** Verifies with each key of the set that carries the kid and fits the algorithm; the first that verifies wins. */
async function verifySignature(
  assertion: string,
  alg: AssertionAlgorithm,
  kid: string,
  jwks: ClientJwks,
  expected: { clientId: string; tokenEndpoint: string; now: Date },
): Promise<JWTPayload & { exp: number }> {
  const candidates = jwks.keys.filter((key) => key.kid === kid && algorithmsOf(key).includes(alg));
  if (candidates.length === 0) {
    throw new OAuthError('invalid_client', `The client's JWK Set has no key with kid ${excerpt(kid)} that verifies ${alg}.`);
  }
  for (const candidate of candidates) {
    let key: Awaited<ReturnType<typeof importJWK>>;
    try {
      key = await importJWK(candidate, alg);
    } catch {
      continue;
    }
    try {
      const { payload } = await jwtVerify(assertion, key, {
        algorithms: [alg],
        issuer: expected.clientId,
        subject: expected.clientId,
        audience: expected.tokenEndpoint,
        requiredClaims: ['exp', 'jti'],
        currentDate: expected.now,
        clockTolerance: ASSERTION_CLOCK_SKEW_SECONDS,
      });
      return payload as JWTPayload & { exp: number };
    } catch (error) {
      if (error instanceof joseErrors.JWSSignatureVerificationFailed) continue;
      throw claimRefusal(error, expected.tokenEndpoint);
    }
  }
  throw new OAuthError('invalid_client', `The client assertion's signature does not verify with the key ${excerpt(kid)}.`);
}

function claimRefusal(error: unknown, tokenEndpoint: string): OAuthError {
  if (error instanceof joseErrors.JWTExpired) {
    return new OAuthError('invalid_client', `The client assertion has expired (${ASSERTION_CLOCK_SKEW_SECONDS} s of clock skew allowed).`);
  }
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return new OAuthError('invalid_client', `The client assertion's aud must be the token endpoint, ${tokenEndpoint}.`);
    return new OAuthError('invalid_client', `The client assertion's ${error.claim} claim is not acceptable: ${error.message}.`);
  }
  return new OAuthError('invalid_client', 'The client assertion could not be verified.');
}

/**
 * Records the jti until the assertion expires. Of two requests with the same one, only the first
 * inserts it; a jti whose record has expired may be used again (its old assertion no longer verifies).
 * Expiry is read on the clock that checked `exp` (`now`), never the database's, so the two agree.
 */
async function spendJti(db: Database, clientId: string, jti: string, expiresAt: Date, now: Date): Promise<void> {
  const [spent] = await db
    .insert(smartClientAssertions)
    .values({ clientId, jti, expiresAt })
    .onConflictDoUpdate({
      target: [smartClientAssertions.clientId, smartClientAssertions.jti],
      set: { expiresAt },
      setWhere: lte(smartClientAssertions.expiresAt, now),
    })
    .returning({ jti: smartClientAssertions.jti });
  if (!spent) throw new OAuthError('invalid_client', 'The client assertion has been used already: every assertion needs a new jti.');
}
