/**
 * Server settings PGlite's Postgres starts with, beside PGlite's own (`PGlite.defaultStartParams`).
 * PGlite runs Postgres inside the process, and its shared buffers are touched in full when it starts,
 * so each MB of them is a MB of the process kept resident (Postgres's default 128 MB: about 110 MiB).
 * 4 MB holds the embedded default's working set (it serves one newcomer); a page beyond them is read
 * back from the operating system's file cache (10,000 rows of 1 KB read by key: as fast as with 16 MB,
 * docs/benchmarks.md). Imports nothing: the process that creates the database
 * (platform/pglite-directory.ts) reads it before it loads PGlite.
 */
export const PGLITE_SETTINGS: readonly string[] = ['-c', 'shared_buffers=4MB'];
