import type { Hl7Segment, ParsedHl7 } from './parse';
import { findHl7Trigger, type Hl7Trigger, requiresPatient } from './triggers';
import type { Hl7ConformanceMode } from './vocabulary';

/** HL7 table 0357 (message error condition codes): the ones the sandbox reports. */
export const ERROR_CONDITION = {
  100: 'Segment sequence error',
  101: 'Required field missing',
  102: 'Data type error',
  103: 'Table value not found',
  200: 'Unsupported message type',
  201: 'Unsupported event code',
  202: 'Unsupported processing id',
  203: 'Unsupported version id',
  207: 'Application internal error',
} as const;
export type ErrorConditionCode = keyof typeof ERROR_CONDITION;

/** Where a problem is, as ERR-2 (ERL) spells it: segment^sequence^field^repetition^component. */
export interface Hl7Location {
  segment: string;
  sequence?: number;
  field?: number;
  repetition?: number;
  component?: number;
}

/**
 * How much a finding weighs: `E` stops the message (AE, or AR when `reject`), `W` is reported with
 * the ACK (ERR-4 = W) while the message is accepted and the field left out of the FHIR output.
 */
export type ProblemSeverity = 'E' | 'W';

export interface Hl7Problem {
  code: ErrorConditionCode;
  location: Hl7Location;
  message: string;
  /** A problem with the message as a whole (its header, version or processing id): answered AR, not AE. */
  reject: boolean;
  /** `E` when absent. */
  severity?: ProblemSeverity;
}

/** ERR-2 text: `PID^1^7`, `PID^1^5^1^1`, or just `PV1` for a segment that is missing. */
export function locationText(location: Hl7Location): string {
  const parts = [location.segment, location.sequence, location.field, location.repetition, location.component];
  let end = parts.length;
  while (end > 1 && parts[end - 1] === undefined) end--;
  return parts
    .slice(0, end)
    .map((part) => (part === undefined ? '' : String(part)))
    .join('^');
}

/** The HL7 versions the sandbox reads: every v2 release, 2.1 to 2.8, with their point releases (2.3.1, 2.5.1, 2.8.2). */
export const SUPPORTED_VERSIONS = /^2\.[1-8](\.\d{1,2}){0,2}$/;

const DTM = /^(\d{4})(?:(\d{2})(?:(\d{2})(?:(\d{2})(?:(\d{2})(?:(\d{2})(?:\.\d{1,4})?)?)?)?)?)?([+-]\d{4})?$/;

/** Whether `value` is an HL7 DTM/TS (YYYY[MM[DD[HH[MM[SS[.S]]]]]][+/-ZZZZ]) naming a real instant. */
export function isHl7DateTime(value: string): boolean {
  const match = DTM.exec(value);
  if (!match || match[1] === '0000') return false;
  const [, , month, day, hour, minute, second, offset] = match;
  if (month !== undefined && (Number(month) < 1 || Number(month) > 12)) return false;
  if (day !== undefined && (Number(day) < 1 || Number(day) > new Date(Date.UTC(Number(match[1]), Number(month), 0)).getUTCDate())) return false;
  if (hour !== undefined && Number(hour) > 23) return false;
  if (minute !== undefined && Number(minute) > 59) return false;
  if (second !== undefined && Number(second) > 59) return false;
  if (offset !== undefined && (Number(offset.slice(1, 3)) > 14 || Number(offset.slice(3)) > 59)) return false;
  return true;
}

export const isHl7Number = (value: string) => /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(value);

/** HL7 tables the mapping reads, with the values each allows. */
export const TABLES = {
  '0001': ['A', 'F', 'M', 'N', 'O', 'U', 'X'],
  '0004': ['B', 'C', 'E', 'I', 'N', 'O', 'P', 'R', 'U'],
  '0085': ['A', 'B', 'C', 'D', 'F', 'I', 'N', 'O', 'P', 'R', 'S', 'U', 'V', 'W', 'X'],
  '0103': ['D', 'P', 'T'],
  '0123': ['O', 'I', 'S', 'A', 'P', 'C', 'R', 'F', 'X', 'Y', 'Z'],
  '0125': [
    'AD',
    'CE',
    'CF',
    'CK',
    'CN',
    'CNE',
    'CP',
    'CWE',
    'CX',
    'DR',
    'DT',
    'DTM',
    'ED',
    'FT',
    'ID',
    'IS',
    'MO',
    'NM',
    'PN',
    'RP',
    'SN',
    'ST',
    'TM',
    'TN',
    'TS',
    'TX',
    'XAD',
    'XCN',
    'XON',
    'XPN',
    'XTN',
  ],
  '0271': ['AU', 'DI', 'DO', 'IN', 'IP', 'LA', 'PA'],
  '0322': ['CP', 'RE', 'NA', 'PA'],
} as const;

/**
 * How strictly a message is checked (hl7/vocabulary.ts). `lenient` (the default) reports a
 * missing or malformed field as a warning and accepts the message, as production listeners do;
 * `strict` answers AE for every finding, for partners who test their conformance.
 */
export type ConformanceMode = Hl7ConformanceMode;

export interface Validation {
  /** MSH-9.1^MSH-9.2 (the trigger from EVN-1 for v2.1 senders); undefined when MSH-9 names none. */
  type?: string;
  /** The trigger's template entry, when the sandbox has one (its own event and checks). */
  trigger?: Hl7Trigger;
  problems: Hl7Problem[];
}

/** The acknowledgment code for a set of problems (MSA-1): warnings alone leave it AA. */
export function acknowledgmentCode(problems: readonly Hl7Problem[]): 'AA' | 'AE' | 'AR' {
  if (problems.some((problem) => problem.reject)) return 'AR';
  return problems.some((problem) => problem.severity !== 'W') ? 'AE' : 'AA';
}

/** Collects problems with the location of the segment being checked. */
class Checker {
  readonly problems: Hl7Problem[] = [];

  constructor(private readonly mode: ConformanceMode = 'lenient') {}

  /** A finding that does not stop processing: a warning, or an error in strict mode. */
  add(code: ErrorConditionCode, location: Hl7Location, message: string): void {
    this.problems.push({ code, location, message, reject: false, severity: this.mode === 'strict' ? 'E' : 'W' });
  }

  /** Content the message cannot be processed without: AE in every mode. */
  error(code: ErrorConditionCode, location: Hl7Location, message: string): void {
    this.problems.push({ code, location, message, reject: false, severity: 'E' });
  }

  /** The message as a whole is refused (header, version, processing id): AR. */
  reject(code: ErrorConditionCode, location: Hl7Location, message: string): void {
    this.problems.push({ code, location, message, reject: true, severity: 'E' });
  }

  at(segment: Hl7Segment, field?: number, component?: number): Hl7Location {
    return { segment: segment.name, sequence: segment.sequence, field, repetition: component === undefined ? undefined : 1, component };
  }

  /** A field (or its first component) that must hold a value: 101. */
  required(segment: Hl7Segment, field: number, what: string, component?: number): boolean {
    const value = component === undefined ? segment.field(field).present : segment.get(field, component) !== '';
    if (!value)
      this.add(
        101,
        this.at(segment, field, component),
        `${segment.name}-${field}${component === undefined ? '' : `.${component}`} (${what}) is required`,
      );
    return value;
  }

  /** A DTM/TS value, checked when present: 102. */
  dateTime(segment: Hl7Segment, field: number, what: string, component = 1, required = false): void {
    const value = segment.get(field, component);
    if (value === '') {
      if (required) this.required(segment, field, what, component);
      return;
    }
    if (!isHl7DateTime(value))
      this.add(
        102,
        this.at(segment, field, component),
        `${segment.name}-${field} (${what}) "${value}" is not an HL7 date/time (YYYYMMDD[HHMM[SS]][+/-ZZZZ])`,
      );
  }

  /** An NM value, checked when present: 102. */
  number(segment: Hl7Segment, field: number, what: string, component = 1): void {
    const value = segment.get(field, component);
    if (value !== '' && !isHl7Number(value))
      this.add(102, this.at(segment, field, component), `${segment.name}-${field} (${what}) "${value}" is not a number`);
  }

  /** A coded value from an HL7 table, checked when present: 103. */
  table(segment: Hl7Segment, field: number, table: keyof typeof TABLES, what: string, component = 1): void {
    const value = segment.get(field, component);
    if (value !== '' && !(TABLES[table] as readonly string[]).includes(value)) {
      this.add(
        103,
        this.at(segment, field, component),
        `${segment.name}-${field} (${what}) "${value}" is not in HL7 table ${table} (${TABLES[table].join(', ')})`,
      );
    }
  }
}

const MESSAGE_CODE = /^[A-Z][A-Z0-9]{2}$/;
const TRIGGER_EVENT = /^[A-Z0-9]{3}$/;
const SEGMENT_ID = /^[A-Z][A-Z0-9]{2}$/;

/**
 * The header decides whether the message is well formed (issue 21): MSH-9 names a message type,
 * MSH-10 a control id, MSH-12 a v2 version, MSH-11 a processing id of table 0103. Anything else in
 * it is a finding. Returns MSH-9.1^MSH-9.2, or undefined when the message is refused.
 */
function checkHeader(message: ParsedHl7, check: Checker): string | undefined {
  const msh = message.header;
  if (msh.get(10).trim() === '') check.reject(101, check.at(msh, 10), 'MSH-10 (message control id) is required: the ACK answers it in MSA-2');
  const version = msh.get(12);
  if (version === '') check.reject(101, check.at(msh, 12), 'MSH-12 (version id) is required');
  else if (!SUPPORTED_VERSIONS.test(version)) check.reject(203, check.at(msh, 12), `HL7 version "${version}" is not a v2 version; send 2.1 to 2.8`);
  const processing = msh.get(11);
  if (processing === '') check.add(101, check.at(msh, 11), 'MSH-11 (processing id) is required; P is assumed');
  else if (!(TABLES['0103'] as readonly string[]).includes(processing))
    check.reject(202, check.at(msh, 11), `MSH-11 (processing id) "${processing}" is not P, D or T`);
  check.dateTime(msh, 7, 'date/time of message');

  const code = msh.get(9, 1);
  // v2.1 names the trigger in EVN-1 only; later versions in MSH-9.2.
  const event = msh.get(9, 2) || message.segment('EVN')?.get(1) || '';
  if (!MESSAGE_CODE.test(code)) {
    check.reject(code === '' ? 101 : 200, check.at(msh, 9, 1), 'MSH-9 (message type) must name the message code and trigger event, e.g. ADT^A01');
    return undefined;
  }
  if (!TRIGGER_EVENT.test(event)) {
    check.reject(event === '' ? 101 : 201, check.at(msh, 9, 2), 'MSH-9 (message type) must name the message code and trigger event, e.g. ADT^A01');
    return undefined;
  }
  return `${code}^${event}`;
}

function checkStructure(message: ParsedHl7, type: string, trigger: Hl7Trigger | undefined, check: Checker): void {
  for (const segment of message.segments) {
    if (!SEGMENT_ID.test(segment.name))
      check.error(
        100,
        { segment: segment.name, sequence: segment.sequence },
        `Segment ${segment.position} "${segment.name}" is not a segment id (three capitals or digits)`,
      );
  }
  if (requiresPatient(type) && !message.segment('PID')) check.error(100, { segment: 'PID' }, `${type} is about a patient and needs a PID segment`);
  for (const name of trigger?.requiredSegments ?? []) {
    if (!message.segment(name) && !(name === 'PID' && requiresPatient(type))) check.add(100, { segment: name }, `${type} requires a ${name} segment`);
  }
  const firstObr = message.segment('OBR')?.position;
  const firstObx = message.all('OBX')[0];
  if (type === 'ORU^R01' && firstObr !== undefined && firstObx && firstObx.position < firstObr) {
    check.add(100, { segment: 'OBX', sequence: 1 }, 'In ORU^R01 every OBX follows the OBR it reports on');
  }
}

/** Field checks for each segment the mapping reads: what it needs present, and the data types it depends on. */
const segmentChecks: Record<string, (segment: Hl7Segment, check: Checker) => void> = {
  PID(segment, check) {
    const identified = segment.field(3).repetitions.some((repetition) => repetition.get(1) !== '');
    if (!identified) check.add(101, check.at(segment, 3, 1), 'PID-3 (patient identifier list) needs at least one identifier (CX.1)');
    check.required(segment, 5, 'patient name: family name', 1);
    check.dateTime(segment, 7, 'date/time of birth');
    check.table(segment, 8, '0001', 'administrative sex');
    check.dateTime(segment, 29, 'patient death date and time');
  },
  PV1(segment, check) {
    if (check.required(segment, 2, 'patient class')) check.table(segment, 2, '0004', 'patient class');
    check.dateTime(segment, 44, 'admit date/time');
    check.dateTime(segment, 45, 'discharge date/time');
  },
  NK1(segment, check) {
    check.required(segment, 2, 'next of kin name: family name', 1);
  },
  IN1(segment, check) {
    check.required(segment, 3, 'insurance company id', 1);
    check.dateTime(segment, 12, 'plan effective date');
    check.dateTime(segment, 13, 'plan expiration date');
  },
  ORC(segment, check) {
    check.required(segment, 1, 'order control');
    check.dateTime(segment, 9, 'date/time of transaction');
  },
  OBR(segment, check) {
    check.required(segment, 4, 'universal service identifier', 1);
    check.dateTime(segment, 7, 'observation date/time');
    check.dateTime(segment, 22, 'results report/status change date/time');
    check.table(segment, 25, '0123', 'result status');
  },
  OBX(segment, check) {
    const type = segment.get(2);
    if (type === '') {
      if (segment.field(5).present) check.required(segment, 2, 'value type');
    } else check.table(segment, 2, '0125', 'value type');
    check.required(segment, 3, 'observation identifier', 1);
    if (type === 'NM') check.number(segment, 5, 'observation value (NM)');
    if (type === 'SN') {
      const comparator = segment.get(5, 1);
      const first = segment.get(5, 2);
      const second = segment.get(5, 4);
      const wellFormed =
        ['', '>', '<', '>=', '<=', '=', '<>'].includes(comparator) && first !== '' && isHl7Number(first) && (second === '' || isHl7Number(second));
      if (!wellFormed)
        check.add(
          102,
          check.at(segment, 5, 1),
          `OBX-5 (observation value, SN) "${segment.field(5).raw}" is not a structured numeric (comparator^number^separator^number)`,
        );
    }
    if (type === 'DT' || type === 'DTM' || type === 'TS') check.dateTime(segment, 5, 'observation value');
    if (check.required(segment, 11, 'observation result status')) check.table(segment, 11, '0085', 'observation result status');
    check.dateTime(segment, 14, 'date/time of the observation');
  },
  SCH(segment, check) {
    if (segment.get(1, 1) === '' && segment.get(2, 1) === '')
      check.add(101, check.at(segment, 1, 1), 'SCH-1 (placer appointment id) or SCH-2 (filler appointment id) is required');
    check.dateTime(segment, 11, 'appointment timing quantity: start', 4);
  },
  AIS(segment, check) {
    check.required(segment, 3, 'universal service identifier', 1);
    check.dateTime(segment, 4, 'start date/time');
    check.number(segment, 7, 'duration');
  },
  TXA(segment, check) {
    check.required(segment, 2, 'document type', 1);
    check.dateTime(segment, 4, 'activity date/time');
    check.required(segment, 12, 'unique document number', 1);
    if (check.required(segment, 17, 'document completion status')) check.table(segment, 17, '0271', 'document completion status');
  },
  RXA(segment, check) {
    check.dateTime(segment, 3, 'date/time start of administration', 1, true);
    check.required(segment, 5, 'administered code', 1);
    check.number(segment, 6, 'administered amount');
    check.table(segment, 20, '0322', 'completion status');
  },
  RXE(segment, check) {
    check.required(segment, 2, 'give code', 1);
    check.number(segment, 3, 'give amount - minimum');
    check.number(segment, 10, 'dispense amount');
    check.number(segment, 12, 'number of refills');
  },
  FT1(segment, check) {
    check.dateTime(segment, 4, 'transaction date', 1, true);
    check.required(segment, 6, 'transaction type');
    check.required(segment, 7, 'transaction code', 1);
    check.number(segment, 10, 'transaction quantity');
    check.number(segment, 11, 'transaction amount - extended', 1);
  },
  DG1(segment, check) {
    check.required(segment, 3, 'diagnosis code', 1);
    check.dateTime(segment, 5, 'diagnosis date/time');
  },
  AL1(segment, check) {
    check.required(segment, 3, 'allergen code/mnemonic/description', 1);
    check.dateTime(segment, 6, 'identification date');
  },
  IAM(segment, check) {
    check.required(segment, 3, 'allergen code/mnemonic/description', 1);
    check.dateTime(segment, 11, 'onset date');
  },
  PR1(segment, check) {
    check.required(segment, 3, 'procedure code', 1);
    check.dateTime(segment, 5, 'procedure date/time');
  },
  RXO(segment, check) {
    if (segment.get(1, 1) === '' && segment.get(1, 2) === '') check.required(segment, 1, 'requested give code', 1);
    check.number(segment, 2, 'requested give amount - minimum');
  },
  SPM(segment, check) {
    check.required(segment, 4, 'specimen type', 1);
    check.dateTime(segment, 17, 'specimen collection date/time', 1);
  },
  TQ1(segment, check) {
    check.dateTime(segment, 7, 'start date/time');
    check.dateTime(segment, 8, 'end date/time');
  },
  MRG(segment, check) {
    const identified = segment.field(1).repetitions.some((repetition) => repetition.get(1) !== '');
    if (!identified) check.add(101, check.at(segment, 1, 1), 'MRG-1 (prior patient identifier list) needs at least one identifier (CX.1)');
  },
};

/**
 * Checks a parsed message before it is mapped: the header (AR when it is not a well-formed v2
 * message), the segments it cannot be processed without (AE), and, per segment, the fields and data
 * types the mapping relies on (warnings, errors in strict mode).
 */
export function validateHl7(message: ParsedHl7, mode: ConformanceMode = 'lenient'): Validation {
  const check = new Checker(mode);
  const type = checkHeader(message, check);
  if (!type || check.problems.some((problem) => problem.reject)) return { type, problems: check.problems };
  const trigger = findHl7Trigger(type);
  checkStructure(message, type, trigger, check);
  for (const segment of message.segments) segmentChecks[segment.name]?.(segment, check);
  if (type === 'SIU^S12') {
    const start = message.segment('AIS')?.get(4) || message.segment('SCH')?.get(11, 4);
    if (!start) check.add(101, { segment: 'AIS', sequence: 1, field: 4 }, 'A booked appointment needs its start: AIS-4 (or SCH-11.4 before v2.6)');
  }
  return { type, trigger, problems: check.problems };
}
