import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Express } from 'express';
import type { Logger } from 'pino';
import type { Config } from '../platform/config';
import { generateApiKey } from '../platform/secrets';
import { startDevServer } from './temporal';
import { ensureTemporalCli, temporalCliOptions } from './temporal-cli';

/** The pieces the entry points in bin/ assemble: Temporal, the HTTP server, the demo key, shutdown. */

export interface TemporalEndpoint {
  address: string;
  /** The Web UI, when we started the server ourselves. */
  uiUrl: string | null;
  stop(): Promise<void>;
}

/**
 * How many workflow runs `npm start`'s dev server keeps in its history cache. Its own default
 * (128,000, each kept an hour) holds every delivery waiting in backoff: with 10,000 of them the
 * cache was most of the server's memory. A run not in the cache is read back from its SQLite file
 * when its next task comes (docs/benchmarks.md, Memory of npm start).
 */
export const DEV_SERVER_CACHED_WORKFLOWS = 1000;

/** TEMPORAL_ADDRESS when set; otherwise a local dev server with its state in DATA_DIR. */
export async function provideTemporal(config: Config, logger: Logger): Promise<TemporalEndpoint> {
  if (config.TEMPORAL_ADDRESS) {
    return { address: config.TEMPORAL_ADDRESS, uiUrl: null, stop: async () => {} };
  }
  const cliPath = await ensureTemporalCli(logger, temporalCliOptions(config));
  logger.info(`Starting the Temporal dev server (${cliPath}) on port ${config.TEMPORAL_PORT}…`);
  return startDevServer(
    {
      cliPath,
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      databaseFile: join(config.DATA_DIR, 'temporal.sqlite'),
      logFile: join(config.DATA_DIR, 'temporal.log'),
      namespace: config.TEMPORAL_NAMESPACE,
      memoryLimit: config.TEMPORAL_DEV_SERVER_MEMORY_LIMIT ?? undefined,
      cachedWorkflows: DEV_SERVER_CACHED_WORKFLOWS,
    },
    logger,
  );
}

export interface ListeningServer {
  port: number;
  close(): Promise<void>;
}

/** Listens, and on close stops accepting, lets in-flight requests finish, then drops what is left. */
export async function listen(app: Express, host: string, port: number, graceSeconds: number): Promise<ListeningServer> {
  const server: Server = await new Promise((resolve, reject) => {
    const created = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(created)));
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceSeconds * 1000);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/**
 * The key `npm start` prints: DEMO_API_KEY when set, else one generated on first start and kept in
 * DATA_DIR (only its hash is in the database, so the file is what lets us print it again).
 */
export function resolveDemoApiKey(config: Config): string {
  if (config.DEMO_API_KEY) return config.DEMO_API_KEY;
  const file = join(config.DATA_DIR, 'demo-api-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.DATA_DIR, { recursive: true });
  const key = generateApiKey();
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}

/**
 * Runs the shutdown steps in order on SIGTERM or SIGINT (a second signal exits at once), then exits.
 */
export function stopOnSignal(logger: Logger, steps: { name: string; run: () => Promise<void> }[]): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    stopping = true;
    logger.info(`${signal}: shutting down`);
    let failed = false;
    for (const step of steps) {
      try {
        await step.run();
        logger.info(`stopped ${step.name}`);
      } catch (error) {
        failed = true;
        logger.error({ err: error }, `stopping ${step.name} failed`);
      }
    }
    process.exit(failed ? 1 : 0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
