import { createHash } from 'node:crypto';
import type { FhirResource } from 'fhir/r4';
import { TypeID } from 'typeid-js';
import { asFhirJson } from '../fhir/resource-json';
import type { FhirStore } from '../fixtures/store';
import { WORLD_AS_OF } from '../fixtures/synthetic';
import type { WebhookEnvelope } from '../webhooks/envelope';
import type { EventDefinition } from './events';

/** The instant a resource records for what happened to it, for the example's `occurred_at`. */
function recordedInstant(resource: FhirResource): string {
  const fields = resource as {
    recorded?: string;
    created?: string;
    authoredOn?: string;
    issued?: string;
    effectiveDateTime?: string;
    date?: string;
    period?: { start?: string };
    /** A Bundle's: when its resources were put together, i.e. when the event happened. */
    timestamp?: string;
  };
  const instant =
    fields.recorded ??
    fields.created ??
    fields.authoredOn ??
    fields.issued ??
    fields.effectiveDateTime ??
    fields.date ??
    fields.period?.start ??
    fields.timestamp;
  // Millisecond precision, as real deliveries stamp occurred_at (new Date().toISOString()).
  return new Date(instant ?? WORLD_AS_OF).toISOString();
}

/**
 * The example envelope the catalog shows for an event. Its `evt_` id is derived from the event name,
 * so the catalog answers the same bytes on every call; a real delivery gets a fresh id.
 */
export function exampleEnvelope(event: EventDefinition, store: FhirStore): WebhookEnvelope {
  const resource = event.sampleResource(store);
  const digest = createHash('sha256').update(event.name).digest().subarray(0, 16);
  // Version 7 and RFC 4122 variant bits, so the id is a well-formed UUIDv7-based TypeID.
  digest[6] = (digest[6]! & 0x0f) | 0x70;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  return {
    id: TypeID.fromUUIDBytes('evt', digest).toString(),
    event: event.name,
    connection_id: null,
    environment: 'sandbox',
    occurred_at: recordedInstant(resource),
    resource: asFhirJson(resource),
  };
}
