import { createHash, randomBytes } from 'node:crypto';

/**
 * Opaque credentials (launch handles, authorization codes, refresh tokens, client secrets): 256
 * random bits, URL-safe. Only their SHA-256 is stored; with that much entropy a slow hash adds
 * nothing and the lookup can use an index.
 */
export function newOpaqueToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function digest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
