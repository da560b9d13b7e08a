import { ConfigError } from '../platform/config';
import { DatabaseInUseError } from '../platform/database';
import { TemporalStartError } from '../runtime/temporal';
import { TemporalCliMissingError } from '../runtime/temporal-cli';

/** A mistake in how a command was called; printed as its message alone. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Runs an entry point; start-up failures we can explain are printed plainly, without a stack. */
export function runMain(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    const explained =
      error instanceof UsageError ||
      error instanceof ConfigError ||
      error instanceof DatabaseInUseError ||
      error instanceof TemporalCliMissingError ||
      error instanceof TemporalStartError;
    process.stderr.write(`\n${explained ? (error as Error).message : ((error as Error).stack ?? String(error))}\n\n`);
    process.exit(1);
  });
}
