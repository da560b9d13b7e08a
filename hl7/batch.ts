import { randomUUID } from 'node:crypto';
import { SANDBOX_APPLICATION, SANDBOX_FACILITY } from './ack';
import { er7Segment, hl7Timestamp } from './er7';

/**
 * HL7 v2 batches and streams (v2.5 chapter 2.10.3): a file (FHS … FTS) of batches (BHS … BTS) of
 * messages, or simply several messages one after another. Each message is processed and
 * acknowledged on its own; the batch is answered with a batch of those acknowledgements, its
 * headers referring to the sender's file and batch control ids (FHS-12, BHS-12).
 *
 * Reading here is by segment lines only (the first field of each line), so it costs one pass over
 * the text whatever it holds; each message is then parsed on its own.
 */

/** The header segment's fields a batch acknowledgement refers to (FHS or BHS, same positions). */
export interface BatchHeader {
  /** FHS-3/BHS-3 and FHS-4/BHS-4: who sent it (the acknowledgement goes back to them). */
  sendingApplication: string;
  sendingFacility: string;
  /** FHS-8/BHS-8: the batch's security field (a credential may travel here for all its messages). */
  security: string;
  /** FHS-11/BHS-11: the sender's control id, which the acknowledgement's FHS-12/BHS-12 names. */
  controlId: string;
}

export interface Hl7Stream {
  /** The file header (FHS), when the text has one. */
  file?: BatchHeader;
  /** The batch header (BHS), when the text has one. */
  batch?: BatchHeader;
  /** Each message's text, segments separated by `\r`. */
  messages: string[];
}

const HEADER_SEGMENT = /^(MSH|FHS|BHS)[^A-Za-z0-9\s]/;

/**
 * Whether the text is a batch or a stream rather than one message: it starts with FHS or BHS, or a
 * second segment line starts with MSH. Cheap: it looks only at line starts.
 */
export function isBatchOrStream(text: string): boolean {
  const start = text.replace(/^[\uFEFF\s]+/, '').slice(0, 4);
  if (/^(FHS|BHS)[^A-Za-z0-9\s]$/.test(start)) return true;
  for (let at = text.indexOf('MSH'); at !== -1; at = text.indexOf('MSH', at + 3)) {
    const before = text.charCodeAt(at - 1);
    if (at > 0 && (before === 0x0d || before === 0x0a) && text.slice(0, at).trim() !== '') return true;
  }
  return false;
}

/** The fields of a header segment line (`fields[0]` is the name, `fields[1]` the encoding characters). */
function headerOf(line: string): BatchHeader {
  const separator = line.charAt(3);
  const component = line.charAt(4) || '^';
  const fields = line.split(separator, 12);
  const value = (n: number) => (fields[n - 1] ?? '').split(component)[0]!.trim();
  return { sendingApplication: value(3), sendingFacility: value(4), security: (fields[7] ?? '').trim(), controlId: value(11) };
}

/** Splits a batch or stream into its messages; the file and batch trailers (FTS, BTS) end nothing but themselves. */
export function splitStream(text: string): Hl7Stream {
  const stream: Hl7Stream = { messages: [] };
  // Whether the last message takes the segments that follow (it began with MSH and no trailer came since).
  let open = false;
  for (const line of text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/)) {
    if (line.trim() === '') continue;
    const name = line.slice(0, 3);
    const delimited = HEADER_SEGMENT.test(line);
    if (delimited && (name === 'FHS' || name === 'BHS')) {
      if (name === 'FHS') stream.file ??= headerOf(line);
      else stream.batch ??= headerOf(line);
      open = false;
    } else if (name === 'BTS' || name === 'FTS') {
      open = false;
    } else if ((delimited && name === 'MSH') || !open) {
      // A segment outside any message becomes one of its own, which is then answered as not HL7.
      stream.messages.push(line);
      open = delimited && name === 'MSH';
    } else {
      stream.messages[stream.messages.length - 1] += `\r${line}`;
    }
  }
  return stream;
}

/**
 * The batch acknowledgement: FHS (when the sender sent one) and BHS around the acknowledgements,
 * in the order of the messages, then BTS with their count and FTS. The headers name the sandbox as
 * sender and refer to the sender's control ids.
 */
export function batchAck(stream: Hl7Stream, acknowledgements: readonly string[], now: Date = new Date()): string {
  const stamp = hl7Timestamp(now);
  const header = (name: 'FHS' | 'BHS', to: BatchHeader | undefined, controlId: string) =>
    `${name}|^~\\&${er7Segment('', [SANDBOX_APPLICATION, SANDBOX_FACILITY, to?.sendingApplication, to?.sendingFacility, stamp, null, 'ACK', null, controlId, to?.controlId])}`;
  const id = randomUUID().replaceAll('-', '').slice(0, 17).toUpperCase();
  const segments: string[] = [];
  if (stream.file) segments.push(header('FHS', stream.file, `F${id}`));
  segments.push(header('BHS', stream.batch ?? stream.file, `B${id}`));
  segments.push(...acknowledgements);
  // BTS-1 counts the messages of the answering batch: each acknowledgement is one.
  segments.push(er7Segment('BTS', [acknowledgements.length]));
  if (stream.file) segments.push(er7Segment('FTS', [1]));
  return segments.join('\r');
}
