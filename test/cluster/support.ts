import { Client, Connection } from '@temporalio/client';
import { inject } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../platform/database';
import { createOrganization, issueApiKey } from '../../platform/organizations';
import { type CallOptions, type CallResult, call } from '../support/service';

/**
 * The cluster the global setup started, as tests use it: requests go to its API processes in turn,
 * as a load balancer would send them; tenants are made in its database as `npm run keys` makes them.
 */
export interface ClusterService {
  call(path: string, options?: CallOptions): Promise<CallResult>;
  newTenant(name?: string): Promise<{ organizationId: string; key: string; keyId: string }>;
  database: DatabaseHandle;
  temporal: Client;
  close(): Promise<void>;
}

export async function connectCluster(): Promise<ClusterService> {
  const cluster = inject('cluster');
  const database = await openDatabase({ databaseUrl: cluster.databaseUrl, dataDir: cluster.dataDir });
  const connection = await Connection.connect({ address: cluster.temporalAddress });
  let next = 0;
  return {
    call: (path, options) => call(cluster.apiUrls[next++ % cluster.apiUrls.length]!, path, options),
    async newTenant(name = 'Cluster Health (synthetic)') {
      const organization = await createOrganization(database.db, { name });
      const issued = await issueApiKey(database.db, organization.id);
      return { organizationId: organization.id, key: issued.key, keyId: issued.id };
    },
    database,
    temporal: new Client({ connection, namespace: cluster.namespace }),
    async close() {
      await connection.close();
      await database.close();
    },
  };
}
