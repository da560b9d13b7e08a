import type { Bundle } from 'fhir/r4';
import type { PrivacyMode } from '../privacy/guard';
import { type AcknowledgementsDue, acknowledgementsDue, addresseeFromText, addresseeOf, buildAck, type Hl7Ack } from './ack';
import { MAX_MESSAGE_BYTES, NotHl7Error, type ParsedHl7, parseHl7, UnreadableHl7Error } from './parse';
import { guardHl7, privacyProblems } from './privacy';
import { mapToFhir } from './to-fhir';
import { type Hl7Trigger, hl7EventFor } from './triggers';
import { acknowledgmentCode, type ConformanceMode, type Hl7Problem, validateHl7 } from './validate';

/** What became of one inbound message: the same for the HTTP inject and the MLLP listener. */
export type Hl7Outcome =
  /** Not HL7 at all: HTTP answers 400, MLLP an AR. */
  | { kind: 'not_hl7'; detail: string; ack: Hl7Ack }
  /** Over MAX_MESSAGE_BYTES: HTTP 413, MLLP an AR. */
  | { kind: 'too_large'; detail: string; ack: Hl7Ack }
  /** Read, checked, answered: AA with the mapped Bundle (warnings allowed), or AE/AR with the problems. */
  | {
      kind: 'acknowledged';
      ack: Hl7Ack;
      controlId: string;
      message?: ParsedHl7;
      /** MSH-9.1^MSH-9.2, when MSH-9 names one. */
      type?: string;
      /** The template entry of the trigger, when it has one. */
      trigger?: Hl7Trigger;
      /** The catalog event the Bundle is delivered under. */
      event?: string;
      bundle?: Bundle;
      /** The acknowledgements MSH-15/MSH-16 ask for, given this outcome. */
      due: AcknowledgementsDue;
    };

export interface ProcessOptions {
  now?: Date;
  /** `lenient` (default): findings are warnings on an AA; `strict`: they are errors (AE). */
  conformance?: ConformanceMode;
  /**
   * What a real identifier (hl7/privacy.ts) makes of the message: `mask` (default) masks it with a
   * warning; `refuse` answers AE. Strict conformance refuses too.
   */
  privacy?: PrivacyMode;
}

const problem = (code: Hl7Problem['code'], message: string, field?: number): Hl7Problem => ({
  code,
  location: { segment: 'MSH', sequence: 1, field },
  message,
  reject: true,
});

const ORIGINAL_MODE: AcknowledgementsDue = { mode: 'original', accept: null, application: true };

/** The AR for a message over MAX_MESSAGE_BYTES, from its first bytes (enough for its MSH). */
export function oversizeAck(head: string, bytes: number, now: Date = new Date()): { detail: string; ack: Hl7Ack } {
  const detail = `The message is ${bytes === Number.POSITIVE_INFINITY ? 'more than that' : `${bytes} bytes`}; the limit is ${MAX_MESSAGE_BYTES} bytes (256 KiB)`;
  return { detail, ack: buildAck('AR', addresseeFromText(head.slice(0, 4096)), [problem(207, detail)], now) };
}

/**
 * Parse, validate and map one message, and build its ACK. Any well-formed message is accepted:
 * findings are warnings unless `conformance` is strict. Never throws: anything unexpected while
 * checking or mapping is our failure, answered AR with ERR code 207 (application internal error;
 * HL7 table 0008: rejected for a reason unrelated to the content).
 */
export function processHl7(sent: string, options: ProcessOptions = {}): Hl7Outcome {
  const now = options.now ?? new Date();
  const bytes = Buffer.byteLength(sent, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) return { kind: 'too_large', ...oversizeAck(sent, bytes, now) };
  // Real identifiers are masked before the message is read, so nothing after it sees them.
  const guarded = guardHl7(sent);
  const text = guarded.text;
  const masked = privacyProblems(guarded, options.privacy === 'refuse' || options.conformance === 'strict');
  let message: ParsedHl7;
  try {
    message = parseHl7(text);
  } catch (error) {
    const addressee = addresseeFromText(text);
    if (error instanceof NotHl7Error)
      return { kind: 'not_hl7', detail: error.message, ack: buildAck('AR', addressee, [problem(100, error.message)], now) };
    const detail = error instanceof UnreadableHl7Error ? error.message : `The message cannot be read: ${(error as Error).message}`;
    const field = error instanceof UnreadableHl7Error ? error.field : undefined;
    return {
      kind: 'acknowledged',
      controlId: addressee.controlId,
      ack: buildAck('AR', addressee, [problem(100, detail, field)], now),
      due: ORIGINAL_MODE,
    };
  }
  const addressee = addresseeOf(message);
  const msh = message.header;
  const answer = (problems: Hl7Problem[], type?: string, trigger?: Hl7Trigger, bundle?: Bundle): Hl7Outcome => {
    const code = acknowledgmentCode(problems);
    return {
      kind: 'acknowledged',
      controlId: addressee.controlId,
      message,
      type,
      trigger,
      event: bundle && type ? hl7EventFor(type) : undefined,
      bundle,
      ack: buildAck(code, addressee, problems, now),
      due: acknowledgementsDue(msh.get(15), msh.get(16), code),
    };
  };
  let type: string | undefined;
  let trigger: Hl7Trigger | undefined;
  let problems: Hl7Problem[] = [];
  try {
    const checked = validateHl7(message, options.conformance);
    ({ type, trigger } = checked);
    problems = [...masked, ...checked.problems];
    if (acknowledgmentCode(problems) !== 'AA' || !type) return answer(problems, type, trigger);
    return answer(problems, type, trigger, mapToFhir(message, type).bundle);
  } catch (error) {
    const detail = `The message could not be processed: ${(error as Error).message}`;
    return answer([...problems, { code: 207, location: { segment: 'MSH', sequence: 1 }, message: detail, reject: true }], type, trigger);
  }
}
