import { and, eq } from 'drizzle-orm';
import { connections, hl7Identities } from '../drizzle/schema';
import { asFhirJson } from '../fhir/resource-json';
import type { Database } from '../platform/database';
import { newId } from '../platform/ids';
import type { WorkflowClient } from '../platform/workflow-client';
import { type NewDelivery, recordNewDelivery } from '../webhooks/delivery-records';
import type { WebhookEnvelope } from '../webhooks/envelope';
import { startDelivery } from '../webhooks/start-delivery';
import { addresseeFromText, buildAck } from './ack';
import { ackModeOf, acknowledgementsFor, buildCommitAck, type CommitCode } from './ack-mode';
import { batchAck, isBatchOrStream, splitStream } from './batch';
import { authenticateMllpToken, type MllpSender } from './credentials';
import { readMsh, withoutMsh8 } from './header';
import { type Hl7Outcome, processHl7 } from './process';
import { type ProcessedHl7, summarize } from './process-pool';
import { ERROR_CONDITION, type Hl7Problem } from './validate';

/**
 * An accepted HL7 message becomes an ordinary webhook delivery: its Bundle in the envelope, under
 * the trigger's catalog event, sent by the delivery workflow (signed, retried, replayable), with the
 * control id (MSH-10) recorded on the delivery. The HTTP inject and the MLLP listener both use this.
 */

export interface Hl7DeliveryDependencies {
  db: Database;
  workflows: WorkflowClient;
  retryScheduleMs: number[];
  /** Told about failures that do not change the answer (logging). */
  onError?: (error: unknown) => void;
}

/** Who a message is delivered for. */
export interface Hl7Recipient {
  organizationId: string;
  connectionId: string | null;
  environment: string;
}

type Accepted = Extract<Hl7Outcome, { kind: 'acknowledged' }> & { bundle: NonNullable<Extract<Hl7Outcome, { kind: 'acknowledged' }>['bundle']> };

export function isAccepted(outcome: Hl7Outcome): outcome is Accepted {
  return outcome.kind === 'acknowledged' && outcome.ack.code === 'AA' && outcome.bundle !== undefined;
}

/** The delivery an accepted message becomes: its Bundle under its trigger's event, with its control id. */
export function planHl7Delivery(recipient: Hl7Recipient, outcome: Accepted): NewDelivery {
  return planHl7DeliveryOfJson(recipient, {
    event: outcome.trigger!.event,
    controlId: outcome.controlId,
    bundleJson: JSON.stringify(asFhirJson(outcome.bundle)),
  });
}

/** The same, from a Bundle already serialized (a worker thread's answer): the envelope is written around it, not re-parsed. */
export function planHl7DeliveryOfJson(recipient: Hl7Recipient, accepted: NonNullable<ProcessedHl7['accepted']>): NewDelivery {
  const envelope: Omit<WebhookEnvelope, 'resource'> = {
    id: newId('evt'),
    event: accepted.event,
    connection_id: recipient.connectionId,
    environment: recipient.environment,
    occurred_at: new Date().toISOString(),
  };
  // `resource` is the envelope's last member (CONVENTIONS.md, Webhooks), so it is spliced in at the end.
  const envelopeBody = `${JSON.stringify(envelope).slice(0, -1)},"resource":${accepted.bundleJson}}`;
  return {
    id: newId('dlv'),
    organizationId: recipient.organizationId,
    connectionId: recipient.connectionId,
    scenarioId: null,
    event: envelope.event,
    environment: recipient.environment,
    envelopeBody,
    createdAt: envelope.occurred_at,
    hl7ControlId: accepted.controlId,
  };
}

/**
 * Starts the delivery workflow for an accepted message (the MLLP path; the HTTP inject goes through
 * api/http/accepted-work.ts) and returns the delivery's id. Once started, the delivery is accepted
 * even if recording its row here fails: the workflow records it too.
 */
export async function deliverHl7(
  deps: Hl7DeliveryDependencies,
  recipient: Hl7Recipient,
  accepted: NonNullable<ProcessedHl7['accepted']>,
): Promise<string> {
  const delivery = planHl7DeliveryOfJson(recipient, accepted);
  await startDelivery(deps.workflows, delivery, deps.retryScheduleMs);
  await recordNewDelivery(deps.db, delivery).catch((error: unknown) => deps.onError?.(error));
  return delivery.id;
}

/** The connection of this organization whose HL7 identity is this receiving application and facility. */
export async function findRecipientByIdentity(
  db: Database,
  organizationId: string,
  application: string,
  facility: string,
): Promise<Hl7Recipient | undefined> {
  const [row] = await db
    .select({ organizationId: hl7Identities.organizationId, connectionId: hl7Identities.connectionId, environment: connections.environment })
    .from(hl7Identities)
    .innerJoin(connections, eq(connections.id, hl7Identities.connectionId))
    .where(
      and(
        eq(hl7Identities.organizationId, organizationId),
        eq(hl7Identities.receivingApplication, application),
        eq(hl7Identities.receivingFacility, facility),
      ),
    );
  return row;
}

export interface MllpHandlerDependencies extends Hl7DeliveryDependencies {
  /** Parses, checks and maps a message (off the event loop for large ones); default: on the calling thread. */
  process?: (text: string) => Promise<ProcessedHl7>;
}

const SEND_AGAIN = 'The message was valid but could not be queued for delivery; send it again shortly';
const NO_TOKEN =
  'MSH-8 (Security) must carry the MLLP token of the connection the message is for; PUT /v1/sandbox/hl7/identities/{connection_id} issues it';

/**
 * The MLLP listener's handler: the same pipeline as the HTTP inject, for each message of a frame
 * (one message, or a batch or stream of them, answered with a batch acknowledgement). MLLP carries
 * no API key: each message's MSH-8 (or its batch's BHS-8/FHS-8) must carry a connection's MLLP
 * token, checked from the header alone before the message is parsed; the message is then delivered
 * for that connection, and its MSH-5/MSH-6 must name that connection's identity. Acknowledgements
 * follow MSH-15/MSH-16 (hl7/ack-mode.ts).
 */
export function mllpHandler(deps: MllpHandlerDependencies): (text: string, reply: (answer: string) => void) => Promise<void> {
  const processMessage = deps.process ?? (async (text: string) => summarize(processHl7(text)));

  async function acknowledge(text: string, batchToken: string): Promise<string[]> {
    const msh = readMsh(text);
    // Not HL7 at all: nothing to authenticate, and the pipeline's own AR says what is wrong (it reads no further).
    if (!msh) return [processHl7(text).ack.er7];
    const mode = ackModeOf(msh.get(15), msh.get(16));
    const addressee = addresseeFromText(text);
    const refuse = (
      commit: CommitCode,
      field: number,
      message: string,
      original = buildAck(commit === 'CR' ? 'AR' : 'AE', addressee, [problem(field, message, commit === 'CR')]).er7,
    ) =>
      acknowledgementsFor(mode, {
        commit: {
          code: commit,
          er7: buildCommitAck(commit, addressee, { code: 207, codeText: ERROR_CONDITION[207], location: ['MSH', '1', String(field)], message }),
        },
        original,
      });

    let sender: MllpSender | undefined;
    try {
      sender = await authenticateMllpToken(deps.db, msh.raw(8).trim() || batchToken);
    } catch (error) {
      deps.onError?.(error);
      return refuse('CE', 8, SEND_AGAIN);
    }
    // The same answer whatever MSH-5/MSH-6 name, so a peer without a token learns nothing of any identity.
    if (!sender) return refuse('CR', 8, NO_TOKEN);
    if (msh.get(5) !== sender.receivingApplication || msh.get(6) !== sender.receivingFacility) {
      const named = `${msh.get(5) || '(empty)'}/${msh.get(6) || '(empty)'}`;
      return refuse(
        'CR',
        5,
        `MSH-5/MSH-6 name ${named}, but the token is for the HL7 identity ${sender.receivingApplication}/${sender.receivingFacility}`,
      );
    }

    let outcome: ProcessedHl7;
    try {
      outcome = await processMessage(withoutMsh8(text));
    } catch (error) {
      deps.onError?.(error);
      return refuse('CE', 1, 'The message could not be processed now; send it again shortly');
    }
    const application = { er7: outcome.ack.er7, success: outcome.ack.code === 'AA' };
    if (!outcome.accepted) {
      // A message refused as a whole (AR) is not committed; one with content errors is, and then answered AE.
      const commit: CommitCode = outcome.ack.code === 'AR' ? 'CR' : 'CA';
      const error = outcome.ack.errors[0];
      const commitEr7 = buildCommitAck(
        commit,
        addressee,
        error && { code: error.code, codeText: error.code_text, location: error.location.split('^'), message: error.message },
      );
      return acknowledgementsFor(mode, { commit: { code: commit, er7: commitEr7 }, application, original: outcome.ack.er7 });
    }
    // A database or Temporal outage, at the start, is a CE (or, in original mode, an AE): send again, not a dropped connection.
    try {
      const deliveryId = await deliverHl7(deps, sender, outcome.accepted);
      const accepted = buildAck('AA', addressee, [], new Date(), `Accepted; delivery ${deliveryId}`).er7;
      return acknowledgementsFor(mode, {
        commit: { code: 'CA', er7: buildCommitAck('CA', addressee) },
        application: { er7: accepted, success: true },
        original: accepted,
      });
    } catch (error) {
      deps.onError?.(error);
      return refuse('CE', 1, SEND_AGAIN);
    }
  }

  return async (text, reply) => {
    if (!isBatchOrStream(text)) {
      for (const answer of await acknowledge(text, '')) reply(answer);
      return;
    }
    const stream = splitStream(text);
    const batchToken = (stream.batch?.security || stream.file?.security) ?? '';
    const answers: string[] = [];
    for (const message of stream.messages) answers.push(...(await acknowledge(message, batchToken)));
    reply(batchAck(stream, answers));
  };
}

const problem = (field: number, message: string, reject: boolean): Hl7Problem => ({
  code: 207,
  location: { segment: 'MSH', sequence: 1, field },
  message,
  reject,
});
