/**
 * Hand-written malformed HL7 v2 messages (synthetic, made up for the tests): each is refused, with
 * the ACK code, ERR-3 condition code and ERR-2 location (segment and field) it must be answered with.
 * Header problems mean the text is not a well-formed v2 message (AR); the rest stop processing (AE).
 */
export interface NegativeMessage {
  name: string;
  text: string;
  code: 'AE' | 'AR';
  errorCode: number;
  /** ERR-2: segment^sequence^field[^repetition^component]. */
  location: string;
}

const PATIENT = 'PID|1||SYN10001^^^SANDBOX^MR||Testperson^Ada||19800101|F';
const VISIT = 'PV1|1|I|WARD^101^A';
const header = (fields: { type?: string; control?: string; processing?: string; version?: string; encoding?: string }) =>
  `MSH|${fields.encoding ?? '^~\\&'}|SYNTHETIC-EHR|LAKESIDE|SANDBOX|SYNTHETIC|20250301101500||${fields.type ?? 'ADT^A01^ADT_A01'}|${fields.control ?? 'NEG0001'}|${fields.processing ?? 'P'}|${fields.version ?? '2.5.1'}`;
const message = (msh: string, ...rest: string[]) => [msh, 'EVN|A01|20250301101500', ...rest].join('\r');

export const NEGATIVES: readonly NegativeMessage[] = [
  { name: 'empty control id', text: message(header({ control: '' }), PATIENT, VISIT), code: 'AR', errorCode: 101, location: 'MSH^1^10' },
  { name: 'blank control id', text: message(header({ control: '   ' }), PATIENT, VISIT), code: 'AR', errorCode: 101, location: 'MSH^1^10' },
  { name: 'empty version', text: message(header({ version: '' }), PATIENT, VISIT), code: 'AR', errorCode: 101, location: 'MSH^1^12' },
  { name: 'version 3', text: message(header({ version: '3.0' }), PATIENT, VISIT), code: 'AR', errorCode: 203, location: 'MSH^1^12' },
  { name: 'version 2.9', text: message(header({ version: '2.9' }), PATIENT, VISIT), code: 'AR', errorCode: 203, location: 'MSH^1^12' },
  { name: 'version with a v', text: message(header({ version: 'v2.5' }), PATIENT, VISIT), code: 'AR', errorCode: 203, location: 'MSH^1^12' },
  {
    name: 'version with too many parts',
    text: message(header({ version: '2.5.1.1.1' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 203,
    location: 'MSH^1^12',
  },
  { name: 'processing id X', text: message(header({ processing: 'X' }), PATIENT, VISIT), code: 'AR', errorCode: 202, location: 'MSH^1^11' },
  { name: 'processing id PP', text: message(header({ processing: 'PP' }), PATIENT, VISIT), code: 'AR', errorCode: 202, location: 'MSH^1^11' },
  { name: 'empty message type', text: message(header({ type: '' }), PATIENT, VISIT), code: 'AR', errorCode: 101, location: 'MSH^1^9^1^1' },
  {
    name: 'lower-case message type',
    text: message(header({ type: 'adt^a01' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 200,
    location: 'MSH^1^9^1^1',
  },
  {
    name: 'message type of four letters',
    text: message(header({ type: 'ADTX^A01' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 200,
    location: 'MSH^1^9^1^1',
  },
  {
    name: 'no trigger, in MSH-9 or EVN-1',
    text: [header({ type: 'ADT' }), PATIENT, VISIT].join('\r'),
    code: 'AR',
    errorCode: 101,
    location: 'MSH^1^9^1^2',
  },
  {
    name: 'trigger of two characters',
    text: message(header({ type: 'ADT^A1' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 201,
    location: 'MSH^1^9^1^2',
  },
  {
    name: 'encoding characters repeated',
    text: message(header({ encoding: '^^\\&' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 100,
    location: 'MSH^1^2',
  },
  {
    name: 'encoding characters missing',
    text: message(header({ encoding: '^~' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 100,
    location: 'MSH^1^2',
  },
  {
    name: 'a letter among the encoding characters',
    text: message(header({ encoding: '^~\\A' }), PATIENT, VISIT),
    code: 'AR',
    errorCode: 100,
    location: 'MSH^1^2',
  },
];

/** Refused messages whose problem is a whole segment (no field to name): a missing PID, a line that is no segment. */
export const SEGMENT_NEGATIVES: readonly NegativeMessage[] = [
  { name: 'admission without PID', text: message(header({}), VISIT), code: 'AE', errorCode: 100, location: 'PID' },
  {
    name: 'merge without PID',
    text: message(header({ type: 'ADT^A40^ADT_A39' }), 'MRG|SYN0001^^^SANDBOX^MR'),
    code: 'AE',
    errorCode: 100,
    location: 'PID',
  },
  { name: 'a line that is no segment', text: message(header({}), PATIENT, '1PV|x', VISIT), code: 'AE', errorCode: 100, location: '1PV^1' },
];
