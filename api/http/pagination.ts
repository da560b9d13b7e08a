import { z } from 'zod';
import { ApiProblem } from './problem';

/** `?limit=` (default 50, max 200) and an opaque `?cursor=`, per CONVENTIONS.md. */
export const pageQuerySchema = z.object({
  limit: z.coerce.number().int('limit must be a whole number').min(1, 'limit must be at least 1').max(200, 'limit must be at most 200').default(50),
  cursor: z.string().min(1).optional().meta({ description: 'The `next_cursor` of the previous page' }),
});

export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

/** Cursors wrap the last id of a page; ids are time-sortable, so "after this id" is stable. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const { after } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof after === 'string' && after.length > 0) return after;
  } catch {
    // fall through to the problem below
  }
  throw new ApiProblem(400, 'invalid_cursor', 'The cursor is not one this API issued; pass the next_cursor of a previous page unchanged.');
}

/** Given `limit + 1` rows, returns the page and the cursor of the next one. */
export function toPage<T extends { id: string }, U>(rows: T[], limit: number, present: (row: T) => U): { data: U[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { data: page.map(present), next_cursor: rows.length > limit && last ? encodeCursor(last.id) : null };
}

/** A page of an in-memory list sorted by id: the items after the cursor's id, found by binary search. */
export function pageOfSorted<T extends { id?: string }>(
  items: readonly T[],
  query: { limit: number; cursor?: string | undefined },
): { data: T[]; next_cursor: string | null } {
  const after = decodeCursor(query.cursor);
  let start = 0;
  if (after !== undefined) {
    let end = items.length;
    while (start < end) {
      const middle = (start + end) >>> 1;
      if (items[middle]!.id! <= after) start = middle + 1;
      else end = middle;
    }
  }
  return toPage(items.slice(start, start + query.limit + 1) as (T & { id: string })[], query.limit, (item) => item);
}
