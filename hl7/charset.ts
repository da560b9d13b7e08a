/**
 * MSH-18 (character set, HL7 table 0211): how the bytes of a message on MLLP are to be read. MLLP
 * carries bytes, not text, so the listener reads MSH-18 from the header (every supported set writes
 * MSH in ASCII) and decodes the whole frame with it, and encodes its answers the same way.
 */

/** What a frame decodes to: its text, the character set used and how to encode answers to it. */
export interface DecodedFrame {
  text: string;
  /** The table 0211 value that decided the decoding ('' when MSH-18 is empty). */
  charset: string;
  encode(text: string): Buffer;
}

/** Where a message without MSH-18 (or with ASCII) has bytes above 0x7F, they are read as UTF-8 when they are valid UTF-8, else as ISO 8859-1 (senders mislabel both). */
type Decoding = { kind: 'utf8-or-latin1' } | { kind: 'utf8' } | { kind: 'latin1' } | { kind: 'decoder'; label: string };

/** Table 0211 values (MSH-18) the listener decodes; the labels are WHATWG encodings Node's TextDecoder knows. */
const DECODINGS: Record<string, Decoding> = {
  '': { kind: 'utf8-or-latin1' },
  ASCII: { kind: 'utf8-or-latin1' },
  'ISO IR6': { kind: 'utf8-or-latin1' },
  'UNICODE UTF-8': { kind: 'utf8' },
  // Table 0211's "UNICODE" predates the UTF-8/16/32 values; on a byte stream framed by MLLP it can only be UTF-8.
  UNICODE: { kind: 'utf8' },
  '8859/1': { kind: 'latin1' },
  'ISO IR100': { kind: 'latin1' },
  '8859/2': { kind: 'decoder', label: 'iso-8859-2' },
  '8859/3': { kind: 'decoder', label: 'iso-8859-3' },
  '8859/4': { kind: 'decoder', label: 'iso-8859-4' },
  '8859/5': { kind: 'decoder', label: 'iso-8859-5' },
  '8859/6': { kind: 'decoder', label: 'iso-8859-6' },
  '8859/7': { kind: 'decoder', label: 'iso-8859-7' },
  '8859/8': { kind: 'decoder', label: 'iso-8859-8' },
  '8859/9': { kind: 'decoder', label: 'iso-8859-9' },
  '8859/15': { kind: 'decoder', label: 'iso-8859-15' },
  'GB 18030-2000': { kind: 'decoder', label: 'gb18030' },
  'BIG-5': { kind: 'decoder', label: 'big5' },
  'KS X 1001': { kind: 'decoder', label: 'euc-kr' },
  'ISO IR87': { kind: 'decoder', label: 'iso-2022-jp' },
};

const SEGMENT_ENDS = new Set([0x0d, 0x0a]);

/**
 * MSH-18's first repetition, read from the bytes of the first MSH segment (the frame may start with
 * a batch header, FHS or BHS). Bytes are read one to one as characters: the header is ASCII in every
 * set the listener decodes. Costs one scan of the header, whatever the frame's size.
 */
export function charsetOf(bytes: Buffer): string {
  let start = bytes.indexOf('MSH', 0, 'latin1');
  // MSH must start a segment: at the frame's start (after a BOM or line ends) or after a segment end.
  while (start > 0 && !SEGMENT_ENDS.has(bytes[start - 1]!) && !isPreamble(bytes, start)) start = bytes.indexOf('MSH', start + 3, 'latin1');
  if (start === -1) return '';
  let end = start;
  while (end < bytes.length && !SEGMENT_ENDS.has(bytes[end]!)) end++;
  const header = bytes.toString('latin1', start, end);
  const separator = header.charAt(3);
  const repetition = header.charAt(5) || '~';
  if (!separator) return '';
  // fields[0] is "MSH" and fields[1] is MSH-2, so MSH-18 is fields[17].
  const fields = header.split(separator, 18);
  return (fields[17] ?? '').split(repetition)[0]!.trim().toUpperCase();
}

/** Only whitespace or a UTF-8 byte order mark before `index`. */
function isPreamble(bytes: Buffer, index: number): boolean {
  for (let at = 0; at < index; at++) {
    const byte = bytes[at]!;
    if (byte === 0x20 || byte === 0x09 || SEGMENT_ENDS.has(byte)) continue;
    if (at + 2 < index && byte === 0xef && bytes[at + 1] === 0xbb && bytes[at + 2] === 0xbf) {
      at += 2;
      continue;
    }
    return false;
  }
  return true;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

const asUtf8 = (text: string) => Buffer.from(text, 'utf8');
const asLatin1 = (text: string) => Buffer.from(text, 'latin1');

/**
 * Decodes a frame by its MSH-18. A value the listener does not know is read as a message without
 * MSH-18 is. Answers are mostly ASCII; where they quote the message they are encoded as it was
 * (ISO 8859-1 or UTF-8), and as UTF-8 for the sets Node can decode but not encode.
 */
export function decodeFrame(bytes: Buffer): DecodedFrame {
  const charset = charsetOf(bytes);
  const decoding = DECODINGS[charset] ?? DECODINGS['']!;
  switch (decoding.kind) {
    case 'utf8-or-latin1':
      try {
        return { text: UTF8.decode(bytes), charset, encode: asUtf8 };
      } catch {
        return { text: bytes.toString('latin1'), charset, encode: asLatin1 };
      }
    case 'utf8':
      return { text: bytes.toString('utf8'), charset, encode: asUtf8 };
    case 'latin1':
      return { text: bytes.toString('latin1'), charset, encode: asLatin1 };
    case 'decoder':
      return { text: new TextDecoder(decoding.label).decode(bytes), charset, encode: asUtf8 };
  }
}
