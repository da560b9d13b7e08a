import type { Subscription } from 'fhir/r4';
import type { FhirSubscription } from '../../drizzle/schema';
import { BACKPORT_EXTENSIONS, BACKPORT_PROFILES, PAS_SUBSCRIPTION_PROFILE, PAS_TOPIC } from './vocabulary';

/**
 * A stored subscription as the R4 Subscription the API answers: exactly what the server honours
 * (backport-subscription; the PAS Subscription profile too where it applies, a `full-resource` PAS
 * subscription, since that profile fixes the content level). The channel headers are the
 * organization's own and are shown back to it as sent.
 */
export function subscriptionResource(row: FhirSubscription): Subscription {
  const claimsPas = row.topic === PAS_TOPIC && row.content === 'full-resource';
  return {
    resourceType: 'Subscription',
    id: row.id,
    meta: {
      lastUpdated: row.updatedAt.toISOString(),
      profile: [BACKPORT_PROFILES.subscription, ...(claimsPas ? [PAS_SUBSCRIPTION_PROFILE] : [])],
    },
    status: row.status,
    ...(row.endAt ? { end: row.endAt.toISOString() } : {}),
    reason: row.reason,
    criteria: row.topic,
    ...(row.filters.length > 0
      ? { _criteria: { extension: row.filters.map((filter) => ({ url: BACKPORT_EXTENSIONS.filterCriteria, valueString: filter.text })) } }
      : {}),
    ...(row.status === 'error' && row.error ? { error: row.error } : {}),
    channel: {
      ...(row.heartbeatSeconds ? { extension: [{ url: BACKPORT_EXTENSIONS.heartbeatPeriod, valueUnsignedInt: row.heartbeatSeconds }] } : {}),
      type: 'rest-hook',
      endpoint: row.endpoint,
      payload: row.payloadMime,
      _payload: { extension: [{ url: BACKPORT_EXTENSIONS.payloadContent, valueCode: row.content }] },
      ...(row.headers.length > 0 ? { header: row.headers } : {}),
    },
  } as Subscription;
}
