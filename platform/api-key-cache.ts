import type { Database, Listen } from './database';
import { createNotifiedCache } from './notified-cache';
import { type KeyLookup, lookUpApiKeyByHash } from './organizations';
import { hashApiKey } from './secrets';

/** The channel the api_keys trigger (drizzle/0009_performance.sql, 0010_smart_token_cache.sql) notifies with a key's id on every update or delete. */
export const API_KEY_CHANGED_CHANNEL = 'api_key_changed';

type ActiveKey = Extract<KeyLookup, { status: 'active' }>;

export interface ApiKeyCache {
  /** The key's answer: at once when this process remembers it (no promise to wait on every request), else from the database. */
  lookUp(key: string): KeyLookup | Promise<KeyLookup>;
}

/**
 * Active API keys remembered by this process (by hash), so a request costs no database round trip for
 * its key. A revocation (any path: the keys CLI, SQL by hand) fires the api_keys trigger, and every
 * process forgets that key within milliseconds (platform/notified-cache.ts). Unknown and revoked keys
 * are never cached: a key issued a moment ago works at once.
 */
export function createApiKeyCache(db: Database, listen: Listen): ApiKeyCache {
  const cache = createNotifiedCache({
    channel: API_KEY_CHANGED_CHANNEL,
    listen,
    lookUp: (hash) => lookUpApiKeyByHash(db, hash),
    keeps: (found): found is ActiveKey => found.status === 'active',
    idsOf: (found) => [found.apiKeyId],
    maxAgeMs: 60_000,
    // Keys are few (one or two per organization).
    maxEntries: 10_000,
  });
  return {
    lookUp(key) {
      const hash = hashApiKey(key);
      return cache.remembered(hash) ?? cache.get(hash);
    },
  };
}
