import { randomUUID } from 'node:crypto';
import { er7Header, er7Message, er7Segment, hl7Timestamp } from './er7';
import type { ParsedHl7 } from './parse';
import { ERROR_CONDITION, type Hl7Location, type Hl7Problem, locationText } from './validate';

export type AckCode = 'AA' | 'AE' | 'AR';

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
}

/** One ERR in the JSON form of an ACK: where, what code, what to fix. */
export interface AckError extends Hl7Location {
  location: string;
  code: number;
  code_text: string;
  severity: 'E';
  message: string;
}

export interface Hl7Ack {
  code: AckCode;
  /** MSA-2: the control id (MSH-10) of the message this answers. */
  controlId: string;
  /** MSH-10 of the ACK itself. */
  ackControlId: string;
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
    triggerEvent: msh.get(9, 2),
    processingId: msh.get(11),
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
  };
}

const ACK_VERSION_FALLBACK = '2.5.1';

/**
 * An HL7 ACK: MSH, MSA (code, MSA-2 = the message's MSH-10) and one ERR per problem. ERR-2 carries
 * the location and ERR-3 the table 0357 code (v2.5+); for 2.3/2.4 senders ERR-1 carries both too,
 * since their parsers only know that field. The ACK uses the standard encoding characters.
 */
export function buildAck(code: AckCode, to: AckAddressee, problems: readonly Hl7Problem[], now: Date = new Date(), text?: string): Hl7Ack {
  const version = /^2\.\d/.test(to.version) ? to.version : ACK_VERSION_FALLBACK;
  const legacyErr = /^2\.[34]/.test(version);
  const ackControlId = `ACK${randomUUID().replaceAll('-', '').slice(0, 17).toUpperCase()}`;
  const processingId = ['P', 'D', 'T'].includes(to.processingId) ? to.processingId : 'P';
  const summary = text ?? (code === 'AA' ? 'Message accepted' : `${problems.length} problem(s): ${problems[0]?.message ?? 'rejected'}`);
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
  const errors: AckError[] = problems.map((problem) => ({
    ...problem.location,
    location: locationText(problem.location),
    code: problem.code,
    code_text: ERROR_CONDITION[problem.code],
    severity: 'E',
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
        'E',
        null,
        null,
        null,
        error.message,
      ]),
    );
  }
  return { code, controlId: to.controlId, ackControlId, errors, er7: er7Message(segments) };
}

/** The JSON form of an ACK (issue 10): `{ ack, errors }`; the caller adds `delivery`. */
export function ackJson(ack: Hl7Ack): {
  ack: { code: AckCode; message_control_id: string; ack_control_id: string; er7: string };
  errors: AckError[];
} {
  return { ack: { code: ack.code, message_control_id: ack.controlId, ack_control_id: ack.ackControlId, er7: ack.er7 }, errors: ack.errors };
}
