/**
 * Server settings PGlite's Postgres starts with, beside PGlite's own (`PGlite.defaultStartParams`).
 * PGlite runs Postgres inside the process, with Postgres's default 128 MB of shared buffers, which
 * the WebAssembly memory keeps resident once touched: 16 MB holds this service's working set (the
 * embedded default serves one newcomer) and leaves the process about 110 MiB smaller (docs/benchmarks.md).
 * Imports nothing: the process that creates the database (platform/pglite-directory.ts) reads it
 * before it loads PGlite.
 */
export const PGLITE_SETTINGS: readonly string[] = ['-c', 'shared_buffers=16MB'];
