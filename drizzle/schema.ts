import { index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

/** A partner organization. Holds the default webhook target (decisions.md: two-tier targets). */
export const organizations = pgTable('organizations', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  webhookUrl: text('webhook_url'),
  webhookSecret: text('webhook_secret').notNull(),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

/** Machine credentials. Only the SHA-256 of a key is kept; `hint` lets operators recognise it. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name'),
    keyHash: text('key_hash').notNull(),
    hint: text('hint').notNull(),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [uniqueIndex('api_keys_key_hash_idx').on(table.keyHash), index('api_keys_organization_idx').on(table.organizationId)],
);

/** A partner's integration. Its own webhook URL and secret, when set, override the organization's. */
export const connections = pgTable(
  'connections',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    environment: text('environment').notNull(),
    webhookUrl: text('webhook_url'),
    webhookSecret: text('webhook_secret'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [index('connections_organization_id_idx').on(table.organizationId, table.id)],
);

export type Organization = typeof organizations.$inferSelect;
export type ApiKey = typeof apiKeys.$inferSelect;
export type Connection = typeof connections.$inferSelect;

/**
 * Idempotency-Key records (decisions.md): the first response to a key is stored and replayed for
 * 24 h to the same request; a different request with the same key is refused.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    state: text('state', { enum: ['in_progress', 'completed'] }).notNull(),
    responseStatus: integer('response_status'),
    responseContentType: text('response_content_type'),
    responseBody: text('response_body'),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (table) => [primaryKey({ columns: [table.organizationId, table.key] })],
);

export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatusValue = (typeof DELIVERY_STATUSES)[number];

/**
 * One webhook delivery: the stored envelope (the exact bytes every attempt and replay sends) and its
 * state. Its workflow, `delivery-<id>`, owns the state; this row mirrors it for the API.
 */
export const deliveries = pgTable(
  'deliveries',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    connectionId: text('connection_id').references(() => connections.id, { onDelete: 'set null' }),
    scenarioId: text('scenario_id'),
    event: text('event').notNull(),
    environment: text('environment').notNull(),
    status: text('status', { enum: DELIVERY_STATUSES }).notNull(),
    envelopeBody: text('envelope_body').notNull(),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    index('deliveries_organization_id_idx').on(table.organizationId, table.id),
    index('deliveries_organization_status_idx').on(table.organizationId, table.status, table.id),
  ],
);

/** Every attempt of a delivery, as decisions.md lists: number, time, duration, response, error, chaos. */
export const deliveryAttempts = pgTable(
  'delivery_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id')
      .notNull()
      .references(() => deliveries.id, { onDelete: 'cascade' }),
    number: integer('number').notNull(),
    trigger: text('trigger', { enum: ['initial', 'retry', 'replay'] }).notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    durationMs: integer('duration_ms').notNull(),
    targetUrl: text('target_url'),
    targetSource: text('target_source', { enum: ['connection', 'organization'] }),
    outcome: text('outcome', { enum: ['succeeded', 'failed', 'gone'] }).notNull(),
    responseStatus: integer('response_status'),
    responseBody: text('response_body'),
    retryAfterMs: integer('retry_after_ms'),
    error: text('error'),
    chaos: text('chaos'),
  },
  (table) => [uniqueIndex('delivery_attempts_delivery_number_idx').on(table.deliveryId, table.number)],
);

/** The organization's chaos profile (decisions.md): per mode, the first N attempts and/or a rate. */
export const reliabilityProfiles = pgTable('reliability_profiles', {
  organizationId: text('organization_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  profile: jsonb('profile').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

export type Delivery = typeof deliveries.$inferSelect;
export type DeliveryAttempt = typeof deliveryAttempts.$inferSelect;
