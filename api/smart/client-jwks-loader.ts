import { Agent, fetch } from 'undici';
import type { Config } from '../../platform/config';
import { excerpt } from '../../platform/text';
import type { LoadClientJwks } from '../../smart/client-assertion';
import { type ClientJwks, jwksProblems, MAX_JWKS_BYTES } from '../../smart/client-jwks';
import { OAuthError } from '../../smart/oauth-error';
import { checkWebhookTarget, pinnedLookup, type ResolveHost, resolveWithSystem } from '../../webhooks/targets';

/** Resolving, connecting and reading the set, all of it: a slow key server cannot hold a token request long. */
const JWKS_FETCH_TIMEOUT_MS = 5_000;

/**
 * A client's JWK Set: the registered one, or the one at its jwks_uri, fetched at every assertion so
 * a rotated key works at once (SMART Backend Services). The URL is checked as a webhook target is
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
  return async (client) => {
    if (client.jwks) return client.jwks as ClientJwks;
    if (!client.jwksUri) throw new OAuthError('invalid_client', 'This client has no JWK Set registered.');
    const unusable = (why: string) => new OAuthError('invalid_client', `The client's jwks_uri ${excerpt(client.jwksUri!)} ${why}.`);
    const deadline = AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS);
    const checked = await Promise.race([
      checkWebhookTarget(client.jwksUri, { allowPrivate: config.ALLOW_PRIVATE_TARGETS, resolveHost }),
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
