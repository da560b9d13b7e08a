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
  /** Finished deliveries (with their attempts) older than DELIVERY_RETENTION_DAYS. */
  'deliveries',
  /** Bulk exports (with their files) past their expiry (BULK_EXPORT_FILE_HOURS after they ended). */
  'bulk_exports',
  /** Prior authorizations (PAS `$submit`) past their expiry: 30 days after their workflow closed. */
  'prior_authorizations',
] as const;
export type RetentionTarget = (typeof RETENTION_TARGETS)[number];
