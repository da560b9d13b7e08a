import { DEFAULT_DELIMITERS, type Delimiters } from './parse';

/**
 * Writing ER7 (the pipe-and-hat encoding) for the messages the sandbox composes itself: ACKs and
 * templates. Values are escaped here, so a name with `&` or a note with `|` cannot break a field.
 */

/** A leaf value; empty, null and undefined write nothing. */
type Value = string | number | null | undefined;
/** A component: one value, or its subcomponents. */
type Component = Value | readonly Value[];
/** One repetition: one value, or its components. */
type Repetition = Value | readonly Component[];
/** A field: one repetition, or several (`{ repeat: [...] }`). */
export type Er7Field = Repetition | { readonly repeat: readonly Repetition[] };

/** Escapes the delimiters inside a value (\E\ first, so escapes are not escaped twice) and line ends. */
export function escapeEr7(text: string, d: Delimiters = DEFAULT_DELIMITERS): string {
  const e = d.escape;
  let out = '';
  for (const character of text) {
    if (character === e) out += `${e}E${e}`;
    else if (character === d.field) out += `${e}F${e}`;
    else if (character === d.component) out += `${e}S${e}`;
    else if (character === d.subcomponent) out += `${e}T${e}`;
    else if (character === d.repetition) out += `${e}R${e}`;
    else if (character === '\r') out += `${e}X0D${e}`;
    else if (character === '\n') out += `${e}X0A${e}`;
    else out += character;
  }
  return out;
}

function trimEnd(parts: string[]): string[] {
  let end = parts.length;
  while (end > 0 && parts[end - 1] === '') end--;
  return parts.slice(0, end);
}

const leaf = (value: Value, d: Delimiters) => (value === null || value === undefined ? '' : escapeEr7(String(value), d));

function writeRepetition(repetition: Repetition, d: Delimiters): string {
  if (!Array.isArray(repetition)) return leaf(repetition as Value, d);
  const components = (repetition as readonly Component[]).map((component) =>
    Array.isArray(component)
      ? trimEnd((component as readonly Value[]).map((value) => leaf(value, d))).join(d.subcomponent)
      : leaf(component as Value, d),
  );
  return trimEnd(components).join(d.component);
}

function writeField(field: Er7Field, d: Delimiters): string {
  if (field !== null && typeof field === 'object' && 'repeat' in field)
    return field.repeat.map((repetition) => writeRepetition(repetition, d)).join(d.repetition);
  return writeRepetition(field as Repetition, d);
}

/** A segment: `fields[0]` is field 1. Trailing empty fields are left off, as senders do. */
export function er7Segment(name: string, fields: readonly Er7Field[], d: Delimiters = DEFAULT_DELIMITERS): string {
  return trimEnd([name, ...fields.map((field) => writeField(field, d))]).join(d.field);
}

/** An MSH segment: `fields[0]` is MSH-3 (MSH-1 and MSH-2 are the encoding characters). */
export function er7Header(fields: readonly Er7Field[], d: Delimiters = DEFAULT_DELIMITERS): string {
  const rest = trimEnd(fields.map((field) => writeField(field, d)));
  return ['MSH', d.encoding, ...rest].join(d.field);
}

/** Segments joined with the standard segment terminator, a carriage return. */
export function er7Message(segments: readonly string[]): string {
  return segments.join('\r');
}

/** An HL7 DTM timestamp (YYYYMMDDHHMMSS+ZZZZ) for an instant, in UTC. */
export function hl7Timestamp(instant: string | Date): string {
  const iso = new Date(instant).toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}+0000`;
}

/** An HL7 DT date (YYYYMMDD) for an ISO date or instant. */
export function hl7Date(date: string): string {
  return date.slice(0, 10).replaceAll('-', '');
}
