import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The cluster tests start their own Temporal cluster: `npm run test:cluster` (vitest.cluster.config.ts).
    exclude: ['test/cluster/**', 'node_modules/**'],
    // One Temporal dev server and one fresh Postgres database for the whole run.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
