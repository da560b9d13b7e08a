import { randomBytes } from 'node:crypto';

/**
 * Opaque credentials (launch handles, authorization codes, refresh tokens, client secrets): 256
 * random bits, URL-safe. Only their SHA-256 is stored, as for API keys: with that much entropy a
 * slow hash adds nothing and the lookup can use an index.
 */
export function newOpaqueToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

export { hashApiKey as digest } from '../platform/secrets';
