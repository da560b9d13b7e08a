import { typeid } from 'typeid-js';

/** Prefixed, time-sortable ids (TypeID: prefix + UUIDv7 in base32), per CONVENTIONS.md. */
export type IdPrefix = 'org' | 'key' | 'conn' | 'dlv' | 'att' | 'evt' | 'run' | 'cli';

export function newId(prefix: IdPrefix): string {
  return typeid(prefix).toString();
}
