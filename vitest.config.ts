import { configDefaults, defineConfig } from 'vitest/config';

const UNIT_TESTS = 'test/**/*.unit.test.ts';

/**
 * Two tiers (CONVENTIONS.md, Tests). `npm test` runs both; `npm run test:unit` only the first.
 * - unit: pure modules; no global setup, so these tests cannot reach Postgres, Temporal or a Go binary.
 * - integration: one Temporal dev server, one time-skipping server and one fresh Postgres database
 *   for the whole run (test/support/global-setup.ts).
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        // Not isolated: the test files share one module cache per worker, so the FHIR validator, the
        // fixture world and the HL7 tables are built once, not once per file (a third less CPU).
        // A minute per test: a pure test is CPU-bound, and CI machines are shared.
        test: { name: 'unit', include: [UNIT_TESTS], isolate: false, testTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          // The cluster tests start their own Temporal cluster: `npm run test:cluster` (vitest.cluster.config.ts).
          exclude: [...configDefaults.exclude, UNIT_TESTS, 'test/cluster/**'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          pool: 'forks',
        },
      },
    ],
  },
});
