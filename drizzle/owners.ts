import type { PgTable } from 'drizzle-orm/pg-core';
import type * as schema from './schema';

type TableName = { [Name in keyof typeof schema]: (typeof schema)[Name] extends PgTable ? Name : never }[keyof typeof schema];

/**
 * Each table's one owning module: the only module that inserts, updates or deletes its rows, and the
 * place its queries live. Routes, activities and other domains call the owner; an owner may read
 * other tables (a join) but writes only its own. A new table is one line here
 * (test/platform/table-owners.unit.test.ts fails until it has one, and whenever SQL or a table
 * appears outside these modules).
 */
export const TABLE_OWNERS = {
  organizations: 'platform/organizations.ts',
  apiKeys: 'platform/organizations.ts',
  connections: 'platform/connections.ts',
  hl7Identities: 'hl7/credentials.ts',
  idempotencyKeys: 'api/http/idempotency.ts',
  deliveries: 'webhooks/delivery-records.ts',
  deliveryAttempts: 'webhooks/delivery-records.ts',
  stagedEnvelopes: 'webhooks/delivery-records.ts',
  reliabilityProfiles: 'webhooks/reliability-profiles.ts',
  smartClients: 'smart/clients.ts',
  smartLaunches: 'smart/launches.ts',
  smartAuthorizations: 'smart/authorizations.ts',
  smartTokens: 'smart/tokens.ts',
  smartClientAssertions: 'smart/client-assertion.ts',
  smartSigningKeys: 'smart/signing-key.ts',
  rateLimitWindows: 'api/http/rate-limit.ts',
  aggregatorQueries: 'interop/aggregator/records.ts',
  scenarioRuns: 'scenarios/run-records.ts',
  bulkExports: 'interop/bulk-export/records.ts',
  bulkExportFiles: 'interop/bulk-export/records.ts',
  priorAuthorizations: 'claims/pas/authorization-records.ts',
  priorAuthSubmissions: 'claims/pas/authorization-records.ts',
  priorAuthSettings: 'claims/pas/authorization-records.ts',
  fhirSubscriptions: 'fhir/subscriptions/records.ts',
  subscriptionNotifications: 'fhir/subscriptions/records.ts',
} as const satisfies Record<TableName, string>;

/**
 * Expiry is the retention Schedule's: its activity deletes the expired rows of these tables (and
 * writes nothing else), by the cutoffs of platform/retention.ts. Deliveries are not among them: what
 * may go depends on the delivery's state, so their owner purges them.
 */
export const EXPIRED_ROWS_PURGER = {
  module: 'activities/retention.ts',
  tables: ['idempotencyKeys', 'smartAuthorizations', 'smartLaunches', 'smartTokens', 'smartClientAssertions', 'bulkExports'],
} as const satisfies { module: string; tables: readonly TableName[] };

/** Modules that run SQL on no table of their own: the migrations and the health check. */
export const SQL_INFRASTRUCTURE: readonly string[] = ['platform/database.ts'];
