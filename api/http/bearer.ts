/**
 * The one reading of `Authorization: Bearer <token>` (RFC 6750 §2.1), for API keys and SMART access
 * tokens alike: `missing` without the header, `malformed` when it is not a single Bearer token.
 */
export type BearerCredential = { kind: 'missing' } | { kind: 'malformed' } | { kind: 'token'; token: string };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function readBearer(header: string | undefined): BearerCredential {
  if (!header) return { kind: 'missing' };
  const match = BEARER.exec(header);
  return match ? { kind: 'token', token: match[1]! } : { kind: 'malformed' };
}
