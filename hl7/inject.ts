import type { CostBudget } from '../platform/cost-budget';
import { acceptHl7, type Hl7Acceptance, type Hl7AcceptDependencies, type Hl7Recipient, SEND_AGAIN } from './accept';
import { type AckAddressee, type AckCode, acknowledgementsDue, addresseeFromText, buildAck, type Hl7Ack } from './ack';
import { batchAck, isBatchOrStream, splitStream } from './batch';
import { authenticateMllpToken, createMllpAuthenticator, type MllpAuthentication, type MllpConnection } from './credentials';
import { readMsh, withoutMsh8 } from './header';
import { processHl7 } from './process';
import type { Hl7Problem } from './validate';

/**
 * The acknowledgements MSH-15/MSH-16 ask for (hl7/ack.ts, acknowledgementsDue), in the order they
 * are sent: original mode, the application ACK alone; enhanced mode, the accept ACK then the
 * application ACK, each when due. `onOurSide`: the message was not committed for a failure of ours,
 * so the accept ACK is CE (send again), not CR.
 */
export function acknowledgementsFor(
  msh15: string,
  msh16: string,
  application: Hl7Ack,
  addressee: AckAddressee,
  options: { acceptProblems?: readonly Hl7Problem[]; onOurSide?: boolean } = {},
): string[] {
  const due = acknowledgementsDue(msh15, msh16, application.code as AckCode);
  if (due.mode === 'original') return [application.er7];
  const answers: string[] = [];
  if (due.accept) answers.push(buildAck(options.onOurSide ? 'CE' : due.accept, addressee, options.acceptProblems ?? []).er7);
  if (due.application) answers.push(application.er7);
  return answers;
}

const NO_TOKEN =
  'MSH-8 (Security) must carry the MLLP token of the connection the message is for; PUT /v1/sandbox/hl7/identities/{connection_id} issues it';

/** An ERR at MSH (at `field` when given; none for a failure on our side), refusing the message as a whole. */
const mshProblem = (field: number | undefined, message: string): Hl7Problem => ({
  code: 207,
  location: { segment: 'MSH', sequence: 1, ...(field === undefined ? {} : { field }) },
  message,
  reject: true,
});

/** An ACK's findings of one severity as the problems they were. */
const findingsOf = (ack: Hl7Ack, severity: 'E' | 'W'): Hl7Problem[] =>
  ack.errors
    .filter((error) => error.severity === severity)
    .map(({ segment, sequence, field, repetition, component, code, message }) => ({
      code: code as Hl7Problem['code'],
      location: { segment, sequence, field, repetition, component },
      message,
      reject: severity === 'E',
      severity,
    }));

/** An ACK's errors (not its warnings) as the problems they were. */
const errorsOf = (ack: Hl7Ack): Hl7Problem[] => findingsOf(ack, 'E');

/**
 * The AA for an accepted message, naming its delivery, with the warnings its processing found (a
 * field left out of the Bundle, a real identifier masked): MLLP and HTTP batches answer the same ERRs
 * as the HTTP inject.
 */
export const acceptedAck = (addressee: AckAddressee, outcome: { ack: Hl7Ack }, deliveryId: string): Hl7Ack =>
  buildAck('AA', addressee, findingsOf(outcome.ack, 'W'), new Date(), `Accepted; delivery ${deliveryId}`);

/** What a message (or a batch of them) spends of its organization's HL7 budget: 1 a message, and 1 more per 16 KiB. */
export function hl7MessageCost(text: string): number {
  let messages = 0;
  // Each MSH at the start of a segment is one message; a linear scan, no expression over the text.
  for (let at = text.indexOf('MSH'); at !== -1; at = text.indexOf('MSH', at + 3)) {
    const before = at === 0 ? '\r' : text[at - 1];
    if (before === '\r' || before === '\n' || before === '\uFEFF') messages += 1;
  }
  return Math.max(1, messages) + Math.floor(Buffer.byteLength(text, 'utf8') / (16 * 1024));
}

/** The MLLP handler's dependencies: the delivery pipeline, and the per-organization HL7 budget (HL7_RATE_LIMIT_PER_MINUTE). */
export interface MllpHandlerDependencies extends Hl7AcceptDependencies {
  budget: CostBudget;
  /** The per-address failed-authentication budget HTTP spends too (FAILED_AUTH_PER_MINUTE). */
  failedAuthentications: CostBudget;
}

/**
 * The MLLP listener's handler: the same pipeline as the HTTP inject, for each message of a frame
 * (one message, or a batch or stream of them, answered with a batch acknowledgement). MLLP carries
 * no API key: each message's MSH-8 (or its batch's BHS-8/FHS-8) must carry a connection's MLLP
 * token, checked from the header alone before the message is parsed; the message is then delivered
 * for that connection, checked as its identity asks (lenient or strict), and its MSH-5/MSH-6 must
 * name that identity. Acknowledgements follow MSH-15/MSH-16.
 */
export function mllpHandler(
  deps: MllpHandlerDependencies,
): (text: string, reply: (answer: string) => void, connection: MllpConnection) => Promise<void> {
  const authenticator = createMllpAuthenticator({
    lookUp: (token) => authenticateMllpToken(deps.db, token),
    failures: deps.failedAuthentications,
  });

  async function acknowledge(text: string, batchToken: string, authenticate: (token: string) => Promise<MllpAuthentication>): Promise<string[]> {
    const msh = readMsh(text);
    // Not HL7 at all: nothing to authenticate, and the pipeline's own AR says what is wrong (it reads no further).
    if (!msh) return [processHl7(text).ack.er7];
    const addressee = addresseeFromText(text);
    const answer = (application: Hl7Ack, options?: Parameters<typeof acknowledgementsFor>[4]) =>
      acknowledgementsFor(msh.get(15), msh.get(16), application, addressee, options);
    const refuse = (problem: Hl7Problem, onOurSide = false) => {
      const application = buildAck('AR', addressee, [problem]);
      return answer(application, { acceptProblems: [problem], onOurSide });
    };

    let authentication: MllpAuthentication;
    try {
      authentication = await authenticate(msh.raw(8).trim() || batchToken);
    } catch (error) {
      deps.onError?.(error);
      return refuse(mshProblem(undefined, 'The message could not be checked now (a failure on our side); send it again shortly'), true);
    }
    if ('refused' in authentication && authentication.refused === 'failure_budget') {
      return refuse(
        mshProblem(
          8,
          `Too many failed authentications from this address; send the message again in ${authentication.retryAfterSeconds} s with a valid token`,
        ),
        true,
      );
    }
    // The same answer whatever MSH-5/MSH-6 name, so a peer without a token learns nothing of any identity.
    if (!('sender' in authentication)) return refuse(mshProblem(8, NO_TOKEN));
    const { sender } = authentication;
    if (msh.get(5) !== sender.receivingApplication || msh.get(6) !== sender.receivingFacility) {
      const named = `${msh.get(5) || '(empty)'}/${msh.get(6) || '(empty)'}`;
      return refuse(
        mshProblem(5, `MSH-5/MSH-6 name ${named}, but the token is for the HL7 identity ${sender.receivingApplication}/${sender.receivingFacility}`),
      );
    }

    // One organization's feed cannot take the listener from the others: over its budget, an AR that says when to send again.
    const spent = deps.budget.spend(sender.organizationId, hl7MessageCost(text));
    if (!spent.allowed) {
      return refuse(
        mshProblem(undefined, `This organization's HL7 budget is spent for now; send the message again in ${spent.retryAfterSeconds} s`),
        true,
      );
    }

    // The token names the recipient, and its identity how strictly to check; MSH-8 is emptied so the token reaches no Bundle.
    // A database or Temporal outage is an AR in original mode (HL7 table 0008: rejected for a reason
    // unrelated to the content; send it again) and a CE in enhanced mode, not a dropped connection.
    const recipient: Hl7Recipient = sender;
    let acceptance: Hl7Acceptance;
    try {
      acceptance = await acceptHl7(deps, {
        text: withoutMsh8(text),
        conformance: recipient.conformance,
        privacy: sender.refuseRealIdentifiers ? 'refuse' : 'mask',
        recipientFor: async () => recipient,
      });
    } catch (error) {
      deps.onError?.(error);
      return refuse(mshProblem(undefined, SEND_AGAIN), true);
    }
    if (acceptance.kind === 'accepted') return answer(acceptedAck(addressee, acceptance.outcome, acceptance.delivery.id));
    // A CR says why too, in case MSH-16 asks for no application ACK.
    const { ack } = acceptance.outcome;
    return answer(ack, { acceptProblems: ack.code === 'AR' ? errorsOf(ack) : [] });
  }

  return async (text, reply, connection) => {
    const authenticate = authenticator.forFrame(connection);
    if (!isBatchOrStream(text)) {
      for (const answer of await acknowledge(text, '', authenticate)) reply(answer);
      return;
    }
    const stream = splitStream(text);
    const batchToken = (stream.batch?.security || stream.file?.security) ?? '';
    const answers: string[] = [];
    for (const message of stream.messages) {
      answers.push(...(await acknowledge(message, batchToken, authenticate)));
      // Refusals need no I/O; a batch of thousands of them must still let the event loop turn.
      await new Promise(setImmediate);
    }
    reply(batchAck(stream, answers));
  };
}
