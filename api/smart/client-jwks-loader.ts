import { Agent, fetch } from 'undici';
import type { Config } from '../../platform/config';
import { excerpt } from '../../platform/text';
import type { LoadClientJwks } from '../../smart/client-assertion';
import { type ClientJwks, jwksProblems, MAX_JWKS_BYTES } from '../../smart/client-jwks';
import { OAuthError } from '../../smart/oauth-error';
import { checkWebhookTarget, pinnedLookup, type ResolveHost, resolveWithSystem } from '../../webhooks/targets';

/** Resolving, connecting and reading the set, all of it: a slow key server cannot hold a token request long. */
const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** How long a fetched set answers for its kids without asking the client's server again. */
const JWKS_CACHE_MS = 5 * 60_000;
/**
 * A kid the cached set lacks (a rotated key) fetches the set again, but at most once a second per
 * client: the assertion is not verified until its key is known, so a stranger naming a client must
 * not be able to make us fetch its jwks_uri at will. Requests in between wait for that one fetch.
 */
const JWKS_REFETCH_INTERVAL_MS = 1_000;
/** Clients whose sets are held; the least recently fetched is forgotten first. */
const JWKS_CACHE_ENTRIES = 1_000;

interface CachedJwks {
  jwks: ClientJwks | null;
  fetchedAt: number;
  fetching: Promise<ClientJwks> | null;
}

/**
 * A client's JWK Set: the registered one, or the one at its jwks_uri, fetched again when an
 * assertion names a kid the held set lacks, so a rotated key works at once (SMART Backend Services,
 * which asks servers to cache the set and refetch on an unknown kid). The URL is checked as a webhook target is
 * (no private address unless ALLOW_PRIVATE_TARGETS) and fetched from the addresses the check
 * resolved, redirects not followed, within a time and size limit. A set that cannot be had fails
 * the client's authentication, saying why.
 */
export function clientJwksLoader({
  config,
  resolveHost = resolveWithSystem,
}: {
  config: Pick<Config, 'ALLOW_PRIVATE_TARGETS'>;
  resolveHost?: ResolveHost | undefined;
}): LoadClientJwks {
  const fetchJwks = jwksFetcher({ config, resolveHost });
  const cache = new Map<string, CachedJwks>();
  return async (client, kid) => {
    if (client.jwks) return client.jwks as ClientJwks;
    if (!client.jwksUri) throw new OAuthError('invalid_client', 'This client has no JWK Set registered.');
    const key = `${client.id} ${client.jwksUri}`;
    const entry = cache.get(key) ?? { jwks: null, fetchedAt: 0, fetching: null };
    const age = Date.now() - entry.fetchedAt;
    if (entry.jwks && age < JWKS_CACHE_MS && entry.jwks.keys.some((jwk) => jwk.kid === kid)) return entry.jwks;
    if (entry.fetching) return entry.fetching;
    const wait = Math.max(0, JWKS_REFETCH_INTERVAL_MS - age);
    entry.fetching = new Promise((resolve) => setTimeout(resolve, wait))
      .then(() => fetchJwks(client.jwksUri!))
      .then(
        (jwks) => {
          entry.jwks = jwks;
          return jwks;
        },
        (error) => {
          entry.jwks = null;
          throw error;
        },
      )
      .finally(() => {
        entry.fetchedAt = Date.now();
        entry.fetching = null;
      });
    cache.delete(key);
    cache.set(key, entry);
    if (cache.size > JWKS_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    return entry.fetching;
  };
}

/** Fetches and checks the set at a jwks_uri, or fails the client's authentication saying why. */
function jwksFetcher({ config, resolveHost }: { config: Pick<Config, 'ALLOW_PRIVATE_TARGETS'>; resolveHost: ResolveHost }) {
  return async (jwksUri: string): Promise<ClientJwks> => {
    const unusable = (why: string) => new OAuthError('invalid_client', `The client's jwks_uri ${excerpt(jwksUri)} ${why}.`);
    const deadline = AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS);
    const checked = await Promise.race([
      checkWebhookTarget(jwksUri, { allowPrivate: config.ALLOW_PRIVATE_TARGETS, resolveHost }),
      new Promise<null>((resolve) => deadline.addEventListener('abort', () => resolve(null), { once: true })),
    ]);
    if (!checked) throw unusable(`did not resolve within ${JWKS_FETCH_TIMEOUT_MS} ms`);
    if ('refused' in checked) throw unusable(checked.refused);
    if (checked.resolveError) throw unusable(`cannot be reached: ${checked.resolveError}`);
    const pinned = new Agent({ connect: { lookup: pinnedLookup(checked.addresses) } });
    try {
      const response = await fetch(checked.url, {
        headers: { accept: 'application/json, application/jwk-set+json' },
        redirect: 'manual',
        signal: deadline,
        dispatcher: pinned,
      });
      if (response.status !== 200) throw unusable(`answered ${response.status}, not 200 with a JWK Set`);
      const text = await readAtMost(response, MAX_JWKS_BYTES);
      if (text === null) throw unusable(`serves more than ${MAX_JWKS_BYTES} bytes`);
      let jwks: unknown;
      try {
        jwks = JSON.parse(text);
      } catch {
        throw unusable('does not serve JSON');
      }
      const problems = jwksProblems(jwks);
      if (problems.length > 0) {
        throw unusable(`serves an unusable JWK Set: ${problems.map((problem) => `${problem.path.join('.')} ${problem.message}`.trim()).join('; ')}`);
      }
      return jwks as ClientJwks;
    } catch (error) {
      if (error instanceof OAuthError) throw error;
      if ((error as Error).name === 'TimeoutError') throw unusable(`did not answer within ${JWKS_FETCH_TIMEOUT_MS} ms`);
      const cause = (error as { cause?: { code?: string } }).cause;
      throw unusable(`cannot be reached (${cause?.code ?? (error as Error).name})`);
    } finally {
      await pinned.destroy();
    }
  };
}

/** The body as text, or null once it grows past `limit` bytes. */
async function readAtMost(response: Awaited<ReturnType<typeof fetch>>, limit: number): Promise<string | null> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    // Leaving the loop cancels the stream: the rest is never read.
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
