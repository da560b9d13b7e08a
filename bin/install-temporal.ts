import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { runMain } from './run-main';

/** `npm run temporal:install`: finds the pinned Temporal CLI, else downloads or builds it (used by .ci/run). */
runMain(async () => {
  const config = loadConfig();
  const path = await ensureTemporalCli(createLogger(config.LOG_LEVEL), temporalCliOptions(config));
  process.stdout.write(`Temporal CLI: ${path}\n`);
});
