/**
 * What the retention Schedule purges (runtime/retention-schedule.ts): the workflow walks this list,
 * the activity purges each kind. Here, below both, so neither imports the other for it.
 */

/** What is purged, in this order; each is a kind of row past its use. */
export const RETENTION_TARGETS = [
  /** Idempotency-Key records past their 24 h. */
  'idempotency_keys',
  /** SMART authorization codes and picker requests that expired unused. */
  'authorization_codes',
  /** SMART EHR launch handles past their lifetime. */
  'launch_handles',
  /** SMART access and refresh tokens that expired or were revoked. */
  'tokens',
  /** The jti of client assertions (SMART Backend Services) past their exp: such an assertion no longer verifies. */
  'client_assertions',
  /**
   * Finished deliveries (with their attempts) older than DELIVERY_RETENTION_DAYS, and any finished one
   * that arrived DELIVERY_MAX_RETENTION_DAYS ago however recently it was replayed; staged envelopes a start left behind.
   */
  'deliveries',
  /** Aggregator queries (their request's demographics, their merged answer) DELIVERY_RETENTION_DAYS after they arrived. */
  'aggregator_queries',
  /** Bulk exports (with their files) past their expiry (BULK_EXPORT_FILE_HOURS after they ended). */
  'bulk_exports',
  /** Prior authorizations (PAS `$submit`) past their expiry: 30 days after their workflow closed. */
  'prior_authorizations',
] as const;
export type RetentionTarget = (typeof RETENTION_TARGETS)[number];

/** How a table's rows end: the retention target that purges them, or why nothing inbound stays in it. */
export type TableRetention = { target: RetentionTarget } | { holdsNoInboundContent: string };

/**
 * Every table, and how long what it holds is kept (docs/api/privacy.md lists the same): a table that
 * stores what a request carried has a retention target; the others say why they need none. A test
 * fails on a table missing here, so a new store cannot keep request content for ever by omission.
 */
export const TABLE_RETENTION: Record<string, TableRetention> = {
  idempotency_keys: { target: 'idempotency_keys' },
  deliveries: { target: 'deliveries' },
  delivery_attempts: { target: 'deliveries' },
  staged_envelopes: { target: 'deliveries' },
  aggregator_queries: { target: 'aggregator_queries' },
  bulk_exports: { target: 'bulk_exports' },
  bulk_export_files: { target: 'bulk_exports' },
  smart_authorizations: { target: 'authorization_codes' },
  smart_launches: { target: 'launch_handles' },
  smart_tokens: { target: 'tokens' },
  smart_client_assertions: { target: 'client_assertions' },
  organizations: { holdsNoInboundContent: 'the organization itself, with its webhook settings and name (names pass the privacy guard)' },
  api_keys: { holdsNoInboundContent: "a key's hash and hint" },
  connections: { holdsNoInboundContent: 'configuration: a name (through the privacy guard), a URL and a secret' },
  hl7_identities: { holdsNoInboundContent: 'configuration: MSH-5/MSH-6 and the MLLP token hash' },
  reliability_profiles: { holdsNoInboundContent: 'configuration: chaos modes and rates' },
  smart_clients: { holdsNoInboundContent: 'configuration: a name (through the privacy guard), redirect URIs, public keys' },
  smart_signing_keys: { holdsNoInboundContent: "the sandbox's own signing key" },
  rate_limit_windows: { holdsNoInboundContent: 'request counts per key and minute' },
  prior_authorizations: { target: 'prior_authorizations' },
  prior_auth_submissions: { target: 'prior_authorizations' },
  prior_auth_settings: { holdsNoInboundContent: 'configuration: the pace and outcome for PAS submissions' },
  fhir_subscriptions: { holdsNoInboundContent: 'configuration: topic, filters, endpoint and channel headers' },
  subscription_notifications: { holdsNoInboundContent: 'which notification went out as which delivery (ids and numbers)' },
  scenario_runs: { holdsNoInboundContent: 'a synthetic patient id, the pace and seed asked for, and the plan the sandbox made' },
};
