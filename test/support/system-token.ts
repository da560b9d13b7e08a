import { randomUUID } from 'node:crypto';
import { smartAuthorizations } from '../../drizzle/schema';
import { canEvaluate } from '../../fhir/search-parameters';
import { registerClient } from '../../smart/clients';
import { smartUrls } from '../../smart/endpoints';
import { createTokenService } from '../../smart/tokens';
import type { TestService } from './service';

/**
 * A system-level access token for an organization (`system/*.rs` by default), issued by the same
 * function the OAuth token endpoint issues tokens with (smart/tokens.ts `issue`), for a client
 * registered to that organization. Stands in for the SMART Backend Services client_credentials grant
 * until that grant is on main; the FHIR endpoint checks these tokens exactly as any other.
 */
const tokenServices = new WeakMap<TestService, ReturnType<typeof createTokenService>>();

export async function systemToken(service: TestService, organizationId: string, scope = 'system/*.rs'): Promise<string> {
  const { db, listen } = service.database;
  let tokens = tokenServices.get(service);
  if (!tokens) {
    tokens = createTokenService({ db, lifetimes: service.config, urls: smartUrls(service.config.PUBLIC_BASE_URL), listen, canFilter: canEvaluate });
    tokenServices.set(service, tokens);
  }
  const { client } = await registerClient(db, organizationId, {
    name: 'Bulk export test client (synthetic)',
    redirectUris: [],
    scope: null,
    tokenEndpointAuthMethod: 'client_secret_basic',
    launchUri: null,
  });
  const [authorization] = await db
    .insert(smartAuthorizations)
    .values({
      id: randomUUID(),
      clientId: client.id,
      launchKind: 'standalone',
      redirectUri: '',
      state: '',
      scope,
      codeChallenge: '',
      patientId: null,
      encounterId: null,
      fhirUser: null,
      expiresAt: new Date(),
      exchangedAt: new Date(),
    })
    .returning();
  return (await tokens.issue(authorization!, scope)).access_token;
}
