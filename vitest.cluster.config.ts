import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: the product on a production-shaped Temporal cluster (runtime/cluster/),
 * started once for the run by the global setup; see docs/operations/cluster.md.
 */
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    globalSetup: ['test/cluster/global-setup.ts'],
    testTimeout: 120_000,
    // The first run builds the Temporal server (minutes); later runs start the cluster in about a minute.
    hookTimeout: 900_000,
    pool: 'forks',
    // One file at a time: the node-loss test kills a history node, which no other test should share.
    fileParallelism: false,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
