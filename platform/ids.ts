import { typeid } from 'typeid-js';
import { z } from 'zod';

/**
 * Prefixed, time-sortable ids (TypeID: prefix + UUIDv7 in base32), per CONVENTIONS.md, HTTP.
 * A new kind of object adds its prefix here and says what it is called in ID_KINDS.
 */
export const ID_PREFIXES = ['org', 'key', 'conn', 'dlv', 'att', 'evt', 'run', 'cli', 'aq', 'exp', 'pa', 'pas'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** What each prefix names, as an error message says it ("No connection with id … exists"). */
export const ID_KINDS: Record<IdPrefix, string> = {
  org: 'organization',
  key: 'API key',
  conn: 'connection',
  dlv: 'delivery',
  att: 'delivery attempt',
  evt: 'event',
  run: 'scenario run',
  cli: 'SMART client',
  aq: 'aggregator query',
  exp: 'bulk export',
  pa: 'prior authorization',
  pas: 'prior authorization submission',
};

export function newId(prefix: IdPrefix): string {
  return typeid(prefix).toString();
}

/**
 * The TypeID suffix: 26 characters of Crockford base32 in lower case (no i, l, o, u), the first at
 * most 7 so that the 128-bit UUID fits. A regular expression, not a parser, so OpenAPI shows it.
 */
const SUFFIX = '[0-7][0-9a-hjkmnp-tv-z]{25}';
const ID_PATTERNS = Object.fromEntries(ID_PREFIXES.map((prefix) => [prefix, new RegExp(`^${prefix}_${SUFFIX}$`)])) as Record<IdPrefix, RegExp>;
const PREFIX_OF_PATTERN = new Map<string, IdPrefix>(ID_PREFIXES.map((prefix) => [String(ID_PATTERNS[prefix]), prefix]));

/** Whether `value` is an id of this kind: checked before any query, so bytes Postgres refuses (NUL) never reach it. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return ID_PATTERNS[prefix].test(value);
}

/**
 * The schema of an id in a path, query string or body (every route uses it for its ids). A value
 * that is not such an id names nothing: api/http/route.ts answers it 404, like an unknown id,
 * never a database error.
 */
export function idSchema(prefix: IdPrefix) {
  return z
    .string()
    .regex(ID_PATTERNS[prefix], `must be a ${ID_KINDS[prefix]} id: ${prefix}_ followed by 26 lower-case base32 characters`)
    .meta({ description: `A \`${prefix}_\` id (${ID_KINDS[prefix]})`, example: `${prefix}_01jd8x3m0ae8v9q2w1f4k7t5zr` });
}

/** The id prefix whose schema a zod regex issue came from, if any (route.ts turns those into 404s). */
export function idPrefixOfPattern(pattern: string | undefined): IdPrefix | undefined {
  return pattern === undefined ? undefined : PREFIX_OF_PATTERN.get(pattern);
}
