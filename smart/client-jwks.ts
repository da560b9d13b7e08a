import { z } from 'zod';

/**
 * The JWK Set a backend services client authenticates with (SMART App Launch 2.x, Backend Services;
 * RFC 7517): public signing keys only, few and small, each named by `kid` so an assertion can say
 * which one signed it.
 */

/** What a client assertion may be signed with: SMART requires RS384 and ES384; RS256 and ES256 are common too. Never `none` or HMAC. */
export const ASSERTION_ALGORITHMS = ['RS384', 'ES384', 'RS256', 'ES256'] as const;
export type AssertionAlgorithm = (typeof ASSERTION_ALGORITHMS)[number];

export const MAX_JWKS_KEYS = 10;
/** The serialized set, inline or fetched: ten 4096-bit RSA keys fit with room to spare. */
export const MAX_JWKS_BYTES = 64 * 1024;

/** Members that only a private (or symmetric) key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
const CURVE_OF: Record<string, AssertionAlgorithm[]> = { 'P-256': ['ES256'], 'P-384': ['ES384'] };
const RSA_ALGORITHMS: AssertionAlgorithm[] = ['RS384', 'RS256'];
const MIN_RSA_MODULUS_BITS = 2048;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export type ClientJwk = Record<string, unknown> & { kty: string; kid: string };
export interface ClientJwks {
  keys: ClientJwk[];
}

/** Why a JWK Set cannot authenticate a client: one message per problem, each naming the key (empty when it can). */
export function jwksProblems(value: unknown): { path: (string | number)[]; message: string }[] {
  if (Buffer.byteLength(JSON.stringify(value) ?? '') > MAX_JWKS_BYTES)
    return [{ path: [], message: `the JWK Set must be at most ${MAX_JWKS_BYTES} bytes` }];
  if (typeof value !== 'object' || value === null || !Array.isArray((value as { keys?: unknown }).keys)) {
    return [{ path: ['keys'], message: 'a JWK Set is an object with a keys array (RFC 7517 §5)' }];
  }
  const keys = (value as { keys: unknown[] }).keys;
  if (keys.length === 0) return [{ path: ['keys'], message: 'the JWK Set holds no key' }];
  if (keys.length > MAX_JWKS_KEYS) return [{ path: ['keys'], message: `at most ${MAX_JWKS_KEYS} keys` }];
  return keys.flatMap((key, index) => keyProblems(key).map((message) => ({ path: ['keys', index], message })));
}

/** The algorithms a key can verify: its `alg` when it names one, else those its type and curve fit. */
export function algorithmsOf(key: ClientJwk): AssertionAlgorithm[] {
  const fitting = key.kty === 'RSA' ? RSA_ALGORITHMS : key.kty === 'EC' ? (CURVE_OF[String(key.crv)] ?? []) : [];
  return typeof key.alg === 'string' ? fitting.filter((alg) => alg === key.alg) : fitting;
}

function keyProblems(key: unknown): string[] {
  if (typeof key !== 'object' || key === null || Array.isArray(key)) return ['each key must be a JSON object (a JWK)'];
  const jwk = key as Record<string, unknown>;
  const present = PRIVATE_MEMBERS.filter((member) => Object.hasOwn(jwk, member));
  if (present.length > 0) {
    return [`holds private key material (${present.join(', ')}): register the public key only, and keep the private key with the client`];
  }
  const problems: string[] = [];
  if (typeof jwk.kid !== 'string' || jwk.kid.length === 0 || jwk.kid.length > 256) {
    problems.push('kid is required (1 to 256 characters): assertions name the key that signed them by kid');
  }
  if (jwk.kty === 'RSA') {
    if (typeof jwk.n !== 'string' || !BASE64URL.test(jwk.n) || typeof jwk.e !== 'string' || !BASE64URL.test(jwk.e)) {
      problems.push('an RSA key needs n and e, base64url-encoded');
    } else if (Buffer.from(jwk.n, 'base64url').length * 8 < MIN_RSA_MODULUS_BITS) {
      problems.push(`an RSA key must be at least ${MIN_RSA_MODULUS_BITS} bits`);
    }
  } else if (jwk.kty === 'EC') {
    if (!Object.hasOwn(CURVE_OF, String(jwk.crv))) problems.push(`crv must be ${Object.keys(CURVE_OF).join(' or ')}`);
    if (typeof jwk.x !== 'string' || !BASE64URL.test(jwk.x) || typeof jwk.y !== 'string' || !BASE64URL.test(jwk.y)) {
      problems.push('an EC key needs x and y, base64url-encoded');
    }
  } else {
    problems.push(`kty must be RSA or EC (got ${JSON.stringify(jwk.kty)}): assertions are signed with ${ASSERTION_ALGORITHMS.join(', ')}`);
  }
  if (jwk.alg !== undefined && !(ASSERTION_ALGORITHMS as readonly unknown[]).includes(jwk.alg)) {
    problems.push(`alg must be one of ${ASSERTION_ALGORITHMS.join(', ')} (got ${JSON.stringify(jwk.alg)})`);
  } else if (problems.length === 0 && algorithmsOf(jwk as ClientJwk).length === 0) {
    problems.push(`alg ${String(jwk.alg)} does not fit a ${String(jwk.kty)} key${jwk.kty === 'EC' ? ` on ${String(jwk.crv)}` : ''}`);
  }
  if (jwk.use !== undefined && jwk.use !== 'sig') problems.push('use, when given, must be sig');
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) {
    problems.push('key_ops, when given, must include verify');
  }
  return problems;
}

/** The JWK Set as a request field: checked by jwksProblems, documented as RFC 7517. */
export const jwksField = z
  .object({ keys: z.array(z.looseObject({ kty: z.string().optional(), kid: z.string().optional() })) })
  .loose()
  .superRefine((value, context) => {
    for (const problem of jwksProblems(value)) context.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  })
  .meta({
    id: 'ClientJwks',
    description: `Public keys (RFC 7517 JWK Set), RSA (2048 bits or more) or EC (P-256, P-384), each with a kid; at most ${MAX_JWKS_KEYS}. A key holding private members (d, p, q, …) is refused.`,
  });
