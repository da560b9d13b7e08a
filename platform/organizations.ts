import { and, asc, eq, isNull, or } from 'drizzle-orm';
import { apiKeys, connections, type Organization, organizations } from '../drizzle/schema';
import type { Database } from './database';
import { newId } from './ids';
import { apiKeyHint, generateApiKey, generateWebhookSecret, hashApiKey } from './secrets';

/** Organizations and their API keys, as provisioned at onboarding (the `keys` CLI and the demo seed). */

export async function createOrganization(db: Database, input: { name: string; webhookUrl?: string | null }): Promise<Organization> {
  const [organization] = await db
    .insert(organizations)
    .values({ id: newId('org'), name: input.name, webhookUrl: input.webhookUrl ?? null, webhookSecret: generateWebhookSecret() })
    .returning();
  return organization!;
}

export interface IssuedApiKey {
  id: string;
  organizationId: string;
  /** The key itself: shown once, never stored. */
  key: string;
  hint: string;
}

/** Stores the hash of `key` (a fresh random key when omitted) for the organization. */
export async function issueApiKey(db: Database, organizationId: string, options: { name?: string; key?: string } = {}): Promise<IssuedApiKey> {
  const key = options.key ?? generateApiKey();
  const row = { id: newId('key'), organizationId, name: options.name ?? null, keyHash: hashApiKey(key), hint: apiKeyHint(key) };
  await db.insert(apiKeys).values(row);
  return { id: row.id, organizationId, key, hint: row.hint };
}

export async function listApiKeys(db: Database) {
  return db
    .select({
      id: apiKeys.id,
      hint: apiKeys.hint,
      name: apiKeys.name,
      organizationId: organizations.id,
      organizationName: organizations.name,
      createdAt: apiKeys.createdAt,
      revokedAt: apiKeys.revokedAt,
    })
    .from(apiKeys)
    .innerJoin(organizations, eq(apiKeys.organizationId, organizations.id))
    .orderBy(asc(apiKeys.id));
}

/** Revokes a key by its id or by the key itself. Returns false when no active key matched. */
export async function revokeApiKey(db: Database, idOrKey: string): Promise<boolean> {
  const revoked = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(or(eq(apiKeys.id, idOrKey), eq(apiKeys.keyHash, hashApiKey(idOrKey))), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return revoked.length > 0;
}

export type KeyLookup = { status: 'active'; organizationId: string; apiKeyId: string } | { status: 'revoked' | 'unknown' };

export async function lookUpApiKey(db: Database, key: string): Promise<KeyLookup> {
  return lookUpApiKeyByHash(db, hashApiKey(key));
}

export async function lookUpApiKeyByHash(db: Database, keyHash: string): Promise<KeyLookup> {
  const [row] = await db
    .select({ id: apiKeys.id, organizationId: apiKeys.organizationId, revokedAt: apiKeys.revokedAt })
    .from(apiKeys)
    .where(eq(apiKeys.keyHash, keyHash))
    .limit(1);
  if (!row) return { status: 'unknown' };
  if (row.revokedAt) return { status: 'revoked' };
  return { status: 'active', organizationId: row.organizationId, apiKeyId: row.id };
}

export const DEMO_ORGANIZATION_NAME = 'Demo Health (synthetic)';

/**
 * Makes sure the demo key works: when its hash is unknown (a fresh database, or a new key), a demo
 * organization is created for it. A revoked demo key is left revoked and reported.
 */
export async function ensureDemoOrganization(db: Database, demoKey: string, options: { webhookUrl: string }): Promise<{ organizationId: string }> {
  const existing = await lookUpApiKey(db, demoKey);
  if (existing.status === 'revoked') {
    throw new Error('The demo API key has been revoked. Set DEMO_API_KEY to another key, or delete .data/demo-api-key to get a new one.');
  }
  if (existing.status === 'active') {
    // Points the demo organization at the relay receiver unless someone chose another URL.
    await db
      .update(organizations)
      .set({ webhookUrl: options.webhookUrl })
      .where(and(eq(organizations.id, existing.organizationId), isNull(organizations.webhookUrl)));
    return { organizationId: existing.organizationId };
  }
  const organization = await createOrganization(db, { name: DEMO_ORGANIZATION_NAME, webhookUrl: options.webhookUrl });
  await issueApiKey(db, organization.id, { name: 'demo', key: demoKey });
  return { organizationId: organization.id };
}

/** Every secret the organization's deliveries may be signed with: its own and its connections'. */
export async function webhookSecretsOf(db: Database, organizationId: string): Promise<string[]> {
  const [organization] = await db.select({ secret: organizations.webhookSecret }).from(organizations).where(eq(organizations.id, organizationId));
  const own = await db.select({ secret: connections.webhookSecret }).from(connections).where(eq(connections.organizationId, organizationId));
  return [organization?.secret, ...own.map((row) => row.secret)].filter((secret): secret is string => Boolean(secret));
}

/** Whether the organization refuses requests that carry a real identifier (docs/api/privacy.md); false (mask) when it does not exist. */
export async function refusesRealIdentifiers(db: Database, organizationId: string): Promise<boolean> {
  const [row] = await db.select({ refuse: organizations.refuseRealIdentifiers }).from(organizations).where(eq(organizations.id, organizationId));
  return row?.refuse ?? false;
}

export async function setRefuseRealIdentifiers(db: Database, organizationId: string, refuse: boolean): Promise<void> {
  await db.update(organizations).set({ refuseRealIdentifiers: refuse, updatedAt: new Date() }).where(eq(organizations.id, organizationId));
}
