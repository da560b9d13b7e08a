import { and, desc, eq, lt } from 'drizzle-orm';
import { z } from 'zod';
import { type Connection, connections } from '../../drizzle/schema';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { idSchema, newId } from '../../platform/ids';
import { generateWebhookSecret, maskSecret } from '../../platform/secrets';
import type { ResolveHost } from '../../webhooks/targets';
import { ownedConnection } from '../http/owned-rows';
import { decodeCursor, pageQuerySchema, pageSchema, toPage } from '../http/pagination';
import { guardRequest, privacyWarningSchema, withWarnings } from '../http/privacy';
import { defineRoute } from '../http/route';
import { assertDeliverableUrl, rotateSecretField, webhookUrlField } from './target-fields';

export const CONNECTION_ENVIRONMENTS = ['sandbox', 'development', 'staging', 'production'] as const;

const connectionSchema = z
  .object({
    id: z.string().meta({ example: 'conn_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    name: z.string(),
    environment: z.enum(CONNECTION_ENVIRONMENTS),
    webhook_url: z.string().nullable().meta({ description: 'Own receiver URL; null when the organization default applies' }),
    webhook_secret: z
      .string()
      .nullable()
      .meta({ description: 'Own signing secret (masked except when just issued); null when the organization default applies' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    warnings: z
      .array(privacyWarningSchema)
      .optional()
      .meta({ description: 'When the name sent held a real identifier: what the privacy guard masked (docs/api/privacy.md)' }),
  })
  .meta({ id: 'Connection' });

const nameField = z.string().trim().min(1, 'name must not be empty').max(200, 'name must be at most 200 characters');
const environmentField = z.enum(CONNECTION_ENVIRONMENTS, { message: `environment must be one of ${CONNECTION_ENVIRONMENTS.join(', ')}` });

const createConnectionSchema = z
  .object({
    name: nameField,
    environment: environmentField.default('sandbox'),
    webhook_url: webhookUrlField.optional(),
    rotate_secret: rotateSecretField.optional().meta({ description: 'true gives the connection its own signing secret, answered in full once' }),
  })
  .strict()
  .meta({ id: 'CreateConnection' });

const updateConnectionSchema = z
  .object({
    name: nameField.optional(),
    environment: environmentField.optional(),
    webhook_url: webhookUrlField.optional(),
    webhook_secret: z.null().optional().meta({ description: "null drops the connection's own secret, so the organization secret applies" }),
    rotate_secret: rotateSecretField.optional(),
  })
  .strict()
  .refine((body) => !(body.rotate_secret && body.webhook_secret === null), {
    message: 'send either rotate_secret: true or webhook_secret: null, not both',
    path: ['rotate_secret'],
  })
  .meta({ id: 'UpdateConnection' });

const connectionParams = z.object({ connection_id: idSchema('conn') });

function present(connection: Connection, revealSecret = false): z.input<typeof connectionSchema> {
  const secret = connection.webhookSecret;
  return {
    id: connection.id,
    name: connection.name,
    environment: connection.environment as (typeof CONNECTION_ENVIRONMENTS)[number],
    webhook_url: connection.webhookUrl,
    webhook_secret: secret === null ? null : revealSecret ? secret : maskSecret(secret),
    created_at: connection.createdAt.toISOString(),
    updated_at: connection.updatedAt.toISOString(),
  };
}

/** Connections (the spec's per-connection tier): each may override the organization webhook URL and secret. */
export function connectionRoutes({ db, config, resolveHost }: { db: Database; config: Config; resolveHost?: ResolveHost }) {
  const findOwned = (organizationId: string, id: string) => ownedConnection(db, organizationId, id, 'path.connection_id');

  return [
    defineRoute({
      method: 'post',
      path: '/v1/connections',
      operationId: 'createConnection',
      summary: 'Create a connection',
      tag: 'Connections',
      auth: 'api_key',
      body: createConnectionSchema,
      success: { status: 201, description: 'The new connection', schema: connectionSchema },
      errors: [415, 422],
      // The secret is shown once: an Idempotency-Key replay answers it masked, so the key's store never holds it.
      replayed: (connection) => ({
        ...connection,
        webhook_secret: connection.webhook_secret === null || connection.webhook_secret === undefined ? null : maskSecret(connection.webhook_secret),
      }),
      handler: async ({ auth, body }) => {
        await assertDeliverableUrl(body.webhook_url, config, resolveHost);
        const name = await guardRequest(db, auth.organizationId, body.name, 'body.name');
        const [connection] = await db
          .insert(connections)
          .values({
            id: newId('conn'),
            organizationId: auth.organizationId,
            name: name.value,
            environment: body.environment,
            webhookUrl: body.webhook_url ?? null,
            webhookSecret: body.rotate_secret ? generateWebhookSecret() : null,
          })
          .returning();
        return withWarnings(present(connection!, true), name.warnings);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/connections',
      operationId: 'listConnections',
      summary: 'List connections, newest first',
      tag: 'Connections',
      auth: 'api_key',
      query: pageQuerySchema,
      success: { status: 200, description: 'A page of connections', schema: pageSchema(connectionSchema) },
      errors: [400, 422],
      handler: async ({ auth, query }) => {
        const before = decodeCursor(query.cursor);
        const rows = await db
          .select()
          .from(connections)
          .where(and(eq(connections.organizationId, auth.organizationId), before ? lt(connections.id, before) : undefined))
          .orderBy(desc(connections.id))
          .limit(query.limit + 1);
        return toPage(rows, query.limit, (row) => present(row));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/connections/{connection_id}',
      operationId: 'getConnection',
      summary: 'Read a connection',
      tag: 'Connections',
      auth: 'api_key',
      params: connectionParams,
      success: { status: 200, description: 'The connection', schema: connectionSchema },
      errors: [404],
      handler: async ({ auth, params }) => present(await findOwned(auth.organizationId, params.connection_id)),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/connections/{connection_id}',
      operationId: 'updateConnection',
      summary: 'Rename a connection, set or clear its own webhook URL, rotate or drop its own secret',
      tag: 'Connections',
      auth: 'api_key',
      params: connectionParams,
      body: updateConnectionSchema,
      success: { status: 200, description: 'The updated connection', schema: connectionSchema },
      errors: [404, 415, 422],
      handler: async ({ auth, params, body }) => {
        await findOwned(auth.organizationId, params.connection_id);
        await assertDeliverableUrl(body.webhook_url, config, resolveHost);
        const name = body.name === undefined ? undefined : await guardRequest(db, auth.organizationId, body.name, 'body.name');
        const [connection] = await db
          .update(connections)
          .set({
            ...(name !== undefined ? { name: name.value } : {}),
            ...(body.environment !== undefined ? { environment: body.environment } : {}),
            ...(body.webhook_url !== undefined ? { webhookUrl: body.webhook_url } : {}),
            ...(body.webhook_secret === null ? { webhookSecret: null } : {}),
            ...(body.rotate_secret ? { webhookSecret: generateWebhookSecret() } : {}),
            updatedAt: new Date(),
          })
          .where(and(eq(connections.organizationId, auth.organizationId), eq(connections.id, params.connection_id)))
          .returning();
        return withWarnings(present(connection!, body.rotate_secret === true), name?.warnings ?? []);
      },
    }),
  ];
}
