import { type AnyPgColumn, boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { AUTHORIZATION_DECISIONS, PRIOR_AUTH_OUTCOMES } from '../claims/pas/vocabulary';
import { NOTIFICATION_TYPES, PAYLOAD_CONTENTS, PAYLOAD_MIME_TYPES, SUBSCRIPTION_STATUSES } from '../fhir/subscriptions/vocabulary';
import { HL7_CONFORMANCE_MODES } from '../hl7/vocabulary';
import { AGGREGATOR_QUERY_STATUSES } from '../interop/aggregator/vocabulary';
import { EXPORT_FILE_KINDS, EXPORT_STATUSES } from '../interop/bulk-export/vocabulary';
import { SCENARIO_RUN_STATUSES } from '../scenarios/vocabulary';
import { ATTEMPT_OUTCOMES, ATTEMPT_TRIGGERS, CHAOS_MODES, DELIVERY_STATUSES, TARGET_SOURCES } from '../webhooks/vocabulary';

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

/** A partner organization. Holds the default webhook target (CONVENTIONS.md: two-tier targets). */
export const organizations = pgTable('organizations', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  webhookUrl: text('webhook_url'),
  webhookSecret: text('webhook_secret').notNull(),
  /** Whether a real identifier (privacy/guard.ts) refuses a request on every channel, rather than being masked with a warning. */
  refuseRealIdentifiers: boolean('refuse_real_identifiers').notNull().default(false),
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

/**
 * A connection's HL7 identity: the receiving application and facility (MSH-5, MSH-6) its messages
 * name, unique within its organization, and its MLLP token (sent in MSH-8), which is what proves
 * an MLLP message comes from the organization: only the token's SHA-256 is kept, as for API keys.
 */
export const hl7Identities = pgTable(
  'hl7_identities',
  {
    connectionId: text('connection_id')
      .primaryKey()
      .references(() => connections.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    receivingApplication: text('receiving_application').notNull(),
    receivingFacility: text('receiving_facility').notNull(),
    /** SHA-256 of the MLLP token; null for an identity set before tokens existed (MLLP refuses it until one is issued). */
    mllpTokenHash: text('mllp_token_hash'),
    /** The token's first and last characters, so a partner can tell which one an engine is set up with. */
    mllpTokenHint: text('mllp_token_hint'),
    /** How messages for this connection are checked when the request does not say (issue 21). */
    conformance: text('conformance', { enum: HL7_CONFORMANCE_MODES }).notNull().default('lenient'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('hl7_identities_receiver_idx').on(table.organizationId, table.receivingApplication, table.receivingFacility),
    uniqueIndex('hl7_identities_mllp_token_idx').on(table.mllpTokenHash),
  ],
);

export type Organization = typeof organizations.$inferSelect;
export type Connection = typeof connections.$inferSelect;
export type IdempotencyKey = typeof idempotencyKeys.$inferSelect;

/**
 * Idempotency-Key records (CONVENTIONS.md): the first response to a key is stored and replayed for
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
    /** The work the request planned (its business id first), so a retry after a lost answer plans the same (api/http/accepted-work.ts). */
    reservation: jsonb('reservation'),
    /** The process and time of the request handling the key now; null once it answered or gave the key back. */
    claimedBy: text('claimed_by'),
    claimedAt: timestamp('claimed_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [primaryKey({ columns: [table.organizationId, table.key] }), index('idempotency_keys_expires_at_idx').on(table.expiresAt)],
);

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
    /** MSH-10 of the HL7 v2 message this delivery carries, when it came from an HL7 inject. */
    hl7ControlId: text('hl7_control_id'),
    /** For a `webhook.delivery.exhausted` delivery: the delivery that failed for good (one report per failure). */
    sourceDeliveryId: text('source_delivery_id').references((): AnyPgColumn => deliveries.id, { onDelete: 'set null' }),
    /** The FHIR Subscription this delivery notifies (its endpoint, headers and MIME type are the target), when one does. */
    subscriptionId: text('subscription_id').references((): AnyPgColumn => fhirSubscriptions.id),
    /** The scenario run and step that emitted this delivery, when a run did. */
    runId: text('run_id'),
    stepId: text('step_id'),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    index('deliveries_organization_id_idx').on(table.organizationId, table.id),
    index('deliveries_organization_status_idx').on(table.organizationId, table.status, table.id),
    uniqueIndex('deliveries_source_delivery_id_idx').on(table.sourceDeliveryId),
    index('deliveries_created_at_idx').on(table.createdAt),
    index('deliveries_run_idx').on(table.runId),
  ],
);

/**
 * Claim checks for envelopes too large for a delivery workflow's input (Temporal refuses payloads
 * over 2 MB): the trigger stores the envelope here under the delivery's id before starting the
 * workflow, which carries only that id. Recording the delivery row moves the envelope into it, so at
 * rest it is stored once; a row left here is a start that never happened (webhooks/claim-check.ts).
 */
export const stagedEnvelopes = pgTable(
  'staged_envelopes',
  {
    deliveryId: text('delivery_id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    envelopeBody: text('envelope_body').notNull(),
    createdAt: createdAt(),
  },
  (table) => [index('staged_envelopes_created_at_idx').on(table.createdAt)],
);

/** Every attempt of a delivery, as CONVENTIONS.md lists: number, time, duration, response, error, chaos. */
export const deliveryAttempts = pgTable(
  'delivery_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id')
      .notNull()
      .references(() => deliveries.id, { onDelete: 'cascade' }),
    number: integer('number').notNull(),
    trigger: text('trigger', { enum: ATTEMPT_TRIGGERS }).notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** Null while the attempt is `sending`, and when its outcome is `unknown`. */
    durationMs: integer('duration_ms'),
    targetUrl: text('target_url'),
    targetSource: text('target_source', { enum: TARGET_SOURCES }),
    outcome: text('outcome', { enum: ATTEMPT_OUTCOMES }).notNull(),
    responseStatus: integer('response_status'),
    responseBody: text('response_body'),
    retryAfterMs: integer('retry_after_ms'),
    error: text('error'),
    chaos: text('chaos', { enum: CHAOS_MODES }),
  },
  (table) => [uniqueIndex('delivery_attempts_delivery_number_idx').on(table.deliveryId, table.number)],
);

/** The organization's reliability profile (webhooks/chaos.ts, CONVENTIONS.md: the chaos profile): per mode, the first N attempts and/or a rate. */
export const reliabilityProfiles = pgTable('reliability_profiles', {
  organizationId: text('organization_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  profile: jsonb('profile').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

export type Delivery = typeof deliveries.$inferSelect;
export type DeliveryAttempt = typeof deliveryAttempts.$inferSelect;

const expiresAt = () => timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull();

/**
 * SMART on FHIR clients (RFC 7591 metadata names). A confidential client's secret is kept as its
 * SHA-256 only; `scope` (when set) bounds what the client may ever be granted. A backend services
 * client (private_key_jwt) has no redirect URIs and holds public keys instead: a JWK Set, inline or
 * at its `jwks_uri`.
 */
export const smartClients = pgTable(
  'smart_clients',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    redirectUris: jsonb('redirect_uris').$type<string[]>().notNull(),
    scope: text('scope'),
    tokenEndpointAuthMethod: text('token_endpoint_auth_method', { enum: ['none', 'client_secret_basic', 'private_key_jwt'] }).notNull(),
    launchUri: text('launch_uri'),
    secretHash: text('secret_hash'),
    jwks: jsonb('jwks').$type<{ keys: Record<string, unknown>[] }>(),
    jwksUri: text('jwks_uri'),
    createdAt: createdAt(),
  },
  (table) => [index('smart_clients_organization_idx').on(table.organizationId, table.id)],
);

/** EHR launch handles: opaque to the app, bound to one client, used once, short-lived. Stored hashed. */
export const smartLaunches = pgTable(
  'smart_launches',
  {
    handleHash: text('handle_hash').primaryKey(),
    clientId: text('client_id')
      .notNull()
      .references(() => smartClients.id, { onDelete: 'cascade' }),
    patientId: text('patient_id').notNull(),
    encounterId: text('encounter_id'),
    createdAt: createdAt(),
    expiresAt: expiresAt(),
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [index('smart_launches_expires_at_idx').on(table.expiresAt)],
);

/**
 * One authorization: a standalone request waiting at the patient picker, then a single-use code
 * (kept as its SHA-256), then the grant its tokens belong to. Revoking it revokes every token.
 * A client_credentials grant (`system`) is one too, born granted: no redirect, state or PKCE (empty),
 * never exchanged, expiring with its access token.
 */
export const smartAuthorizations = pgTable(
  'smart_authorizations',
  {
    id: text('id').primaryKey(),
    clientId: text('client_id')
      .notNull()
      .references(() => smartClients.id, { onDelete: 'cascade' }),
    launchKind: text('launch_kind', { enum: ['ehr', 'standalone', 'system'] }).notNull(),
    redirectUri: text('redirect_uri').notNull(),
    state: text('state').notNull(),
    scope: text('scope').notNull(),
    codeChallenge: text('code_challenge').notNull(),
    nonce: text('nonce'),
    patientId: text('patient_id'),
    encounterId: text('encounter_id'),
    fhirUser: text('fhir_user'),
    codeHash: text('code_hash'),
    createdAt: createdAt(),
    /** Until when the current step is valid: the picker request, then the code. */
    expiresAt: expiresAt(),
    exchangedAt: timestamp('exchanged_at', { withTimezone: true, mode: 'date' }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [
    uniqueIndex('smart_authorizations_code_hash_idx').on(table.codeHash),
    index('smart_authorizations_client_idx').on(table.clientId),
    index('smart_authorizations_expires_at_idx').on(table.expiresAt),
  ],
);

/** Issued tokens: access tokens by their JWT `jti`, refresh tokens by their SHA-256. */
export const smartTokens = pgTable(
  'smart_tokens',
  {
    id: text('id').primaryKey(),
    authorizationId: text('authorization_id')
      .notNull()
      .references(() => smartAuthorizations.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['access', 'refresh'] }).notNull(),
    scope: text('scope').notNull(),
    createdAt: createdAt(),
    expiresAt: expiresAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [index('smart_tokens_authorization_idx').on(table.authorizationId), index('smart_tokens_expires_at_idx').on(table.expiresAt)],
);

/**
 * The `jti` of every client assertion (RFC 7523) accepted, until it expires: one used again within
 * its lifetime is refused, whichever API process sees it.
 */
export const smartClientAssertions = pgTable(
  'smart_client_assertions',
  {
    clientId: text('client_id')
      .notNull()
      .references(() => smartClients.id, { onDelete: 'cascade' }),
    jti: text('jti').notNull(),
    expiresAt: expiresAt(),
  },
  (table) => [primaryKey({ columns: [table.clientId, table.jti] }), index('smart_client_assertions_expires_at_idx').on(table.expiresAt)],
);

/**
 * The key pair that signs access and id tokens, generated once by whichever process needs it first
 * and kept here, so tokens survive restarts and every API process signs and verifies alike.
 */
export const smartSigningKeys = pgTable('smart_signing_keys', {
  purpose: text('purpose').primaryKey(),
  kid: text('kid').notNull(),
  algorithm: text('algorithm').notNull(),
  privateJwk: jsonb('private_jwk').$type<Record<string, unknown>>().notNull(),
  publicJwk: jsonb('public_jwk').$type<Record<string, unknown>>().notNull(),
  createdAt: createdAt(),
});

export type SmartClient = typeof smartClients.$inferSelect;
export type SmartAuthorization = typeof smartAuthorizations.$inferSelect;

/**
 * Per-API-key request counts, one row per key and one-minute window, shared by every API process so
 * the rate limit holds across them. UNLOGGED in the migration: a count lost in a crash costs nothing.
 */
export const rateLimitWindows = pgTable(
  'rate_limit_windows',
  {
    key: text('key').notNull(),
    windowStart: timestamp('window_start', { withTimezone: true, mode: 'date' }).notNull(),
    hits: integer('hits').notNull(),
  },
  (table) => [primaryKey({ columns: [table.key, table.windowStart] })],
);

/**
 * Aggregator queries (docs/api/aggregator.md): the request, and the answer once the query's
 * workflow has merged what the sources sent. The query's workflow writes it (its first step records
 * the query), so a query exists exactly when its workflow does.
 */
export const aggregatorQueries = pgTable(
  'aggregator_queries',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    status: text('status', { enum: AGGREGATOR_QUERY_STATUSES }).notNull(),
    request: jsonb('request').notNull(),
    result: jsonb('result'),
    createdAt: createdAt(),
    completedAt: timestamp('completed_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [index('aggregator_queries_organization_idx').on(table.organizationId)],
);

export type AggregatorQuery = typeof aggregatorQueries.$inferSelect;

/**
 * One scenario run: what was asked (pace, patient, outcome, seed), the plan the payer rules made of
 * the catalog's steps, and its progress. Its workflow, `scenario-<id>`, owns the progress; this row
 * mirrors it for the API.
 */
export const scenarioRuns = pgTable(
  'scenario_runs',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    scenarioId: text('scenario_id').notNull(),
    connectionId: text('connection_id').references(() => connections.id, { onDelete: 'set null' }),
    environment: text('environment').notNull(),
    patientId: text('patient_id').notNull(),
    status: text('status', { enum: SCENARIO_RUN_STATUSES }).notNull(),
    /** `{ mode, time_scale }` as answered. */
    pace: jsonb('pace').notNull(),
    outcome: text('outcome'),
    seed: text('seed'),
    /** The planned steps and the rule that decided them (scenarios/plan.ts). */
    plan: jsonb('plan').notNull(),
    /** Per step: status, due times, emitted deliveries (workflows/scenario/contract.ts). */
    progress: jsonb('progress').notNull(),
    simulatedStart: timestamp('simulated_start', { withTimezone: true, mode: 'date' }).notNull(),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    index('scenario_runs_organization_idx').on(table.organizationId, table.id),
    index('scenario_runs_organization_status_idx').on(table.organizationId, table.status, table.id),
  ],
);

export type ScenarioRun = typeof scenarioRuns.$inferSelect;

/**
 * One FHIR Bulk Data export (`$export`): what was asked, the chaos picked for it, and its progress.
 * The API records it at kick-off, then its workflow, `export-<id>`, carries it out; every API process
 * reads it to answer the status URL.
 */
export const bulkExports = pgTable(
  'bulk_exports',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** The SMART client whose token started it: only that client's tokens see it (Bulk Data: the data the client is authorized for). */
    clientId: text('client_id')
      .notNull()
      .references(() => smartClients.id, { onDelete: 'cascade' }),
    status: text('status', { enum: EXPORT_STATUSES }).notNull(),
    /** The kick-off as parsed (interop/bulk-export/request.ts), its URL included (the manifest's `request`). */
    request: jsonb('request').notNull(),
    /** The chaos picked once, by the workflow's first step (webhooks/chaos.ts), so a retried step sees the same; null until then. */
    chaos: jsonb('chaos'),
    typesTotal: integer('types_total').notNull(),
    /** The types whose files are written (some write none): the progress, and what a retried step finds done. */
    typesWritten: jsonb('types_written').$type<string[]>().notNull().default([]),
    /** Why a `failed` export failed (its status URL answers it as an OperationOutcome). */
    error: text('error'),
    transactionTime: timestamp('transaction_time', { withTimezone: true, mode: 'date' }).notNull(),
    createdAt: createdAt(),
    completedAt: timestamp('completed_at', { withTimezone: true, mode: 'date' }),
    /** When the retention Schedule deletes the export and its files: a while after it ends (or, abandoned, after its kick-off). */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (table) => [
    index('bulk_exports_organization_idx').on(table.organizationId, table.status),
    index('bulk_exports_expires_at_idx').on(table.expiresAt),
  ],
);

/** The NDJSON files of an export, each bounded (interop/bulk-export/files.ts); deleted with their export. */
export const bulkExportFiles = pgTable(
  'bulk_export_files',
  {
    exportId: text('export_id')
      .notNull()
      .references(() => bulkExports.id, { onDelete: 'cascade' }),
    /** The file's name in its URL, e.g. `Observation-2.ndjson`. */
    name: text('name').notNull(),
    kind: text('kind', { enum: EXPORT_FILE_KINDS }).notNull(),
    /** The type of the resources it holds (`OperationOutcome` for an error file). */
    resourceType: text('resource_type').notNull(),
    count: integer('count').notNull(),
    content: text('content').notNull(),
  },
  (table) => [primaryKey({ columns: [table.exportId, table.name] })],
);

export type BulkExport = typeof bulkExports.$inferSelect;
export type BulkExportFile = typeof bulkExportFiles.$inferSelect;

/**
 * One prior authorization a partner asked for with Da Vinci PAS `$submit`, found by its
 * organization and the Claim's business identifier. Its workflow decides it (claims/pas/): `state`
 * is each item's review action and the authorization number, `response` the PAS response Bundle as
 * last answered. Written only by claims/pas/authorization-records.ts.
 */
export const priorAuthorizations = pgTable(
  'prior_authorizations',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** The Claim's business identifier as `system|value`. */
    claimKey: text('claim_key').notNull(),
    workflowId: text('workflow_id').notNull(),
    payerId: text('payer_id').notNull(),
    expedited: boolean('expedited').notNull(),
    /** The outcome the partner chose (header, test member id or organization default); null: the payer rules decide. */
    requestedOutcome: text('requested_outcome', { enum: PRIOR_AUTH_OUTCOMES }),
    /** How it was chosen: `header`, `member_id`, `organization` or `payer_rules`. */
    outcomeSource: text('outcome_source').notNull(),
    decision: text('decision', { enum: AUTHORIZATION_DECISIONS }),
    /** The requesting provider's identifiers (`system|value`): the Subscription topic's org-identifier filter. */
    providerIdentifiers: jsonb('provider_identifiers').$type<string[]>().notNull(),
    /** Per item: review action, quantity, cancelled (claims/pas/decision.ts); null until assessed. */
    state: jsonb('state'),
    /** The PAS response Bundle as last answered; null until assessed. */
    response: jsonb('response'),
    /** When a pended decision is due (real time at the organization's pace); null otherwise. */
    dueAt: timestamp('due_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** When its workflow ended (no update can follow). */
    closedAt: timestamp('closed_at', { withTimezone: true, mode: 'date' }),
    /** When the retention Schedule deletes it: a while after it closes (or, never started, after its submission). */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (table) => [
    uniqueIndex('prior_authorizations_claim_idx').on(table.organizationId, table.claimKey),
    index('prior_authorizations_expires_at_idx').on(table.expiresAt),
  ],
);

/**
 * Each PAS request of an authorization, the first and every claim update, as received (after the
 * privacy guard): the workflow reads them by id, so no patient content rides in its input.
 */
export const priorAuthSubmissions = pgTable(
  'prior_auth_submissions',
  {
    id: text('id').primaryKey(),
    authorizationId: text('authorization_id')
      .notNull()
      .references(() => priorAuthorizations.id, { onDelete: 'cascade' }),
    /** The request Bundle. */
    request: jsonb('request').notNull(),
    /** What the payer reads from it (claims/pas/request.ts). */
    summary: jsonb('summary').notNull(),
    /** The outcome this request chose (header or test member id); null: as the authorization's. */
    requestedOutcome: text('requested_outcome', { enum: PRIOR_AUTH_OUTCOMES }),
    /** When the workflow applied it (a retried step finds it applied). */
    appliedAt: timestamp('applied_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
  },
  (table) => [index('prior_auth_submissions_authorization_idx').on(table.authorizationId, table.createdAt)],
);

/** An organization's sandbox settings for its PAS submissions: the pace pended decisions move at, and an outcome for all. */
export const priorAuthSettings = pgTable('prior_auth_settings', {
  organizationId: text('organization_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  /** `{ mode, time_scale }`, as scenario runs have it. */
  pace: jsonb('pace').notNull(),
  outcome: text('outcome', { enum: PRIOR_AUTH_OUTCOMES }),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

export type PriorAuthorization = typeof priorAuthorizations.$inferSelect;
export type PriorAuthSubmission = typeof priorAuthSubmissions.$inferSelect;

/**
 * FHIR Subscriptions (R4 Subscriptions Backport, docs/api/fhir-subscriptions.md): what each one honours,
 * normalised from the resource its organization POSTed, and its state. Its workflow,
 * `subscription-<id>`, runs the handshake and the heartbeats; a DELETE turns it `off` and stamps
 * `deleted_at` (the row stays, so the deliveries sent for it keep their subscription).
 */
export const fhirSubscriptions = pgTable(
  'fhir_subscriptions',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    status: text('status', { enum: SUBSCRIPTION_STATUSES }).notNull(),
    topic: text('topic').notNull(),
    /** The filters (fhir/subscriptions/request.ts SubscriptionFilter): name, value, and the text the client wrote. */
    filters: jsonb('filters').$type<{ name: string; value: string; text: string }[]>().notNull(),
    endpoint: text('endpoint').notNull(),
    /** `channel.header` values, sent as HTTP headers with every notification (they may hold the partner's credentials: never logged). */
    headers: jsonb('headers').$type<string[]>().notNull(),
    payloadMime: text('payload_mime', { enum: PAYLOAD_MIME_TYPES }).notNull(),
    content: text('content', { enum: PAYLOAD_CONTENTS }).notNull(),
    heartbeatSeconds: integer('heartbeat_seconds'),
    reason: text('reason').notNull(),
    endAt: timestamp('end_at', { withTimezone: true, mode: 'date' }),
    /** Events notified since the subscription started (the backport's events-since-subscription-start): each event takes the next number. */
    eventsSinceStart: integer('events_since_start').notNull().default(0),
    /** Why it is in `error`: the handshake or a notification that failed for good. */
    error: text('error'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    deletedAt: timestamp('deleted_at', { withTimezone: true, mode: 'date' }),
  },
  (table) => [index('fhir_subscriptions_organization_idx').on(table.organizationId, table.topic, table.status)],
);

/**
 * Each notification a subscription was sent, once: its type, the event number of an event, and the
 * delivery that carries it. A step that runs again (a retried activity) finds its notification here
 * and sends nothing twice.
 */
export const subscriptionNotifications = pgTable(
  'subscription_notifications',
  {
    subscriptionId: text('subscription_id')
      .notNull()
      .references(() => fhirSubscriptions.id, { onDelete: 'cascade' }),
    /** The sender's key for it (`handshake`, `heartbeat-3`, an event's workflow and step), unique per subscription. */
    noticeKey: text('notice_key').notNull(),
    type: text('type', { enum: NOTIFICATION_TYPES }).notNull(),
    /** An event's number (events-since-subscription-start once it is counted); null for a handshake or heartbeat. */
    eventNumber: integer('event_number'),
    deliveryId: text('delivery_id').notNull(),
    createdAt: createdAt(),
  },
  (table) => [primaryKey({ columns: [table.subscriptionId, table.noticeKey] })],
);

export type FhirSubscription = typeof fhirSubscriptions.$inferSelect;
