import { randomUUID } from 'node:crypto';
import { type AckAddressee, SANDBOX_APPLICATION, SANDBOX_FACILITY } from './ack';
import { er7Header, er7Message, er7Segment, hl7Timestamp } from './er7';

/**
 * Acknowledgement modes (HL7 v2.5 chapter 2.9): with MSH-15 and MSH-16 both empty, the original
 * mode answers every message with one application acknowledgement (AA/AE/AR). When either is
 * valued, the enhanced mode: an accept (commit) acknowledgement, CA/CE/CR, once the message is
 * safely stored (here: its delivery workflow started, which Temporal keeps), then the application
 * acknowledgement, each sent or not as its field asks (table 0155: AL always, NE never, ER only
 * on an error, SU only on success). An empty field in enhanced mode is NE: nothing asked for,
 * nothing sent.
 */

export const ACK_CONDITIONS = ['AL', 'NE', 'ER', 'SU'] as const;
export type AckCondition = (typeof ACK_CONDITIONS)[number];
export type CommitCode = 'CA' | 'CE' | 'CR';

export interface AckMode {
  enhanced: boolean;
  /** MSH-15: when to send the accept acknowledgement. */
  accept: AckCondition;
  /** MSH-16: when to send the application acknowledgement. */
  application: AckCondition;
}

/** Reads MSH-15 and MSH-16; a value outside table 0155 is read as AL (better an answer too many than none). */
export function ackModeOf(msh15: string, msh16: string): AckMode {
  const accept = msh15.trim().toUpperCase();
  const application = msh16.trim().toUpperCase();
  if (accept === '' && application === '') return { enhanced: false, accept: 'NE', application: 'AL' };
  const condition = (value: string): AckCondition =>
    value === '' ? 'NE' : (ACK_CONDITIONS as readonly string[]).includes(value) ? (value as AckCondition) : 'AL';
  return { enhanced: true, accept: condition(accept), application: condition(application) };
}

/** Whether an acknowledgement is sent under `condition`, given whether it reports success. */
export function wanted(condition: AckCondition, success: boolean): boolean {
  return condition === 'AL' || (condition === 'ER' && !success) || (condition === 'SU' && success);
}

/** Every acknowledgement a message could get; acknowledgementsFor picks those its mode asks for. */
export interface PossibleAcks {
  /** The accept acknowledgement: CA committed, CE not stored on our side (send again), CR refused as a whole. */
  commit: { code: CommitCode; er7: string };
  /** The application acknowledgement (AA/AE/AR), when the message was committed. */
  application?: { er7: string; success: boolean };
  /** The original mode's one answer (the application acknowledgement, or the AR/AE that stands in for CR/CE). */
  original: string;
}

/**
 * The acknowledgements to send for one message, in order. Original mode: exactly one. Enhanced
 * mode: the accept acknowledgement if MSH-15 asks for it, then, if the message was committed, the
 * application acknowledgement if MSH-16 asks for it.
 */
export function acknowledgementsFor(mode: AckMode, acks: PossibleAcks): string[] {
  if (!mode.enhanced) return [acks.original];
  const answers: string[] = [];
  if (wanted(mode.accept, acks.commit.code === 'CA')) answers.push(acks.commit.er7);
  if (acks.commit.code === 'CA' && acks.application && wanted(mode.application, acks.application.success)) answers.push(acks.application.er7);
  return answers;
}

/**
 * An accept acknowledgement: MSH (as the application acknowledgement's, in the sender's version)
 * and MSA with CA/CE/CR and the message's control id; CE and CR carry one ERR saying why.
 */
export function buildCommitAck(
  code: CommitCode,
  to: AckAddressee,
  error?: { code: number; codeText: string; location: string[]; message: string },
  now: Date = new Date(),
): string {
  const version = /^2\.\d/.test(to.version) ? to.version : '2.5.1';
  const processingId = ['P', 'D', 'T'].includes(to.processingId) ? to.processingId : 'P';
  const summary = code === 'CA' ? 'Message committed' : (error?.message ?? (code === 'CE' ? 'Commit error' : 'Commit reject'));
  const segments = [
    er7Header([
      SANDBOX_APPLICATION,
      SANDBOX_FACILITY,
      to.sendingApplication,
      to.sendingFacility,
      hl7Timestamp(now),
      null,
      ['ACK', to.triggerEvent, 'ACK'],
      `ACK${randomUUID().replaceAll('-', '').slice(0, 17).toUpperCase()}`,
      processingId,
      version,
    ]),
    er7Segment('MSA', [code, to.controlId, summary.slice(0, 80)]),
  ];
  if (error && code !== 'CA')
    segments.push(er7Segment('ERR', [null, error.location, [error.code, error.codeText, 'HL70357'], 'E', null, null, null, error.message]));
  return er7Message(segments);
}
