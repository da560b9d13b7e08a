import { type HL7Node, Message, Segment } from 'node-hl7-client';

/** The largest message the sandbox takes (issue 10): bigger ones are refused before parsing. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** The encoding characters a message declares in MSH-1 and MSH-2. */
export interface Delimiters {
  /** MSH-2 exactly as sent (four characters, five with the v2.7+ truncation character). */
  encoding: string;
  field: string;
  component: string;
  repetition: string;
  escape: string;
  subcomponent: string;
}

export const DEFAULT_DELIMITERS: Delimiters = { encoding: '^~\\&', field: '|', component: '^', repetition: '~', escape: '\\', subcomponent: '&' };

/** The text is not an HL7 v2 message at all (it does not start with an MSH segment). */
export class NotHl7Error extends Error {
  override readonly name = 'NotHl7Error';
}

/**
 * The text starts like HL7 (an MSH segment) but cannot be read as one message: a batch, or broken
 * encoding characters. Answered with an AR, not a 400, because the sender does speak HL7.
 */
export class UnreadableHl7Error extends Error {
  override readonly name = 'UnreadableHl7Error';

  constructor(
    message: string,
    /** The MSH field that cannot be read (2: the encoding characters), for ERR-2. */
    readonly field?: number,
  ) {
    super(message);
  }
}

/** One repetition of a field: its components, each a list of subcomponents, escape sequences decoded. */
export class Hl7Repetition {
  constructor(readonly components: readonly (readonly string[])[]) {}

  /** Component `component` (1-based), subcomponent `subcomponent` (1-based); '' when absent. */
  get(component = 1, subcomponent = 1): string {
    return this.components[component - 1]?.[subcomponent - 1] ?? '';
  }

  /** Whether any component holds a value. */
  get present(): boolean {
    return this.components.some((component) => component.some((value) => value !== ''));
  }
}

const EMPTY_REPETITION = new Hl7Repetition([]);

/** One field of a segment: its repetitions (none when the field is empty). */
export class Hl7Field {
  constructor(
    readonly repetitions: readonly Hl7Repetition[],
    /** The field as it was sent, escape sequences still in place (for error messages). */
    readonly raw: string,
  ) {}

  /** The first repetition (HL7's default when a field is read without a repetition). */
  get first(): Hl7Repetition {
    return this.repetitions[0] ?? EMPTY_REPETITION;
  }

  get(component = 1, subcomponent = 1): string {
    return this.first.get(component, subcomponent);
  }

  get present(): boolean {
    return this.repetitions.some((repetition) => repetition.present);
  }
}

/** One segment, with where it stands: for ERR-2 locations (`segment^sequence^field^…`). */
export class Hl7Segment {
  private readonly fields = new Map<number, Hl7Field>();

  constructor(
    private readonly node: HL7Node,
    readonly name: string,
    /** 1-based position among all segments of the message. */
    readonly position: number,
    /** 1-based occurrence among the segments with the same name (ERR-2.2, "segment sequence"). */
    readonly sequence: number,
    private readonly delimiters: Delimiters,
  ) {}

  /** Field `index` (1-based, as HL7 numbers them: MSH-1 is the field separator). */
  field(index: number): Hl7Field {
    let field = this.fields.get(index);
    if (!field) {
      field = this.readField(index);
      this.fields.set(index, field);
    }
    return field;
  }

  /** Shorthand for the first repetition's component: `get(5, 1)` is PID-5.1. */
  get(index: number, component = 1, subcomponent = 1): string {
    return this.field(index).get(component, subcomponent);
  }

  private readField(index: number): Hl7Field {
    // MSH-1 and MSH-2 are the encoding characters themselves; the library does not split them.
    if (this.name === 'MSH' && index <= 2) {
      const value = index === 1 ? this.delimiters.field : this.delimiters.encoding;
      return new Hl7Field([new Hl7Repetition([[value]])], value);
    }
    const node = this.node.get(String(index));
    if (node.isEmpty()) return new Hl7Field([], '');
    const raw = node.toRaw();
    const d = this.delimiters;
    // Most fields hold one plain value: nothing to split, so the library's nodes below the field
    // (one object per repetition, component and subcomponent) are only built where there is structure.
    if (!raw.includes(d.repetition) && !raw.includes(d.component) && !raw.includes(d.subcomponent)) {
      return new Hl7Field([new Hl7Repetition([[decodeEscapes(raw, d)]])], raw);
    }
    const repetitions = node.toArray().map((repetition) => new Hl7Repetition(repetition.toArray().map((component) => subcomponentsOf(component, d))));
    return new Hl7Field(repetitions, raw);
  }
}

function subcomponentsOf(component: HL7Node, d: Delimiters): string[] {
  const raw = component.toRaw();
  if (!raw.includes(d.subcomponent)) return [decodeEscapes(raw, d)];
  const subcomponents = component.toArray();
  // The library leaves an empty component without children; it is one empty subcomponent.
  if (subcomponents.length === 0) return [''];
  return subcomponents.map((subcomponent) => decodeEscapes(subcomponent.toRaw(), d));
}

/**
 * Decodes a subcomponent's escape sequences. node-hl7-client's own decoder turns each byte of
 * \Xhh\ into a Latin-1 character (so UTF-8 \XC3A9\ became "Ã©") and keeps formatting commands
 * such as \.br\ verbatim; this one reads hex as UTF-8 (Latin-1 when it is not valid UTF-8), turns
 * \.br\ and \.sp\ into line breaks and drops the other formatting and highlighting commands.
 */
export function decodeEscapes(raw: string, d: Delimiters): string {
  const e = d.escape;
  if (!raw.includes(e)) return raw;
  const sequence = new RegExp(`${escapeForRegExp(e)}([^${escapeForRegExp(e)}]*)${escapeForRegExp(e)}`, 'g');
  return raw.replace(sequence, (whole, body: string) => {
    switch (body) {
      case 'F':
        return d.field;
      case 'S':
        return d.component;
      case 'T':
        return d.subcomponent;
      case 'R':
        return d.repetition;
      case 'E':
        return e;
      case 'H':
      case 'N':
        return '';
    }
    if (/^X([0-9A-Fa-f]{2})+$/.test(body)) return decodeHex(body.slice(1));
    if (/^\.(br|sp\d*)$/.test(body)) return '\n';
    if (/^(\.(fi|nf|in[+-]?\d*|ti[+-]?\d*|sk[+-]?\d*|ce)|[CM][0-9A-Fa-f]+|Z.*)$/.test(body)) return '';
    return whole;
  });
}

function decodeHex(hex: string): string {
  const bytes = Buffer.from(hex, 'hex');
  const text = bytes.toString('utf8');
  return text.includes('\uFFFD') ? bytes.toString('latin1') : text;
}

const escapeForRegExp = (text: string) => text.replace(/[-/\\^$*+?.()|[\]{}]/g, '\\$&');

export interface ParsedHl7 {
  readonly delimiters: Delimiters;
  readonly segments: readonly Hl7Segment[];
  /** The MSH segment (always the first). */
  readonly header: Hl7Segment;
  /** The first segment named `name`, or the `sequence`th one. */
  segment(name: string, sequence?: number): Hl7Segment | undefined;
  all(name: string): Hl7Segment[];
}

/**
 * Line ends as interface engines really send them (`\r`, `\n` or `\r\n`, blank lines, a trailing
 * newline) become the single `\r` the standard uses, so the parser sees one segment per line.
 * A literal newline cannot occur inside a field: HL7 escapes it (\X0A\ or \.br\).
 */
export function normalizeSegmentEnds(text: string): string {
  return text
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\n|\r/)
    .filter((line) => line.trim() !== '')
    .join('\r');
}

/** Whether `text` is an HL7 v2 message at all: it starts with MSH and a field separator. */
export function looksLikeHl7(text: string): boolean {
  const start = text.replace(/^[\uFEFF\s]+/, '');
  return /^MSH[^A-Za-z0-9\s]/.test(start);
}

/**
 * Parses ER7 text with node-hl7-client, which reads the encoding characters from MSH-1 and MSH-2 and
 * splits segments, fields, repetitions, components and subcomponents. This wrapper normalizes
 * segment ends first, decodes escape sequences per subcomponent (decodeEscapes) and exposes the
 * values with the positions validation and ACKs report.
 */
export function parseHl7(input: string): ParsedHl7 {
  if (!looksLikeHl7(input)) throw new NotHl7Error('The body is not an HL7 v2 message: it must start with an MSH segment (MSH|^~\\&|…)');
  const text = normalizeSegmentEnds(input.replace(/^[\uFEFF\s]+/, ''));
  const delimiters = readDelimiters(text);
  const lines = text.split('\r');
  const second = lines.findIndex((line, index) => index > 0 && line.startsWith(`MSH${delimiters.field}`));
  if (second !== -1)
    throw new UnreadableHl7Error(`Only one message per request: segment ${second + 1} starts a second one (batches are not supported)`);
  // The library's Message refuses any text holding "MSH|" past its start (a field ending in MSH, say)
  // as a batch, so it is given the encoding characters only, and each segment is parsed on its own
  // as a Segment of that message, which is where the library reads its delimiters from.
  let holder: Message;
  try {
    holder = new Message({ text: `MSH${delimiters.field}${delimiters.encoding.slice(0, 4)}` });
  } catch (error) {
    throw new UnreadableHl7Error(`The message cannot be read: ${(error as Error).message}`);
  }
  const counts = new Map<string, number>();
  const segments = lines.map((line, index) => {
    const node = new Segment(holder, line);
    const name = node.name;
    const sequence = (counts.get(name) ?? 0) + 1;
    counts.set(name, sequence);
    return new Hl7Segment(node, name, index + 1, sequence, delimiters);
  });
  const byName = new Map<string, Hl7Segment[]>();
  for (const segment of segments) {
    const list = byName.get(segment.name);
    if (list) list.push(segment);
    else byName.set(segment.name, [segment]);
  }
  return {
    delimiters,
    segments,
    header: segments[0]!,
    segment: (name, sequence = 1) => byName.get(name)?.[sequence - 1],
    all: (name) => byName.get(name) ?? [],
  };
}

/**
 * MSH-1 and MSH-2, checked before the library uses them: four distinct separators (a fifth, the
 * v2.7+ truncation character, may follow), none a letter, digit or space.
 */
function readDelimiters(text: string): Delimiters {
  const field = text.charAt(3);
  const end = text.indexOf(field, 4);
  const encoding = end === -1 ? text.slice(4) : text.slice(4, end);
  const characters = [field, ...encoding.slice(0, 4)];
  const wellFormed =
    encoding.length >= 4 &&
    encoding.length <= 5 &&
    new Set(characters).size === 5 &&
    characters.every((character) => /[^A-Za-z0-9\s]/.test(character));
  if (!wellFormed)
    throw new UnreadableHl7Error(
      `MSH-2 must hold four distinct encoding characters (component, repetition, escape, subcomponent), e.g. ^~\\&; got "${encoding}"`,
      2,
    );
  const [component, repetition, escapeCharacter, subcomponent] = encoding;
  return { encoding, field, component: component!, repetition: repetition!, escape: escapeCharacter!, subcomponent: subcomponent! };
}
