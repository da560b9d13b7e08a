import { and, eq } from 'drizzle-orm';
import { connections, hl7Identities } from '../drizzle/schema';
import type { Database } from '../platform/database';
import type { PrivacyMode } from '../privacy/guard';
import { recordNewDelivery } from '../webhooks/delivery-records';
import { type NewDelivery, newDelivery } from '../webhooks/new-delivery';
import { processHl7OffLoop } from './off-loop';
import type { PortableHl7Outcome } from './portable-outcome';
import type { Hl7ConformanceMode } from './vocabulary';

/**
 * Accepting one HL7 v2 message, whichever way it came (the HTTP inject, a message of an HTTP batch,
 * MLLP): process it, find who it is for, check it again when that recipient's identity is strict,
 * plan its delivery, start the delivery's workflow and record the delivery. An accepted message
 * becomes an ordinary webhook delivery: its Bundle in the envelope, under the trigger's catalog
 * event, sent by the delivery workflow (signed, retried, replayable), with the control id (MSH-10)
 * recorded on it. How the outcome is answered (an HTTP body, ACKs in an MLLP frame or a batch
 * acknowledgement) is each transport's business.
 */

export interface Hl7AcceptDependencies {
  db: Database;
  /** Starts a delivery's workflow (api/webhooks/start-delivery.ts): given by the process, which is above the workflows. */
  startDelivery: (delivery: NewDelivery) => Promise<unknown>;
  /** Told about failures that do not change the answer (logging). */
  onError?: (error: unknown) => void;
}

/** Who a message is delivered for. */
export interface Hl7Recipient {
  organizationId: string;
  connectionId: string | null;
  environment: string;
  /** How the recipient's HL7 identity asks its messages to be checked (lenient when it has none). */
  conformance: Hl7ConformanceMode;
}

/** One message as a transport hands it over. */
export interface Hl7Submission {
  /** The message in ER7. */
  text: string;
  /** How strictly the sender asked to check it; when not said, the recipient's HL7 identity decides. */
  conformance?: Hl7ConformanceMode;
  /** What a real identifier makes of the message (hl7/privacy.ts): masked with a warning (default), or the message refused. */
  privacy?: PrivacyMode;
  /** Who the message is for, given the receiving application and facility it names (MSH-5/MSH-6). */
  recipientFor(application: string, facility: string): Promise<Hl7Recipient>;
  /**
   * Fixes the delivery before anything starts: over HTTP, stored with the Idempotency-Key, so that
   * a retry plans the same delivery (api/http/accepted-work.ts). Without it, the plan is used as made.
   */
  reservePlan?(plan: () => NewDelivery): Promise<NewDelivery>;
}

type Acknowledged = Extract<PortableHl7Outcome, { kind: 'acknowledged' }>;
export type AcceptedHl7 = Acknowledged & Required<Pick<Acknowledged, 'bundleJson' | 'header' | 'event'>>;

export type Hl7Acceptance =
  /** Delivered: its workflow started (the delivery is safe from here on). */
  | { kind: 'accepted'; outcome: AcceptedHl7; delivery: NewDelivery }
  /** Not delivered, and why: not HL7, too large, or acknowledged AE/AR. */
  | { kind: 'refused'; outcome: PortableHl7Outcome };

export function isAccepted(outcome: PortableHl7Outcome): outcome is AcceptedHl7 {
  return outcome.kind === 'acknowledged' && outcome.ack.code === 'AA' && outcome.bundleJson !== undefined;
}

/** The delivery an accepted message becomes: its Bundle under its trigger's event, with its control id. */
export function planHl7Delivery(recipient: Hl7Recipient, outcome: AcceptedHl7): NewDelivery {
  return newDelivery({
    organizationId: recipient.organizationId,
    connectionId: recipient.connectionId,
    event: outcome.event,
    environment: recipient.environment,
    occurredAt: new Date().toISOString(),
    // The Bundle comes as JSON text (hl7/off-loop.ts), so it is not serialized again on the event loop.
    resource: { json: outcome.bundleJson },
    hl7ControlId: outcome.controlId,
  });
}

/** What a transport answers when the accept path failed on our side (HL7 table 0008, AR: send it again). */
export const SEND_AGAIN = 'The message was valid but could not be queued for delivery; send it again shortly';

/**
 * The one accept path. Throws when the recipient cannot be found or the workflow cannot be started
 * (each transport says so in its own way); once the workflow has started, the delivery is accepted
 * even if recording its row here fails: the workflow records it too.
 */
export async function acceptHl7(deps: Hl7AcceptDependencies, submission: Hl7Submission): Promise<Hl7Acceptance> {
  let outcome = await processHl7OffLoop(submission.text, submission.conformance, submission.privacy);
  if (!isAccepted(outcome)) return { kind: 'refused', outcome };
  const recipient = await submission.recipientFor(outcome.header.receivingApplication, outcome.header.receivingFacility);
  // Strict only refuses more, so a lenient pass is checked again when the recipient's identity is strict.
  if (!submission.conformance && recipient.conformance === 'strict') {
    outcome = await processHl7OffLoop(submission.text, 'strict', submission.privacy);
    if (!isAccepted(outcome)) return { kind: 'refused', outcome };
  }
  const accepted = outcome;
  const plan = () => planHl7Delivery(recipient, accepted);
  const delivery = submission.reservePlan ? await submission.reservePlan(plan) : plan();
  await deps.startDelivery(delivery);
  await recordNewDelivery(deps.db, delivery).catch((error: unknown) => deps.onError?.(error));
  return { kind: 'accepted', outcome: accepted, delivery };
}

/** The connection of this organization whose HL7 identity is this receiving application and facility. */
export async function findRecipientByIdentity(
  db: Database,
  organizationId: string,
  application: string,
  facility: string,
): Promise<Hl7Recipient | undefined> {
  const [row] = await db
    .select({
      organizationId: hl7Identities.organizationId,
      connectionId: hl7Identities.connectionId,
      environment: connections.environment,
      conformance: hl7Identities.conformance,
    })
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
