import type { Connection } from '../../drizzle/schema';
import { findConnection } from '../../platform/connections';
import type { Database } from '../../platform/database';
import { notFound } from './problem';

/**
 * The caller's connection with this id, or the one 404 (CONVENTIONS.md, HTTP: another
 * organization's object answers 404, never 403 and never its data). `field` is where the id came
 * from (`path.connection_id`, `body.connection_id`), named in the 404's `errors` as a malformed id is.
 * The id was checked by its format before (idSchema('conn')), so a NUL byte never reaches the query.
 */
export async function ownedConnection(db: Database, organizationId: string, id: string, field: string): Promise<Connection> {
  const connection = await findConnection(db, organizationId, id);
  if (!connection) throw notFound('connection', id, field);
  return connection;
}
