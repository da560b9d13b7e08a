/**
 * JSON for responses, reusing the text of frozen objects. The fixture resources are deep-frozen and
 * shared by every request (fixtures/store.ts), so each one's JSON is written once, on its first
 * answer, and later pages splice that text instead of serializing the same 72 KiB again. Only the
 * first levels of an answer are walked (a page, its `data`, a Bundle's `entry` items); anything below,
 * and anything not frozen, goes to JSON.stringify as usual, so the output is what it would give.
 */
const written = new WeakMap<object, string>();
// Page → data[] → item, or Bundle → entry[] → entry → resource: frozen objects sit at most this deep.
const WALKED_LEVELS = 3;

export function toJson(value: unknown, level = 0): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const known = written.get(value);
  if (known !== undefined) return known;
  if (Object.isFrozen(value)) {
    const text = JSON.stringify(value);
    written.set(value, text);
    return text;
  }
  if (level >= WALKED_LEVELS || !isPlain(value)) return JSON.stringify(value);
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined || typeof item === 'function' || typeof item === 'symbol' ? 'null' : toJson(item, level + 1))).join(',')}]`;
  }
  const members: string[] = [];
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    members.push(`${JSON.stringify(key)}:${toJson(item, level + 1)}`);
  }
  return `{${members.join(',')}}`;
}

/**
 * A stand-in that toJson writes as this JSON text, unparsed: a document stored as JSON (a delivery's
 * envelope, several MiB for a large HL7 message) goes out byte for byte as stored, instead of being
 * parsed and written again on the event loop. Only for answers toJson writes: to anything else the
 * stand-in is an empty object. `text` must be JSON.
 */
export function storedJson(text: string): Record<string, never> {
  const standIn = Object.freeze({});
  written.set(standIn, text);
  return standIn;
}

/** Arrays and object literals; anything else (a Date, a class with toJSON) is JSON.stringify's to write. */
function isPlain(value: object): boolean {
  if (Array.isArray(value)) return true;
  const prototype = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}
