import { PGlite, type PGliteOptions } from '@electric-sql/pglite';

/**
 * PGlite runs Postgres inside the process, with Postgres's default 128 MB of shared buffers, which
 * the WebAssembly memory keeps resident once touched: 16 MB holds this service's working set (the
 * embedded default serves one newcomer) and leaves the process about 110 MiB smaller (docs/benchmarks.md).
 */
export const PGLITE_OPTIONS: PGliteOptions = { startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'] };
