import type { FhirResource } from 'fhir/r4';
import { newId } from '../platform/ids';
import type { WebhookEnvelope } from './envelope';

/** A delivery as newDelivery() builds it: the delivery workflow's input and the row it records (webhooks/delivery-records.ts). */
export interface NewDelivery {
  id: string;
  organizationId: string;
  connectionId: string | null;
  scenarioId: string | null;
  event: string;
  environment: string;
  envelopeBody: string;
  createdAt: string;
  /** MSH-10 of the HL7 v2 message the delivery carries (HL7 inject only). */
  hl7ControlId?: string | null;
  /** The delivery a `webhook.delivery.exhausted` delivery reports on. */
  sourceDeliveryId?: string | null;
  /** The FHIR Subscription it notifies (subscription notifications only): its endpoint is the target. */
  subscriptionId?: string | null;
  /** The scenario run and step that emitted it (scenario runs only). */
  runId?: string | null;
  stepId?: string | null;
}

/** What an emitter says about a delivery; newDelivery() writes its envelope and record from it. */
export interface DeliveryRequest {
  organizationId: string;
  /** The connection it is for (also the envelope's `connection_id`); null for the organization default. */
  connectionId: string | null;
  environment: string;
  event: string;
  /** The envelope's `occurred_at`: when it happened in the story (a scenario's simulated time), usually now. */
  occurredAt: string;
  /**
   * The envelope's resource, or its JSON text when it arrives serialized (an HL7 message's Bundle,
   * hl7/off-loop.ts): spliced in as is, so several MiB are not parsed and written again.
   */
  resource: FhirResource | { json: string };
  /** When the delivery row says it was created; the event's time unless the story's clock differs. */
  createdAt?: string;
  /** Ids derived from the emitter's own record (a scenario step's), so a retried step builds the same delivery; new ones otherwise. */
  ids?: { event: string; delivery: string };
  scenarioId?: string | null;
  runId?: string | null;
  stepId?: string | null;
  hl7ControlId?: string | null;
  sourceDeliveryId?: string | null;
  subscriptionId?: string | null;
}

/**
 * Every delivery starts here (mock trigger, HL7 inject, scenario steps, aggregator completion,
 * exhausted reports): the envelope of CONVENTIONS.md (Webhooks), written once as the text every
 * attempt and replay sends, and the delivery record carrying it.
 */
export function newDelivery(request: DeliveryRequest): NewDelivery {
  const { resource, ids, occurredAt, createdAt, ...record } = request;
  const head: Omit<WebhookEnvelope, 'resource'> = {
    id: ids?.event ?? newId('evt'),
    event: request.event,
    connection_id: request.connectionId,
    environment: request.environment,
    occurred_at: occurredAt,
  };
  // The resource is the envelope's last member: the text is what JSON.stringify(envelope) would write.
  const resourceJson = 'json' in resource ? resource.json : JSON.stringify(resource);
  return {
    ...record,
    id: ids?.delivery ?? newId('dlv'),
    scenarioId: request.scenarioId ?? null,
    envelopeBody: `${JSON.stringify(head).slice(0, -1)},"resource":${resourceJson}}`,
    createdAt: createdAt ?? occurredAt,
  };
}
