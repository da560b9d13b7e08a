import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { temporalServerVersion } from '../../runtime/cluster/binaries';
import { dynamicConfig, serverConfig } from '../../runtime/cluster/server-config';

describe('one Temporal server version', () => {
  it('the cluster builds the version docker-compose.yml runs and the time-skipping test server is built from', () => {
    const version = temporalServerVersion();
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const compose = readFileSync('docker-compose.yml', 'utf8');
    const tags = [...compose.matchAll(/image: temporalio\/(server|admin-tools):(\S+)/g)].map(([, image, tag]) => `${image}:${tag}`);
    expect(tags.sort()).toEqual([`admin-tools:${version}`, `admin-tools:${version}`, `server:${version}`]);
    expect(compose).toContain(`NUM_HISTORY_SHARDS: "4"`);
    const timeSkipping = readFileSync('test/support/time-skipping-server/go.mod', 'utf8');
    expect(timeSkipping).toMatch(new RegExp(`^require go\\.temporal\\.io/server v${version.replaceAll('.', '\\.')}$`, 'm'));
  });

  it('docker-compose.yml runs the dynamic config the cluster is tested with', () => {
    const compose = readFileSync('docker-compose.yml', 'utf8');
    for (const [key, [{ value }]] of Object.entries(JSON.parse(dynamicConfig()) as Record<string, [{ value: unknown }]>)) {
      expect(compose, key).toMatch(new RegExp(`${key.replaceAll('.', '\\.')}:\\n\\s+- value: ${value}\\n`));
    }
  });
});

describe('a service process configuration', () => {
  it('gives the service its own ports on loopback and shares the stores, shards and dynamic config', () => {
    const store = (database: string) => ({ host: '127.0.0.1', port: 5432, user: 'postgres', password: '', database });
    const config = JSON.parse(
      serverConfig({
        role: 'history',
        ports: { grpc: 17234, membership: 16934, metrics: 18000 },
        services: {
          frontend: { grpc: 17233, membership: 16933, metrics: 18001, http: 17243 },
          history: { grpc: 17334, membership: 17934, metrics: 18002 },
          matching: { grpc: 17235, membership: 16935, metrics: 18003 },
          worker: { grpc: 17239, membership: 16939, metrics: 18004 },
        },
        frontendAddress: '127.0.0.1:17233',
        persistence: store('temporal_x'),
        visibility: store('temporal_visibility_x'),
        historyShards: 4,
        dynamicConfigFile: '/tmp/dynamic.yaml',
      }),
    );
    expect(config.services).toEqual({
      frontend: { rpc: { grpcPort: 17233, membershipPort: 16933, bindOnLocalHost: true, httpPort: 17243 } },
      history: { rpc: { grpcPort: 17234, membershipPort: 16934, bindOnLocalHost: true } },
      matching: { rpc: { grpcPort: 17235, membershipPort: 16935, bindOnLocalHost: true } },
      worker: { rpc: { grpcPort: 17239, membershipPort: 16939, bindOnLocalHost: true } },
    });
    expect(config.persistence.numHistoryShards).toBe(4);
    expect(config.persistence.datastores['postgres-default'].sql).toMatchObject({ pluginName: 'postgres12', databaseName: 'temporal_x' });
    expect(config.persistence.datastores['postgres-visibility'].sql).toMatchObject({ databaseName: 'temporal_visibility_x' });
    expect(config.global.metrics.prometheus.listenAddress).toBe('127.0.0.1:18000');
    expect(config.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:17233');
    expect(config.dynamicConfigClient.filepath).toBe('/tmp/dynamic.yaml');
  });
});
