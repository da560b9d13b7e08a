import { PGlite } from '@electric-sql/pglite';
import { PGLITE_OPTIONS } from './pglite-settings';

/**
 * Run by openDatabase as a child process to create a new PGlite database in argv[2]: PGlite creates
 * it (initdb) in a second Postgres instance of its own, whose memory (about 500 MiB) stays with the
 * process that did it; in a child it goes away when the child exits.
 */
const client = new PGlite(process.argv[2]!, PGLITE_OPTIONS);
await client.waitReady;
await client.close();
