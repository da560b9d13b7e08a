import type { Config } from '../platform/config';
import { ConfigError } from '../platform/config';

/**
 * `start:api` and `start:worker` run as separate processes in production, so they need a shared
 * database and an existing Temporal cluster: PGlite and the local dev server belong to one process.
 */
export function requireSharedInfrastructure(config: Config, processName: string): { databaseUrl: string; temporalAddress: string } {
  const missing = [
    config.DATABASE_URL
      ? null
      : '  DATABASE_URL: the Postgres both processes share (PGlite is single-process), e.g. postgres://user:pass@host:5432/sandbox',
    config.TEMPORAL_ADDRESS ? null : '  TEMPORAL_ADDRESS: the Temporal frontend, e.g. temporal.internal:7233',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new ConfigError(
      `Running the ${processName} on its own needs:\n${missing.join('\n')}\n(npm start runs everything in one process on embedded defaults.)`,
    );
  }
  return { databaseUrl: config.DATABASE_URL!, temporalAddress: config.TEMPORAL_ADDRESS! };
}
