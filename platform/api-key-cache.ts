import type { Database, Listen } from './database';
import { type KeyLookup, lookUpApiKeyByHash } from './organizations';
import { hashApiKey } from './secrets';

/** The channel the api_keys trigger (drizzle/0009_performance.sql) notifies with a key's id on every update or delete. */
export const API_KEY_CHANGED_CHANNEL = 'api_key_changed';

/**
 * Past this age an entry is looked up again, in case a notification was lost before the listening
 * connection noticed it had dropped: the bound on a revoked key's life when NOTIFY fails.
 */
const MAX_AGE_MS = 60_000;
// Keys are few (one or two per organization); the bound only stops a flood of valid keys growing the map.
const MAX_ENTRIES = 10_000;

interface Entry {
  organizationId: string;
  apiKeyId: string;
  cachedAt: number;
}

export interface ApiKeyCache {
  lookUp(key: string): Promise<KeyLookup>;
}

/**
 * Active API keys remembered by this process, so a request costs no database round trip for its key.
 * A revocation (any path: the keys CLI, SQL by hand) fires the api_keys trigger, whose NOTIFY reaches
 * every process listening on the database, which forgets that key within milliseconds. Nothing is
 * cached until LISTEN is in place, and everything is forgotten whenever it is re-established.
 * Unknown and revoked keys are never cached: a key issued a moment ago works at once.
 */
export function createApiKeyCache(db: Database, listen: Listen): ApiKeyCache {
  const entries = new Map<string, Entry>();
  let listening = false;
  // Bumped on every invalidation, so a lookup that started before a revocation does not cache its stale answer.
  let generation = 0;
  const forgetAll = () => {
    entries.clear();
    generation += 1;
  };

  void listen(
    API_KEY_CHANGED_CHANNEL,
    (apiKeyId) => {
      generation += 1;
      for (const [hash, entry] of entries) if (entry.apiKeyId === apiKeyId) entries.delete(hash);
    },
    () => {
      forgetAll();
      listening = true;
    },
  ).catch(() => {
    // Without LISTEN nothing is cached: every request asks the database, as it did before the cache.
    listening = false;
  });

  return {
    async lookUp(key) {
      const hash = hashApiKey(key);
      const cached = entries.get(hash);
      if (cached) {
        if (Date.now() - cached.cachedAt < MAX_AGE_MS) return { status: 'active', organizationId: cached.organizationId, apiKeyId: cached.apiKeyId };
        entries.delete(hash);
      }
      const startedAt = generation;
      const found = await lookUpApiKeyByHash(db, hash);
      if (found.status === 'active' && listening && startedAt === generation) {
        if (entries.size >= MAX_ENTRIES) entries.clear();
        entries.set(hash, { organizationId: found.organizationId, apiKeyId: found.apiKeyId, cachedAt: Date.now() });
      }
      return found;
    },
  };
}
