import type { Bundle } from 'fhir/r4';
import type { Hl7Trigger } from '../catalog/hl7-triggers';
import { addresseeFromText, addresseeOf, buildAck, type Hl7Ack } from './ack';
import { MAX_MESSAGE_BYTES, NotHl7Error, type ParsedHl7, parseHl7, UnreadableHl7Error } from './parse';
import { mapToFhir } from './to-fhir';
import { acknowledgmentCode, type Hl7Problem, validateHl7 } from './validate';

/** What became of one inbound message: the same for the HTTP inject and the MLLP listener. */
export type Hl7Outcome =
  /** Not HL7 at all: HTTP answers 400, MLLP an AR. */
  | { kind: 'not_hl7'; detail: string; ack: Hl7Ack }
  /** Over MAX_MESSAGE_BYTES: HTTP 413, MLLP an AR. */
  | { kind: 'too_large'; detail: string; ack: Hl7Ack }
  /** Read, checked, answered: AA with the mapped Bundle, or AE/AR with the problems. */
  | { kind: 'acknowledged'; ack: Hl7Ack; controlId: string; message?: ParsedHl7; trigger?: Hl7Trigger; bundle?: Bundle };

const problem = (code: Hl7Problem['code'], message: string, segment = 'MSH'): Hl7Problem => ({
  code,
  location: { segment, sequence: 1 },
  message,
  reject: true,
});

/** The AR for a message over MAX_MESSAGE_BYTES, from its first bytes (enough for its MSH). */
export function oversizeAck(head: string, bytes: number, now: Date = new Date()): { detail: string; ack: Hl7Ack } {
  const detail = `The message is ${bytes === Number.POSITIVE_INFINITY ? 'more than that' : `${bytes} bytes`}; the limit is ${MAX_MESSAGE_BYTES} bytes (256 KiB)`;
  return { detail, ack: buildAck('AR', addresseeFromText(head.slice(0, 4096)), [problem(207, detail)], now) };
}

/**
 * Parse, validate and map one message, and build its ACK. Never throws: anything unexpected while
 * checking or mapping is answered AE with ERR code 207 (application internal error), as HL7 prescribes.
 */
export function processHl7(text: string, now: Date = new Date()): Hl7Outcome {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) return { kind: 'too_large', ...oversizeAck(text, bytes, now) };
  let message: ParsedHl7;
  try {
    message = parseHl7(text);
  } catch (error) {
    const addressee = addresseeFromText(text);
    if (error instanceof NotHl7Error)
      return { kind: 'not_hl7', detail: error.message, ack: buildAck('AR', addressee, [problem(100, error.message)], now) };
    const detail = error instanceof UnreadableHl7Error ? error.message : `The message cannot be read: ${(error as Error).message}`;
    return { kind: 'acknowledged', controlId: addressee.controlId, ack: buildAck('AR', addressee, [problem(100, detail)], now) };
  }
  const addressee = addresseeOf(message);
  const answer = (code: Hl7Ack['code'], problems: Hl7Problem[], trigger?: Hl7Trigger, bundle?: Bundle): Hl7Outcome => ({
    kind: 'acknowledged',
    controlId: addressee.controlId,
    message,
    trigger,
    bundle,
    ack: buildAck(code, addressee, problems, now),
  });
  let trigger: Hl7Trigger | undefined;
  try {
    const checked = validateHl7(message);
    trigger = checked.trigger;
    const code = acknowledgmentCode(checked.problems);
    if (code !== 'AA' || !trigger) return answer(code, checked.problems, trigger);
    return answer('AA', [], trigger, mapToFhir(message, trigger).bundle);
  } catch (error) {
    const detail = `The message could not be processed: ${(error as Error).message}`;
    return answer('AE', [{ code: 207, location: { segment: 'MSH', sequence: 1 }, message: detail, reject: false }], trigger);
  }
}
