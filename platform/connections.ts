import { and, desc, eq, lt } from 'drizzle-orm';
import { type Connection, connections } from '../drizzle/schema';
import type { Database } from './database';
import { newId } from './ids';
import { generateWebhookSecret } from './secrets';

/** The one module that writes `connections`: an organization's connections, each with its own webhook URL and secret when set. */

export async function createConnection(
  db: Database,
  input: { organizationId: string; name: string; environment: string; webhookUrl: string | null; ownSecret: boolean },
): Promise<Connection> {
  const [connection] = await db
    .insert(connections)
    .values({
      id: newId('conn'),
      organizationId: input.organizationId,
      name: input.name,
      environment: input.environment,
      webhookUrl: input.webhookUrl,
      webhookSecret: input.ownSecret ? generateWebhookSecret() : null,
    })
    .returning();
  return connection!;
}

/** Newest first, before the cursor's id when given: at most `limit` rows. */
export async function listConnections(db: Database, organizationId: string, before: string | undefined, limit: number): Promise<Connection[]> {
  return db
    .select()
    .from(connections)
    .where(and(eq(connections.organizationId, organizationId), before ? lt(connections.id, before) : undefined))
    .orderBy(desc(connections.id))
    .limit(limit);
}

/** The organization's connection with this id, or undefined (another organization's is not found either). */
export async function findConnection(db: Database, organizationId: string, id: string): Promise<Connection | undefined> {
  const [connection] = await db
    .select()
    .from(connections)
    .where(and(eq(connections.organizationId, organizationId), eq(connections.id, id)));
  return connection;
}

export interface ConnectionChange {
  name?: string | undefined;
  environment?: string | undefined;
  webhookUrl?: string | null | undefined;
  /** `drop`: the organization secret applies again; `rotate`: a new own secret. */
  secret?: 'drop' | 'rotate' | undefined;
}

/** Applies the change to the organization's connection; undefined when it has none with this id. */
export async function updateConnection(db: Database, organizationId: string, id: string, change: ConnectionChange): Promise<Connection | undefined> {
  const [connection] = await db
    .update(connections)
    .set({
      ...(change.name !== undefined ? { name: change.name } : {}),
      ...(change.environment !== undefined ? { environment: change.environment } : {}),
      ...(change.webhookUrl !== undefined ? { webhookUrl: change.webhookUrl } : {}),
      ...(change.secret === 'drop' ? { webhookSecret: null } : {}),
      ...(change.secret === 'rotate' ? { webhookSecret: generateWebhookSecret() } : {}),
      updatedAt: new Date(),
    })
    .where(and(eq(connections.organizationId, organizationId), eq(connections.id, id)))
    .returning();
  return connection;
}
