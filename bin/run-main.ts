/** A mistake in how a command was called; printed as its message alone. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * Start-up failures we can explain (a usage or configuration mistake, the embedded database in use,
 * no Temporal CLI, a Temporal server that does not start), known by their names so that this module
 * loads none of the modules that throw them: `npm start` creates its database before it loads them.
 */
const EXPLAINED = new Set(['UsageError', 'ConfigError', 'DatabaseInUseError', 'TemporalCliMissingError', 'TemporalStartError']);

/** Runs an entry point; start-up failures we can explain are printed plainly, without a stack. */
export function runMain(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    const explained = error instanceof Error && EXPLAINED.has(error.name);
    process.stderr.write(`\n${explained ? (error as Error).message : ((error as Error).stack ?? String(error))}\n\n`);
    process.exit(1);
  });
}
