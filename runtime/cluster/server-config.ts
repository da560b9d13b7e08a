import { TRANSFER_QUEUE_READS_PER_SECOND } from '../temporal';

/**
 * The Temporal server's configuration for one service process of the local cluster. The server reads
 * YAML; JSON is YAML, so the files are written with JSON.stringify rather than a YAML library.
 */

export type TemporalRole = 'frontend' | 'history' | 'matching' | 'worker';

export const TEMPORAL_ROLES: readonly TemporalRole[] = ['frontend', 'history', 'matching', 'worker'];

export interface ServicePorts {
  grpc: number;
  membership: number;
  /** Prometheus metrics of this process (numshards_gauge tells which history node owns how many shards). */
  metrics: number;
  /** The frontend's HTTP API; the other services have none. */
  http?: number;
}

export interface SqlStore {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

export interface ServerConfigOptions {
  role: TemporalRole;
  /** This process's ports. */
  ports: ServicePorts;
  /**
   * Every service's ports: the server tracks the membership of each service listed here. Other nodes
   * are found through that membership, which Temporal keeps in the database, not through these ports.
   */
  services: Record<TemporalRole, ServicePorts>;
  frontendAddress: string;
  persistence: SqlStore;
  visibility: SqlStore;
  historyShards: number;
  dynamicConfigFile: string;
}

/**
 * Connections per process, open at most and kept idle. Postgres serves 100 clients by default and
 * this machine's Postgres is shared; history does the most persistence work, one shard at a time each.
 */
const CONNECTIONS: Record<TemporalRole, { max: number; idle: number }> = {
  frontend: { max: 4, idle: 1 },
  history: { max: 8, idle: 2 },
  matching: { max: 4, idle: 1 },
  worker: { max: 3, idle: 1 },
};
const VISIBILITY_CONNECTIONS = { max: 2, idle: 1 };

function datastore(store: SqlStore, connections: { max: number; idle: number }) {
  return {
    sql: {
      pluginName: 'postgres12',
      databaseName: store.database,
      connectAddr: `${store.host}:${store.port}`,
      connectProtocol: 'tcp',
      user: store.user,
      password: store.password,
      maxConns: connections.max,
      maxIdleConns: connections.idle,
      maxConnLifetime: '1h',
    },
  };
}

export function serverConfig(options: ServerConfigOptions): string {
  const { ports } = options;
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      // Fixed for the life of the persistence database: the shards are the unit a history node owns.
      numHistoryShards: options.historyShards,
      datastores: {
        'postgres-default': datastore(options.persistence, CONNECTIONS[options.role]),
        'postgres-visibility': datastore(options.visibility, VISIBILITY_CONNECTIONS),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `127.0.0.1:${ports.metrics}` } },
    },
    services: Object.fromEntries(
      TEMPORAL_ROLES.map((role) => {
        const own = role === options.role ? ports : options.services[role];
        return [
          role,
          {
            rpc: {
              grpcPort: own.grpc,
              membershipPort: own.membership,
              bindOnLocalHost: true,
              ...(own.http === undefined ? {} : { httpPort: own.http }),
            },
          },
        ];
      }),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: options.frontendAddress } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: options.dynamicConfigFile, pollInterval: '10s' },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/**
 * The same server settings as the dev server `npm start` runs (runtime/temporal.ts), so the two
 * topologies are compared on equal terms, plus search attributes usable as soon as they are added.
 */
export function dynamicConfig(): string {
  const value = (setting: unknown) => [{ value: setting, constraints: {} }];
  return `${JSON.stringify(
    {
      'system.enableActivityEagerExecution': value(true),
      'history.transferProcessorMaxPollRPS': value(TRANSFER_QUEUE_READS_PER_SECOND),
      'system.forceSearchAttributesCacheRefreshOnRead': value(true),
      // A queue whose backlog was written before this was on is drained by the server (1.32) itself.
      'matching.enableFairness': value(true),
    },
    null,
    2,
  )}\n`;
}
