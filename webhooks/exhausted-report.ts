import type { AuditEvent } from 'fhir/r4';
import { SYNTHETIC_META } from '../fixtures/synthetic';

/** What the `webhook.delivery.exhausted` report says about the delivery that failed for good. */
export interface ExhaustedDeliveryFacts {
  deliveryId: string;
  event: string;
  connectionId: string | null;
  /** The last attempt's HTTP status; null when it got none (timeout, refused, no URL). */
  lastStatus: number | null;
  attemptCount: number;
  /** When it failed for good (ISO 8601). */
  failedAt: string;
}

/** The identifier system of a delivery id in a report. */
export const DELIVERY_ID_SYSTEM = 'https://sandbox.example/webhooks/delivery-id';

/**
 * The report as a FHIR R4 AuditEvent (an application activity that failed): the failed delivery is
 * its entity, identified by its id, with the event, last status and attempt count as details.
 */
export function exhaustedReport(facts: ExhaustedDeliveryFacts): AuditEvent {
  const detail = [
    { type: 'delivery_id', valueString: facts.deliveryId },
    { type: 'event', valueString: facts.event },
    { type: 'last_status', valueString: facts.lastStatus === null ? 'none' : String(facts.lastStatus) },
    { type: 'attempt_count', valueString: String(facts.attemptCount) },
    ...(facts.connectionId ? [{ type: 'connection_id', valueString: facts.connectionId }] : []),
  ];
  return {
    resourceType: 'AuditEvent',
    // FHIR ids allow letters, digits, - and . only.
    id: `exhausted-${facts.deliveryId.replaceAll('_', '-')}`,
    meta: SYNTHETIC_META,
    type: { system: 'http://dicom.nema.org/resources/ontology/DCM', code: '110100', display: 'Application Activity' },
    action: 'E',
    recorded: facts.failedAt,
    outcome: '8',
    outcomeDesc: `Webhook delivery ${facts.deliveryId} (${facts.event}) failed for good after ${facts.attemptCount} attempt(s); last status ${facts.lastStatus ?? 'none'}`,
    agent: [{ requestor: false, who: { display: 'Synthetic Healthcare Sandbox' } }],
    source: { observer: { display: 'Synthetic Healthcare Sandbox webhook engine' } },
    entity: [{ what: { identifier: { system: DELIVERY_ID_SYSTEM, value: facts.deliveryId } }, name: facts.event, detail }],
  };
}
