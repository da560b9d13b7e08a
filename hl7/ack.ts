import { randomUUID } from 'node:crypto';
import { er7Header, er7Message, er7Segment, hl7Timestamp } from './er7';
import type { ParsedHl7 } from './parse';
import { ERROR_CONDITION, type Hl7Location, type Hl7Problem, locationText, type ProblemSeverity, SUPPORTED_VERSIONS } from './validate';

export type AckCode = 'AA' | 'AE' | 'AR';
/** The accept (commit) acknowledgement codes of enhanced mode (HL7 table 0008). */
export type AcceptAckCode = 'CA' | 'CE' | 'CR';

/** The sandbox's own application and facility, as it names itself in the ACK's MSH-3/MSH-4. */
export const SANDBOX_APPLICATION = 'SANDBOX';
export const SANDBOX_FACILITY = 'SYNTHETIC';

/** What the sender said about itself, read from MSH before (or without) a full parse. */
export interface AckAddressee {
  controlId: string;
  version: string;
  sendingApplication: string;
  sendingFacility: string;
  triggerEvent: string;
  processingId: string;
  /** MSH-5 and MSH-6: whom the sender addressed (an HL7 identity). */
  receivingApplication: string;
  receivingFacility: string;
}

/** One ERR in the JSON form of an ACK: where, what code, what to fix. */
export interface AckError extends Hl7Location {
  location: string;
  code: number;
  code_text: string;
  /** ERR-4 (table 0516): E stops the message, W is a warning on an accepted one. */
  severity: ProblemSeverity;
  message: string;
}

export interface Hl7Ack {
  code: AckCode | AcceptAckCode;
  /** MSA-2: the control id (MSH-10) of the message this answers. */
  controlId: string;
  /** MSH-10 of the ACK itself. */
  ackControlId: string;
  /** Every ERR, errors and warnings, in the order of the ERR segments. */
  errors: AckError[];
  /** The ACK in ER7, segments separated by `\r`. */
  er7: string;
}

export function addresseeOf(message: ParsedHl7): AckAddressee {
  const msh = message.header;
  return {
    controlId: msh.get(10),
    version: msh.get(12),
    sendingApplication: msh.get(3),
    sendingFacility: msh.get(4),
    triggerEvent: msh.get(9, 2) || (message.segment('EVN')?.get(1) ?? ''),
    processingId: msh.get(11),
    receivingApplication: msh.get(5),
    receivingFacility: msh.get(6),
  };
}

/**
 * The header of a message the parser could not read, taken field by field from its first line,
 * so even that message gets an ACK that names its control id.
 */
export function addresseeFromText(text: string): AckAddressee {
  const start = text.replace(/^[\uFEFF\s]+/, '');
  const separator = start.startsWith('MSH') ? start.charAt(3) : '|';
  const component = start.charAt(4) || '^';
  const fields = (start.split(/[\r\n]/)[0] ?? '').split(separator);
  // fields[0] is "MSH" and fields[1] is MSH-2, so MSH-n is fields[n - 1].
  const field = (n: number) => (fields[n - 1] ?? '').split(component)[0] ?? '';
  return {
    controlId: field(10),
    version: field(12),
    sendingApplication: field(3),
    sendingFacility: field(4),
    triggerEvent: (fields[8] ?? '').split(component)[1] ?? '',
    processingId: field(11),
    receivingApplication: field(5),
    receivingFacility: field(6),
  };
}

const ACK_VERSION_FALLBACK = '2.5.1';

/** The most ERR segments an ACK carries: a 256 KiB message can hold thousands of findings, an ACK stays small. */
export const MAX_ERR_SEGMENTS = 100;

/**
 * The problems an ACK lists: all of them up to MAX_ERR_SEGMENTS, else the errors first, then the
 * warnings, and a last ERR that counts the ones left out (at the severity of the worst of them).
 */
function listed(problems: readonly Hl7Problem[]): Hl7Problem[] {
  if (problems.length <= MAX_ERR_SEGMENTS) return [...problems];
  const ordered = [...problems.filter((problem) => problem.severity !== 'W'), ...problems.filter((problem) => problem.severity === 'W')];
  const kept = ordered.slice(0, MAX_ERR_SEGMENTS - 1);
  const left = ordered.slice(MAX_ERR_SEGMENTS - 1);
  const first = left[0]!;
  return [
    ...kept,
    {
      code: first.code,
      location: { segment: 'MSH', sequence: 1 },
      message: `${left.length} more finding(s) not listed, the first at ${locationText(first.location)}: ${first.message}`,
      reject: first.reject,
      severity: left.some((problem) => problem.severity !== 'W') ? 'E' : 'W',
    },
  ];
}

/**
 * An HL7 ACK: MSH, MSA (code, MSA-2 = the message's MSH-10) and one ERR per problem. ERR-2 carries
 * the location and ERR-3 the table 0357 code (v2.5+); for 2.3/2.4 senders ERR-1 carries both too,
 * since their parsers only know that field. The ACK uses the standard encoding characters.
 */
export function buildAck(
  code: AckCode | AcceptAckCode,
  to: AckAddressee,
  problems: readonly Hl7Problem[],
  now: Date = new Date(),
  text?: string,
): Hl7Ack {
  const version = SUPPORTED_VERSIONS.test(to.version) ? to.version : ACK_VERSION_FALLBACK;
  // Before v2.5, ERR has only ERR-1 (segment^sequence^field^code).
  const legacyErr = /^2\.[1-4]/.test(version);
  const ackControlId = `ACK${randomUUID().replaceAll('-', '').slice(0, 17).toUpperCase()}`;
  const processingId = ['P', 'D', 'T'].includes(to.processingId) ? to.processingId : 'P';
  const errorCount = problems.filter((problem) => problem.severity !== 'W').length;
  const summary =
    text ??
    (code === 'AA' || code === 'CA'
      ? problems.length > 0
        ? `Message accepted with ${problems.length} warning(s)`
        : 'Message accepted'
      : `${errorCount} problem(s): ${problems.find((problem) => problem.severity !== 'W')?.message ?? 'rejected'}`);
  const segments = [
    er7Header([
      SANDBOX_APPLICATION,
      SANDBOX_FACILITY,
      to.sendingApplication,
      to.sendingFacility,
      hl7Timestamp(now),
      null,
      ['ACK', to.triggerEvent, 'ACK'],
      ackControlId,
      processingId,
      version,
    ]),
    er7Segment('MSA', [code, to.controlId, summary.slice(0, 80)]),
  ];
  const errors: AckError[] = listed(problems).map((problem) => ({
    ...problem.location,
    location: locationText(problem.location),
    code: problem.code,
    code_text: ERROR_CONDITION[problem.code],
    severity: problem.severity ?? 'E',
    message: problem.message,
  }));
  for (const error of errors) {
    const { segment, sequence, field, repetition, component } = error;
    const legacy = legacyErr ? [segment, sequence, field, [error.code, error.code_text, 'HL70357']] : null;
    segments.push(
      er7Segment('ERR', [
        legacy,
        [segment, sequence, field, repetition, component],
        [error.code, error.code_text, 'HL70357'],
        error.severity,
        null,
        null,
        null,
        error.message,
      ]),
    );
  }
  return { code, controlId: to.controlId, ackControlId, errors, er7: er7Message(segments) };
}

/** The JSON form of an ACK: `{ ack, errors, warnings }` (ERR-4 E and W, same shape); the caller adds `delivery`. */
export function ackJson(ack: Hl7Ack): {
  ack: { code: AckCode | AcceptAckCode; message_control_id: string; ack_control_id: string; er7: string };
  errors: AckError[];
  warnings: AckError[];
} {
  return {
    ack: { code: ack.code, message_control_id: ack.controlId, ack_control_id: ack.ackControlId, er7: ack.er7 },
    errors: ack.errors.filter((error) => error.severity === 'E'),
    warnings: ack.errors.filter((error) => error.severity === 'W'),
  };
}

/** HL7 table 0155: when an acknowledgement is sent (MSH-15 for the accept ACK, MSH-16 for the application ACK). */
export const ACK_CONDITIONS = ['AL', 'NE', 'ER', 'SU'] as const;
export type AckCondition = (typeof ACK_CONDITIONS)[number];

/** The acknowledgements a message asks for, once its outcome is known. */
export interface AcknowledgementsDue {
  /** `original` when MSH-15 and MSH-16 are both empty: one application ACK, always. */
  mode: 'original' | 'enhanced';
  /** The accept (commit) ACK to send first, or null when none is due. */
  accept: AcceptAckCode | null;
  /** Whether the application ACK (AA/AE/AR) is due. */
  application: boolean;
}

const conditionOf = (value: string): AckCondition => ((ACK_CONDITIONS as readonly string[]).includes(value) ? (value as AckCondition) : 'AL');
const isDue = (condition: AckCondition, succeeded: boolean) =>
  condition === 'AL' || (condition === 'SU' && succeeded) || (condition === 'ER' && !succeeded);

/**
 * Which acknowledgements are due for a message (HL7 v2 chapter 2, acknowledgement modes), given its
 * MSH-15 (accept acknowledgement type), MSH-16 (application acknowledgement type) and the
 * application outcome. Both empty: original mode, one application ACK. Either valued: enhanced mode,
 * an accept ACK (CA, or CR when the message is refused as a whole) as MSH-15 asks, then the
 * application ACK as MSH-16 asks; an empty or unknown condition counts as AL. Pure, so the MLLP
 * listener and the HTTP inject answer alike.
 */
export function acknowledgementsDue(acceptType: string, applicationType: string, outcome: AckCode): AcknowledgementsDue {
  if (acceptType === '' && applicationType === '') return { mode: 'original', accept: null, application: true };
  const accept: AcceptAckCode = outcome === 'AR' ? 'CR' : 'CA';
  return {
    mode: 'enhanced',
    accept: isDue(conditionOf(acceptType), accept === 'CA') ? accept : null,
    application: isDue(conditionOf(applicationType), outcome === 'AA'),
  };
}

/**
 * The one ACK a synchronous answer (the HTTP inject) carries: the application ACK when it is due,
 * else the accept ACK enhanced mode asks for, else (nothing due) the application ACK anyway, since
 * an HTTP request always gets an answer.
 */
export function synchronousAck(application: Hl7Ack, due: AcknowledgementsDue, to: AckAddressee, now: Date = new Date()): Hl7Ack {
  if (due.application || !due.accept) return application;
  return buildAck(due.accept, to, [], now);
}
