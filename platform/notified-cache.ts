import { isDatabaseUnavailable, type Listen } from './database';

export interface NotifiedCacheOptions<Answer, Kept extends Answer> {
  /** The channel a trigger NOTIFYs, with the row's id, on every update or delete of the rows answers are read from. */
  channel: string;
  listen: Listen;
  /** Asks the database, for every key not remembered. */
  lookUp(key: string): Promise<Answer>;
  /** Which answers are remembered: positive ones only, so a refusal is asked again and a new credential works at once. */
  keeps(answer: Answer): answer is Kept;
  /** The ids of the rows a kept answer was read from: a notification naming any of them forgets it. */
  idsOf(answer: Kept): readonly string[];
  /** When a kept answer stops being true by itself (epoch ms, e.g. a token's expiry): it is never served from then on. */
  expiresAt?(answer: Kept): number;
  /**
   * Past this age an answer is looked up again, in case a notification was lost before the listening
   * connection noticed it had dropped: the bound on a stale answer's life when NOTIFY fails.
   */
  maxAgeMs: number;
  /** Past this many entries the cache starts over: it only stops a flood of valid keys growing the map. */
  maxEntries: number;
}

export interface NotifiedCache<Answer> {
  get(key: string): Promise<Answer>;
  /**
   * The answer `get` would give at once, without a lookup, or undefined when it would ask the
   * database: for the callers on every request, which then need not wait a promise for what is at hand.
   */
  remembered(key: string): Answer | undefined;
  /**
   * Forgets every answer read from row `id`, in this process and at once: for a change this process
   * has just committed, so its own next request does not wait for the NOTIFY (which reaches the others).
   */
  forget(id: string): void;
}

interface Entry<Kept> {
  answer: Kept;
  ids: readonly string[];
  /** Epoch ms from which the answer is no longer served: its max age or its own expiry, whichever comes first. */
  until: number;
}

/**
 * Positive lookups remembered by this process, kept honest by the database: a trigger NOTIFYs every
 * change to the rows they were read from, whatever path made it, and every process LISTENing forgets
 * the answers naming that row within milliseconds. Nothing is cached until LISTEN is in place, and
 * everything is forgotten whenever it is (re)established, since notifications sent meanwhile are lost.
 * While LISTEN is down (platform/listener.ts says so at once) every answer is asked of the database
 * again; a remembered one is served only when the database cannot be reached at all.
 */
export function createNotifiedCache<Answer, Kept extends Answer>(options: NotifiedCacheOptions<Answer, Kept>): NotifiedCache<Answer> {
  const entries = new Map<string, Entry<Kept>>();
  /**
   * Lookups under way, by key: callers that miss together (every connection of a busy client, when
   * its key's answer reaches its max age) share one query instead of each sending its own. Emptied
   * at every invalidation: a caller after a change never shares a lookup begun before it.
   */
  const lookingUp = new Map<string, Promise<Answer>>();
  let listening = false;
  // Bumped on every invalidation, so a lookup that started before a change does not cache its stale answer.
  let generation = 0;
  const forget = (id: string) => {
    generation += 1;
    lookingUp.clear();
    for (const [key, entry] of entries) if (entry.ids.includes(id)) entries.delete(key);
  };

  void options
    .listen(
      options.channel,
      forget,
      () => {
        entries.clear();
        generation += 1;
        lookingUp.clear();
        listening = true;
      },
      () => {
        // Notifications are missed from now on: until LISTEN is back every answer is asked again.
        generation += 1;
        lookingUp.clear();
        listening = false;
      },
    )
    .catch(() => {
      // Without LISTEN nothing is cached: every lookup asks the database, as it would without the cache.
      listening = false;
    });

  const remember = (key: string, answer: Kept) => {
    if (entries.size >= options.maxEntries) entries.clear();
    const until = Math.min(Date.now() + options.maxAgeMs, options.expiresAt?.(answer) ?? Number.POSITIVE_INFINITY);
    entries.set(key, { answer, ids: options.idsOf(answer), until });
  };

  const lookUpAndRemember = async (key: string, fresh: Entry<Kept> | undefined): Promise<Answer> => {
    const startedAt = generation;
    const answer = await options.lookUp(key);
    if (!options.keeps(answer)) entries.delete(key);
    else if (startedAt === generation && (listening || fresh)) remember(key, answer);
    return answer;
  };
  return {
    remembered(key) {
      if (!listening) return undefined;
      const cached = entries.get(key);
      return cached && Date.now() < cached.until ? cached.answer : undefined;
    },
    async get(key) {
      const cached = entries.get(key);
      if (cached && Date.now() >= cached.until) entries.delete(key);
      const fresh = cached && Date.now() < cached.until ? cached : undefined;
      if (fresh && listening) return fresh.answer;
      let lookup = lookingUp.get(key);
      if (!lookup) {
        const started = lookUpAndRemember(key, fresh).finally(() => {
          if (lookingUp.get(key) === started) lookingUp.delete(key);
        });
        lookingUp.set(key, started);
        lookup = started;
      }
      try {
        return await lookup;
      } catch (error) {
        // Not listening and the database out of reach: nobody can revoke meanwhile (a revocation is a
        // write), so the last answer read stands until the database answers again.
        if (fresh && isDatabaseUnavailable(error)) return fresh.answer;
        throw error;
      }
    },
    forget,
  };
}
