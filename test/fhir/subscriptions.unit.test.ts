import type { Bundle, ClaimResponse, Parameters, Subscription } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import type { FhirSubscription } from '../../drizzle/schema';
import { notificationBundle, type SubscriptionStatusFacts, statusSearchset, subscriptionStatus } from '../../fhir/subscriptions/notification';
import { requestedColumns } from '../../fhir/subscriptions/records';
import { filtersMatch, MIN_HEARTBEAT_SECONDS, readSubscriptionRequest, type SubscriptionRequest } from '../../fhir/subscriptions/request';
import { subscriptionResource } from '../../fhir/subscriptions/resource';
import { BACKPORT_EXTENSIONS, PAS_SUBSCRIPTION_PROFILE, PAS_TOPIC } from '../../fhir/subscriptions/vocabulary';
import { fhirErrors, pasExamples } from '../support/fhir-validator';

const BASE = 'https://sandbox.test/fhir/R4';

/** The PAS package's own Subscription example, as a partner would copy it. */
async function pasExample(): Promise<Subscription> {
  const examples = await pasExamples();
  return structuredClone(examples.find((resource) => resource.resourceType === 'Subscription')) as unknown as Subscription;
}

function accepted(body: unknown): SubscriptionRequest {
  const read = readSubscriptionRequest(body);
  if ('issues' in read) throw new Error(JSON.stringify(read.issues));
  return read.request;
}

function refused(body: unknown) {
  const read = readSubscriptionRequest(body);
  if (!('issues' in read)) throw new Error('accepted');
  return read.issues;
}

const stored = (request: SubscriptionRequest, extra: Partial<FhirSubscription> = {}): FhirSubscription => ({
  id: 'sub-01jd8x3m0ae8v9q2w1f4k7t5zr',
  organizationId: 'org_01jd8x3m0ae8v9q2w1f4k7t5zr',
  status: 'active',
  ...requestedColumns(request),
  eventsSinceStart: 0,
  error: null,
  createdAt: new Date('2026-11-27T00:00:00Z'),
  updatedAt: new Date('2026-11-27T00:00:00Z'),
  deletedAt: null,
  ...extra,
});

describe('reading a Subscription a partner POSTs', () => {
  it('takes the PAS package example as it is: topic, orgIdentifier filter, rest-hook, full-resource', async () => {
    const request = accepted(await pasExample());
    expect(request).toMatchObject({
      topic: PAS_TOPIC,
      filters: [{ name: 'org-identifier', value: '1234567893', text: 'orgIdentifier=1234567893' }],
      endpoint: 'http://example.org/send-me-subscription-notifications',
      payloadMime: 'application/fhir+json',
      content: 'full-resource',
      heartbeatSeconds: null,
      headers: [],
    });
  });

  it('is lenient where FHIR lets a server be: defaults, a versioned topic, a search-style filter, a short heartbeat raised', async () => {
    const example = await pasExample();
    const request = accepted({
      ...example,
      reason: undefined,
      criteria: `${PAS_TOPIC}|2.2.1`,
      _criteria: {
        extension: [
          { url: BACKPORT_EXTENSIONS.filterCriteria, valueString: 'ClaimResponse?org-identifier=http://hl7.org/fhir/sid/us-npi|1234567893' },
        ],
      },
      channel: {
        type: 'rest-hook',
        endpoint: 'https://provider.example/notify',
        header: ['Authorization: Bearer abc', 'X-Partner:  42'],
        extension: [{ url: BACKPORT_EXTENSIONS.heartbeatPeriod, valueUnsignedInt: 5 }],
      },
    });
    expect(request).toMatchObject({
      topic: PAS_TOPIC,
      filters: [{ name: 'org-identifier', value: 'http://hl7.org/fhir/sid/us-npi|1234567893' }],
      payloadMime: 'application/fhir+json',
      content: 'id-only',
      heartbeatSeconds: MIN_HEARTBEAT_SECONDS,
      headers: ['Authorization: Bearer abc', 'X-Partner: 42'],
    });
    expect(request.reason).toMatch(/prior authorization/);
  });

  it('refuses what it cannot honour, every problem at once, each naming its element', async () => {
    const example = await pasExample();
    const issues = refused({
      ...example,
      criteria: 'http://example.org/SubscriptionTopic/admission',
      _criteria: { extension: [{ url: BACKPORT_EXTENSIONS.filterCriteria, valueString: 'patient=Patient/1' }] },
      end: '2001-01-01T00:00:00Z',
      channel: {
        type: 'websocket',
        payload: 'application/fhir+xml',
        _payload: { extension: [{ url: BACKPORT_EXTENSIONS.payloadContent, valueCode: 'everything' }] },
        header: ['Content-Type: text/plain', 'Broken\r\nInjected: yes'],
        extension: [{ url: BACKPORT_EXTENSIONS.heartbeatPeriod, valueUnsignedInt: -1 }],
      },
    });
    expect(issues.map((issue) => issue.expression)).toEqual([
      'Subscription.criteria',
      'Subscription.criteria.extension',
      'Subscription.channel.type',
      'Subscription.channel.endpoint',
      'Subscription.channel.header[0]',
      'Subscription.channel.header[1]',
      'Subscription.channel.payload',
      'Subscription.channel.payload.extension',
      'Subscription.channel.extension',
      'Subscription.end',
    ]);
    expect(issues[0]!.diagnostics).toContain(PAS_TOPIC);
    expect(refused({ resourceType: 'Patient' })[0]).toMatchObject({ expression: 'Subscription' });
    expect(refused({ ...example, channel: { ...example.channel, header: Array.from({ length: 11 }, (_, i) => `X-H${i}: v`) } })[0]).toMatchObject({
      code: 'too-costly',
    });
  });

  it('matches filters against the focus organization’s identifiers: a value alone matches any system', () => {
    const npi = 'http://hl7.org/fhir/sid/us-npi|1234567893';
    expect(filtersMatch([{ value: '1234567893' }], [npi])).toBe(true);
    expect(filtersMatch([{ value: npi }], [npi])).toBe(true);
    expect(filtersMatch([{ value: 'http://other|1234567893' }], [npi])).toBe(false);
    expect(filtersMatch([{ value: '999' }], [npi])).toBe(false);
    expect(filtersMatch([], [])).toBe(true);
  });
});

describe('the Subscription resource the API answers', () => {
  it('passes base R4 and, for full-resource, the PAS Subscription profile', async () => {
    const full = subscriptionResource(stored(accepted(await pasExample())));
    expect(full.meta?.profile).toContain(PAS_SUBSCRIPTION_PROFILE);
    expect(full._criteria?.extension?.[0]?.valueString).toBe('orgIdentifier=1234567893');
    expect(fhirErrors(full)).toEqual([]);

    const idOnly = subscriptionResource(
      stored(
        { ...accepted(await pasExample()), content: 'id-only', heartbeatSeconds: 3600, headers: ['Authorization: Bearer abc'] },
        { status: 'error', error: 'The handshake failed.' },
      ),
    );
    expect(idOnly.meta?.profile).not.toContain(PAS_SUBSCRIPTION_PROFILE);
    expect(idOnly).toMatchObject({ status: 'error', error: 'The handshake failed.', channel: { header: ['Authorization: Bearer abc'] } });
    expect(fhirErrors(idOnly)).toEqual([]);
  });

  it('fails the PAS profile when a full-resource resource loses what the profile requires (the check can fail)', async () => {
    const resource = subscriptionResource(stored(accepted(await pasExample())));
    delete (resource.channel as { _payload?: unknown })._payload;
    expect(fhirErrors(resource).length).toBeGreaterThan(0);
  });
});

describe('notifications (backport R4 shapes)', () => {
  const claimResponse: ClaimResponse = {
    resourceType: 'ClaimResponse',
    id: 'pas-cr-1',
    status: 'active',
    type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/claim-type', code: 'professional' }] },
    use: 'preauthorization',
    patient: { reference: 'Patient/pas-pat-1' },
    created: '2026-11-27T10:00:00Z',
    insurer: { reference: 'Organization/pas-payer-1' },
    outcome: 'complete',
  };
  const facts = (content: SubscriptionStatusFacts['content']): SubscriptionStatusFacts => ({
    subscriptionUrl: `${BASE}/Subscription/sub-01jd8x3m0ae8v9q2w1f4k7t5zr`,
    topic: PAS_TOPIC,
    status: 'active',
    type: 'event-notification',
    eventsSinceStart: 3,
    content,
    event: { number: 3, timestamp: '2026-11-27T10:00:01.000Z', focus: `${BASE}/ClaimResponse/pas-cr-1` },
  });
  const id = '0b6e8d3c-8f5c-4c55-9a43-2c54a5e0d1f1';
  const timestamp = '2026-11-27T10:00:02.000Z';

  it('id-only: a history Bundle led by the status, which names the focus, and the focus as a URL', () => {
    const bundle = notificationBundle({ id, timestamp, facts: facts('id-only') });
    expect(bundle.type).toBe('history');
    const status = bundle.entry![0]!.resource as Parameters;
    expect(status.parameter!.map((parameter) => parameter.name)).toEqual([
      'subscription',
      'topic',
      'status',
      'type',
      'events-since-subscription-start',
      'notification-event',
    ]);
    expect(status.parameter!.at(-1)!.part).toContainEqual({ name: 'focus', valueReference: { reference: `${BASE}/ClaimResponse/pas-cr-1` } });
    expect(bundle.entry![0]!.request).toEqual({ method: 'GET', url: `${BASE}/Subscription/sub-01jd8x3m0ae8v9q2w1f4k7t5zr/$status` });
    expect(bundle.entry![1]).toEqual({
      fullUrl: `${BASE}/ClaimResponse/pas-cr-1`,
      request: { method: 'PUT', url: 'ClaimResponse/pas-cr-1' },
      response: { status: '200' },
    });
    expect(fhirErrors(bundle)).toEqual([]);
  });

  it('full-resource carries the focus itself; empty names nothing, not even the topic', () => {
    const full = notificationBundle({ id, timestamp, facts: facts('full-resource'), focusResource: claimResponse });
    expect(full.entry![1]!.resource).toEqual(claimResponse);
    expect(fhirErrors(full)).toEqual([]);
    expect(() => notificationBundle({ id, timestamp, facts: facts('full-resource') })).toThrow(/needs its focus/);

    const empty = notificationBundle({ id, timestamp, facts: facts('empty') });
    expect(empty.entry).toHaveLength(1);
    const names = (empty.entry![0]!.resource as Parameters).parameter!.map((parameter) => parameter.name);
    expect(names).not.toContain('topic');
    expect(JSON.stringify(empty)).not.toContain('ClaimResponse');
    expect(fhirErrors(empty)).toEqual([]);
  });

  it('handshake, heartbeat and $status: no event; an error says why', () => {
    const handshake = notificationBundle({
      id,
      timestamp,
      facts: { ...facts('id-only'), type: 'handshake', status: 'requested', eventsSinceStart: 0, event: undefined },
    });
    expect(handshake.entry).toHaveLength(1);
    expect(fhirErrors(handshake)).toEqual([]);
    const status = subscriptionStatus(id, {
      ...facts('id-only'),
      type: 'query-status',
      status: 'error',
      error: 'The endpoint answered 500.',
      event: undefined,
    });
    expect(status.parameter).toContainEqual({ name: 'error', valueCodeableConcept: { text: 'The endpoint answered 500.' } });
    const searchset: Bundle = statusSearchset({ id, timestamp, self: `${BASE}/Subscription/$status`, statuses: [status] });
    expect(searchset.total).toBe(1);
    expect(fhirErrors(searchset)).toEqual([]);
  });

  it('a history Bundle without its entries’ request fails base R4 (bdl-3: the check can fail)', () => {
    const bundle = notificationBundle({ id, timestamp, facts: facts('id-only') });
    delete bundle.entry![0]!.request;
    expect(fhirErrors(bundle).length).toBeGreaterThan(0);
  });
});
