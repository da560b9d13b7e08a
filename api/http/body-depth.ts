import type { IncomingMessage } from 'node:http';

/**
 * How deeply a JSON request body may nest. Every body we take is a few levels deep (a FHIR resource
 * inside a request, about ten); 5,000 levels in 10 KB passed the size limit and overflowed the stack
 * of whatever walked it next (the Idempotency-Key hash, zod, the NUL check), answering 500.
 */
export const JSON_DEPTH_LIMIT = 64;

/**
 * express.json's `verify`: refuses a body nested deeper than JSON_DEPTH_LIMIT before it is parsed.
 * One pass over the bytes, counting brackets outside strings (UTF-8 never puts an ASCII byte inside a
 * multi-byte character, and express.json reads UTF-8 only).
 */
export function refuseDeepJson(_req: IncomingMessage, _res: unknown, body: Buffer): void {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < body.length; index += 1) {
    const byte = body[index];
    if (inString) {
      if (byte === 0x5c)
        index += 1; // a backslash escapes the next byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b || byte === 0x5b) {
      depth += 1;
      // Raised as body-parser raises its own errors (a status and a type), so the problem handler shapes it for each surface.
      if (depth > JSON_DEPTH_LIMIT) throw Object.assign(new Error('The JSON body nests too deeply.'), { status: 400, type: 'entity.too.deep' });
    } else if (byte === 0x7d || byte === 0x5d) {
      depth -= 1;
    }
  }
}
