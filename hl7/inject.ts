import { and, eq } from 'drizzle-orm';
import { connections, hl7Identities } from '../drizzle/schema';
import type { Hl7ConformanceMode } from '../drizzle/vocabulary';
import type { Database } from '../platform/database';
import { newId } from '../platform/ids';
import type { WorkflowClient } from '../platform/workflow-client';
import { type NewDelivery, recordNewDelivery } from '../webhooks/delivery-records';
import type { WebhookEnvelope } from '../webhooks/envelope';
import { startDelivery } from '../webhooks/start-delivery';
import { buildAck } from './ack';
import { processHl7OffLoop } from './off-loop';
import type { PortableHl7Outcome } from './portable-outcome';

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
  /** How the recipient's HL7 identity asks its messages to be checked (lenient when it has none). */
  conformance: Hl7ConformanceMode;
}

type Acknowledged = Extract<PortableHl7Outcome, { kind: 'acknowledged' }>;
type Accepted = Acknowledged & Required<Pick<Acknowledged, 'bundleJson' | 'header' | 'event'>>;

export function isAccepted(outcome: PortableHl7Outcome): outcome is Accepted {
  return outcome.kind === 'acknowledged' && outcome.ack.code === 'AA' && outcome.bundleJson !== undefined;
}

/** The delivery an accepted message becomes: its Bundle under its trigger's event, with its control id. */
export function planHl7Delivery(recipient: Hl7Recipient, outcome: Accepted): NewDelivery {
  const head: Omit<WebhookEnvelope, 'resource'> = {
    id: newId('evt'),
    event: outcome.event,
    connection_id: recipient.connectionId,
    environment: recipient.environment,
    occurred_at: new Date().toISOString(),
  };
  // The Bundle comes as JSON text (hl7/off-loop.ts): spliced in as the last member, the envelope is what
  // JSON.stringify would write, without serializing several MiB again on the event loop.
  const envelopeBody = `${JSON.stringify(head).slice(0, -1)},"resource":${outcome.bundleJson}}`;
  return {
    id: newId('dlv'),
    organizationId: recipient.organizationId,
    connectionId: recipient.connectionId,
    scenarioId: null,
    event: head.event,
    environment: recipient.environment,
    envelopeBody,
    createdAt: head.occurred_at,
    hl7ControlId: outcome.controlId,
  };
}

/**
 * Starts the delivery workflow for an accepted message (the MLLP path; the HTTP inject goes through
 * api/http/accepted-work.ts) and returns the delivery's id. Once started, the delivery is accepted
 * even if recording its row here fails: the workflow records it too.
 */
export async function deliverHl7(deps: Hl7DeliveryDependencies, recipient: Hl7Recipient, outcome: Accepted): Promise<string> {
  const delivery = planHl7Delivery(recipient, outcome);
  await startDelivery(deps, delivery, deps.retryScheduleMs);
  await recordNewDelivery(deps.db, delivery).catch((error: unknown) => deps.onError?.(error));
  return delivery.id;
}

/** The connection (of any organization) whose HL7 identity is this receiving application and facility. */
export async function findRecipientByIdentity(db: Database, application: string, facility: string): Promise<Hl7Recipient | undefined> {
  const [row] = await db
    .select({
      organizationId: hl7Identities.organizationId,
      connectionId: hl7Identities.connectionId,
      environment: connections.environment,
      conformance: hl7Identities.conformance,
    })
    .from(hl7Identities)
    .innerJoin(connections, eq(connections.id, hl7Identities.connectionId))
    .where(and(eq(hl7Identities.receivingApplication, application), eq(hl7Identities.receivingFacility, facility)));
  return row;
}

/**
 * The MLLP listener's handler: the same pipeline as the HTTP inject. MLLP carries no API key, so
 * the message's MSH-5/MSH-6 must name a connection's HL7 identity; otherwise the answer is AR.
 */
export function mllpHandler(deps: Hl7DeliveryDependencies): (text: string) => Promise<string> {
  return async (text) => {
    let outcome = await processHl7OffLoop(text);
    if (!isAccepted(outcome)) return outcome.ack.er7;
    const { addressee, receivingApplication: application, receivingFacility: facility } = outcome.header;
    // A database or Temporal outage, at the lookup or the start, is an AR (HL7 table 0008: rejected for a
    // reason unrelated to the content; send it again), not an AE and not a dropped connection.
    try {
      const recipient = await findRecipientByIdentity(deps.db, application, facility);
      if (!recipient) {
        const message = `No connection has the HL7 identity ${application || '(empty MSH-5)'}/${facility || '(empty MSH-6)'}; set one with PUT /v1/sandbox/hl7/identities/{connection_id} and name it in MSH-5 and MSH-6`;
        return buildAck('AR', addressee, [{ code: 207, location: { segment: 'MSH', sequence: 1, field: 5 }, message, reject: true }]).er7;
      }
      // An identity that opted into strict conformance has its messages checked again, findings as errors.
      if (recipient.conformance === 'strict') {
        outcome = await processHl7OffLoop(text, 'strict');
        if (!isAccepted(outcome)) return outcome.ack.er7;
      }
      const deliveryId = await deliverHl7(deps, recipient, outcome);
      return buildAck('AA', addressee, [], new Date(), `Accepted; delivery ${deliveryId}`).er7;
    } catch (error) {
      deps.onError?.(error);
      const message = 'The message was valid but could not be queued for delivery; send it again shortly';
      return buildAck('AR', addressee, [{ code: 207, location: { segment: 'MSH', sequence: 1 }, message, reject: true }]).er7;
    }
  };
}
