import type { Bundle, ClaimResponse, OperationOutcome, Parameters, Subscription } from 'fhir/r4';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubscriptionActivities, type FocusReader } from '../../activities/subscriptions';
import { BACKPORT_EXTENSIONS, PAS_SUBSCRIPTION_PROFILE, PAS_TOPIC } from '../../fhir/subscriptions/vocabulary';
import type { CarriedDelivery } from '../../webhooks/claim-check';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { deliveryWorkflow } from '../../workflows/delivery/workflow';
import { systemToken } from '../support/backend-services';
import { tenantReceivingAt } from '../support/deliveries';
import { fhirErrors } from '../support/fhir-validator';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { bearer, standaloneTokens, userTokens } from '../support/smart';
import { waitUntil } from '../support/wait';

const NPI = 'http://hl7.org/fhir/sid/us-npi|1234567893';

let service: TestService;
/** The organization's default webhook receiver: a subscription's notifications must never arrive here. */
let orgDefault: TestReceiver;
let tenant: { organizationId: string; key: string; secret: string };
let token: string;

beforeAll(async () => {
  service = await startTestService();
  orgDefault = await startReceiver();
  tenant = await tenantReceivingAt(service, orgDefault.url);
  ({ accessToken: token } = await systemToken(service, 'system/Subscription.*', tenant.key));
});
afterAll(async () => {
  await orgDefault.close();
  await service.stop();
});

/** A subscription as a partner POSTs it: the PAS topic, rest-hook to `endpoint`, with the content level and filter given. */
function subscriptionBody(endpoint: string, options: { content?: string; filter?: string; header?: string[] } = {}): Subscription {
  return {
    resourceType: 'Subscription',
    status: 'requested',
    reason: 'Pended authorizations of Lakeside Clinic (synthetic)',
    criteria: PAS_TOPIC,
    ...(options.filter ? { _criteria: { extension: [{ url: BACKPORT_EXTENSIONS.filterCriteria, valueString: options.filter }] } } : {}),
    channel: {
      type: 'rest-hook',
      endpoint,
      payload: 'application/fhir+json',
      _payload: { extension: [{ url: BACKPORT_EXTENSIONS.payloadContent, valueCode: options.content ?? 'id-only' }] },
      ...(options.header ? { header: options.header } : {}),
    },
  } as Subscription;
}

async function create(body: unknown, accessToken = token) {
  return service.call('/fhir/R4/Subscription', {
    method: 'POST',
    body,
    headers: { ...bearer(accessToken), 'Content-Type': 'application/fhir+json' },
  });
}

const read = (id: string, accessToken = token) => service.call(`/fhir/R4/Subscription/${id}`, { headers: bearer(accessToken) });

async function statusOf(id: string, status: string): Promise<Subscription> {
  return waitUntil(
    async () => {
      const response = await read(id);
      return response.body.status === status ? (response.body as Subscription) : undefined;
    },
    { what: `Subscription/${id} ${status}` },
  );
}

/** Both signatures of a request, checked as a partner would: Standard Webhooks' own library, with the organization's secret. */
function verified(request: ReceivedRequest): Bundle {
  return new Webhook(tenant.secret, { format: 'raw' }).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  }) as Bundle;
}

const parameter = (bundle: Bundle, name: string) => (bundle.entry![0]!.resource as Parameters).parameter!.find((item) => item.name === name);

/** A pended authorization's decision of this test's making: the focus the PAS workflow will hand in. */
const claimResponse: ClaimResponse = {
  resourceType: 'ClaimResponse',
  id: 'sub-test-cr-1',
  status: 'active',
  type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/claim-type', code: 'professional' }] },
  use: 'preauthorization',
  patient: { reference: 'Patient/sub-test-patient' },
  created: '2026-11-27T10:00:00Z',
  insurer: { reference: 'Organization/sub-test-payer' },
  outcome: 'complete',
};
const readFocus: FocusReader = async (_db, organizationId, reference) =>
  organizationId === tenant.organizationId && reference === 'ClaimResponse/sub-test-cr-1'
    ? { resource: claimResponse, orgIdentifiers: [NPI] }
    : undefined;

/** What the event's workflow does with notifySubscriptions' answer: each delivery as a delivery workflow (the test starts them from the client). */
async function startDeliveries(deliveries: CarriedDelivery[]): Promise<void> {
  for (const delivery of deliveries) {
    await service.temporal.workflow.start(deliveryWorkflow, {
      taskQueue: service.taskQueue,
      workflowId: deliveryWorkflowId(delivery.id),
      args: [{ deliveryId: delivery.id, retryScheduleMs: [], newDelivery: delivery }],
    });
  }
}

describe('FHIR Subscriptions (R4 backport, PAS topic)', () => {
  it('activates after a handshake to the endpoint: its channel headers sent, signed as every webhook, a valid notification Bundle', async () => {
    const receiver = await startReceiver();
    try {
      const response = await create(
        subscriptionBody(receiver.url, { filter: 'orgIdentifier=1234567893', header: ['Authorization: Bearer partner-token'] }),
      );
      expect(response.status).toBe(201);
      const created = response.body as Subscription;
      expect(created).toMatchObject({ resourceType: 'Subscription', status: 'requested', criteria: PAS_TOPIC });
      expect(created.id).toMatch(/^sub-/);
      expect(response.headers.get('location')).toBe(`${service.baseUrl}/fhir/R4/Subscription/${created.id}`);
      expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
      expect(fhirErrors(created)).toEqual([]);

      const [handshake] = await receiver.waitForRequests(1);
      expect(handshake!.headers.authorization).toBe('Bearer partner-token');
      expect(handshake!.headers['content-type']).toBe('application/fhir+json');
      const bundle = verified(handshake!);
      expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'history' });
      expect(parameter(bundle, 'type')).toEqual({ name: 'type', valueCode: 'handshake' });
      expect(parameter(bundle, 'status')).toEqual({ name: 'status', valueCode: 'requested' });
      expect(parameter(bundle, 'subscription')!.valueReference!.reference).toBe(`${service.baseUrl}/fhir/R4/Subscription/${created.id}`);
      expect(fhirErrors(bundle)).toEqual([]);

      const active = await statusOf(created.id!, 'active');
      expect(fhirErrors(active)).toEqual([]);
      // The handshake is a delivery like every webhook: in the attempt log of /v1/webhooks/deliveries.
      const deliveryId = String(handshake!.headers['webhook-id']);
      const delivery = await service.call(`/v1/webhooks/deliveries/${deliveryId}`, { key: tenant.key });
      expect(delivery.body).toMatchObject({
        event: 'fhir.subscription.handshake',
        status: 'succeeded',
        attempts: [{ target_source: 'subscription', target_url: receiver.url }],
      });
      expect(orgDefault.requests).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });

  it('falls into error when the handshake fails, and says why in the resource and in $status', async () => {
    const receiver = await startReceiver(() => ({ status: 500, body: 'not ready' }));
    try {
      const { body: created } = await create(subscriptionBody(receiver.url));
      const failed = await statusOf(created.id, 'error');
      expect(failed.error).toMatch(/handshake|500/);
      expect(receiver.requests).toHaveLength(1);
      const status = await service.call(`/fhir/R4/Subscription/${created.id}/$status`, { headers: bearer(token) });
      expect(status.status).toBe(200);
      const searchset = status.body as Bundle;
      expect(searchset).toMatchObject({ type: 'searchset', total: 1 });
      const parameters = searchset.entry![0]!.resource as Parameters;
      expect(parameters.parameter).toContainEqual({ name: 'status', valueCode: 'error' });
      expect(parameters.parameter).toContainEqual({ name: 'type', valueCode: 'query-status' });
      expect(parameters.parameter!.find((item) => item.name === 'error')!.valueCodeableConcept!.text).toMatch(/500/);
      expect(fhirErrors(searchset)).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('notifies an event id-only and full-resource to the subscriptions whose filter matches, numbered, once per event, through the delivery workflow', async () => {
    const idOnly = await startReceiver();
    const full = await startReceiver();
    const otherOrg = await startReceiver();
    try {
      const a = (await create(subscriptionBody(idOnly.url, { content: 'id-only', filter: 'org-identifier=1234567893' }))).body as Subscription;
      const b = (await create(subscriptionBody(full.url, { content: 'full-resource', filter: `org-identifier=${NPI}` }))).body as Subscription;
      const c = (await create(subscriptionBody(otherOrg.url, { content: 'id-only', filter: 'org-identifier=9999999999' }))).body as Subscription;
      expect(b.meta!.profile).toContain(PAS_SUBSCRIPTION_PROFILE);
      for (const subscription of [a, b, c]) await statusOf(subscription.id!, 'active');

      const activities = createSubscriptionActivities({ db: service.database.db, fhirBase: `${service.baseUrl}/fhir/R4`, readFocus });
      const event = {
        organizationId: tenant.organizationId,
        topic: PAS_TOPIC,
        focus: 'ClaimResponse/sub-test-cr-1',
        eventKey: 'pas-decision-1',
      } as const;
      // The organization's active subscriptions whose filter the focus passes: a and b (and the first test's), never c.
      const all = await activities.notifySubscriptions(event);
      const deliveries = all.filter((delivery) => delivery.subscriptionId === a.id || delivery.subscriptionId === b.id);
      expect(deliveries).toHaveLength(2);
      expect(all.map((delivery) => delivery.subscriptionId)).not.toContain(c.id);
      // No patient content travels in a workflow's input: the deliveries are carried by id.
      expect(JSON.stringify(deliveries)).not.toContain('ClaimResponse');
      // The step run again (a retried activity) answers the same deliveries and numbers nothing twice.
      expect((await activities.notifySubscriptions(event)).map((delivery) => delivery.id)).toEqual(all.map((delivery) => delivery.id));
      await startDeliveries(deliveries);

      const [, idOnlyNotice] = await idOnly.waitForRequests(2);
      const idOnlyBundle = verified(idOnlyNotice!);
      expect(idOnlyNotice!.headers['content-type']).toBe('application/fhir+json');
      expect(parameter(idOnlyBundle, 'type')!.valueCode).toBe('event-notification');
      expect(parameter(idOnlyBundle, 'events-since-subscription-start')!.valueString).toBe('1');
      expect(parameter(idOnlyBundle, 'notification-event')!.part).toEqual([
        { name: 'event-number', valueString: '1' },
        { name: 'timestamp', valueInstant: expect.any(String) },
        { name: 'focus', valueReference: { reference: `${service.baseUrl}/fhir/R4/ClaimResponse/sub-test-cr-1` } },
      ]);
      expect(idOnlyBundle.entry![1]).toEqual({
        fullUrl: `${service.baseUrl}/fhir/R4/ClaimResponse/sub-test-cr-1`,
        request: { method: 'PUT', url: 'ClaimResponse/sub-test-cr-1' },
        response: { status: '200' },
      });
      expect(fhirErrors(idOnlyBundle)).toEqual([]);

      const [, fullNotice] = await full.waitForRequests(2);
      const fullBundle = verified(fullNotice!);
      expect(fullBundle.entry![1]!.resource).toEqual(claimResponse);
      expect(fhirErrors(fullBundle)).toEqual([]);

      expect(otherOrg.requests).toHaveLength(1);
      expect(orgDefault.requests).toHaveLength(0);

      // The next event takes the next number.
      const next = await activities.notifySubscriptions({ ...event, eventKey: 'pas-decision-2' });
      await startDeliveries(next.filter((delivery) => delivery.subscriptionId === a.id));
      const [, , second] = await idOnly.waitForRequests(3);
      expect(parameter(verified(second!), 'events-since-subscription-start')!.valueString).toBe('2');
      const status = await service.call(`/fhir/R4/Subscription/${a.id}/$status`, { headers: bearer(token) });
      expect((status.body.entry[0].resource as Parameters).parameter).toContainEqual({ name: 'events-since-subscription-start', valueString: '2' });

      // Replayable like every webhook: the same bytes again, as a new attempt on the same delivery.
      const replay = await service.call(`/v1/webhooks/deliveries/${deliveries[0]!.id}/replay`, { key: tenant.key, method: 'POST' });
      expect(replay.status).toBe(202);
      const replayed = await Promise.race([idOnly.waitForRequests(4), full.waitForRequests(3)]);
      expect(replayed.at(-1)!.body).toBe(deliveries[0]!.id === String(idOnlyNotice!.headers['webhook-id']) ? idOnlyNotice!.body : fullNotice!.body);
    } finally {
      await Promise.all([idOnly.close(), full.close(), otherOrg.close()]);
    }
  });

  it('keeps each organization’s subscriptions to itself, and deletes them: then no notification goes out', async () => {
    const receiver = await startReceiver();
    try {
      const { body: created } = await create(subscriptionBody(receiver.url));
      await statusOf(created.id, 'active');
      const { accessToken: other } = await systemToken(service, 'system/Subscription.*');
      expect((await read(created.id, other)).status).toBe(404);
      expect((await service.call(`/fhir/R4/Subscription/${created.id}/$status`, { headers: bearer(other) })).status).toBe(404);
      expect((await service.call(`/fhir/R4/Subscription/${created.id}`, { method: 'DELETE', headers: bearer(other) })).status).toBe(404);
      const theirs = await service.call('/fhir/R4/Subscription', { headers: bearer(other) });
      expect(theirs.body).toMatchObject({ type: 'searchset', total: 0 });
      const ours = await service.call(`/fhir/R4/Subscription?status=active&_id=${created.id}`, { headers: bearer(token) });
      expect(ours.body.total).toBe(1);
      expect(fhirErrors(ours.body)).toEqual([]);

      expect((await service.call(`/fhir/R4/Subscription/${created.id}`, { method: 'DELETE', headers: bearer(token) })).status).toBe(204);
      expect((await read(created.id)).status).toBe(404);
      const activities = createSubscriptionActivities({ db: service.database.db, fhirBase: `${service.baseUrl}/fhir/R4`, readFocus });
      const sent = await activities.notifySubscriptions({
        organizationId: tenant.organizationId,
        topic: PAS_TOPIC,
        focus: 'ClaimResponse/sub-test-cr-1',
        eventKey: 'after-delete',
      });
      expect(sent.map((delivery) => delivery.subscriptionId)).not.toContain(created.id);
    } finally {
      await receiver.close();
    }
  });

  it("takes a user-level token with Subscription scopes (a provider's app): it creates and reads for its organization, another organization's user sees nothing", async () => {
    const receiver = await startReceiver();
    try {
      const { tokens } = await userTokens(service, 'openid fhirUser user/Subscription.*', { key: tenant.key });
      expect(tokens.scope).toBe('openid fhirUser user/Subscription.crds');
      const created = await create(subscriptionBody(receiver.url), tokens.access_token);
      expect(created.status).toBe(201);
      // The organization's system token sees it turn active: the user acted for the client's organization.
      await statusOf(created.body.id, 'active');
      const own = await read(created.body.id, tokens.access_token);
      expect(own.status).toBe(200);
      expect(own.body).toMatchObject({ id: created.body.id, status: 'active' });

      const other = await userTokens(service, 'user/Subscription.crds');
      expect((await read(created.body.id, other.tokens.access_token)).status).toBe(404);
      expect((await service.call('/fhir/R4/Subscription', { headers: bearer(other.tokens.access_token) })).body).toMatchObject({ total: 0 });
      expect(
        (await service.call(`/fhir/R4/Subscription/${created.body.id}`, { method: 'DELETE', headers: bearer(other.tokens.access_token) })).status,
      ).toBe(404);

      const patientLevel = await standaloneTokens(service, 'syn-pat-0001', 'launch/patient patient/*.rs');
      const refused = await service.call('/fhir/R4/Subscription', { headers: bearer(patientLevel.tokens.access_token) });
      expect(refused.status).toBe(403);
      expect((refused.body as OperationOutcome).issue[0]!.diagnostics).toContain('user-level');
      const { tokens: readOnly } = await userTokens(service, 'user/Subscription.rs', { key: tenant.key });
      expect((await create(subscriptionBody(receiver.url), readOnly.access_token)).status).toBe(403);

      expect(
        (await service.call(`/fhir/R4/Subscription/${created.body.id}`, { method: 'DELETE', headers: bearer(tokens.access_token) })).status,
      ).toBe(204);
    } finally {
      await receiver.close();
    }
  });

  it('refuses a token without the scope, a patient-less request, and a Subscription it cannot honour, saying which element', async () => {
    const { accessToken: readOnly } = await systemToken(service, 'system/Subscription.rs', tenant.key);
    const refused = await create(subscriptionBody('http://127.0.0.1:9/x'), readOnly);
    expect(refused.status).toBe(403);
    expect((refused.body as OperationOutcome).issue[0]!.diagnostics).toContain('system/Subscription');
    const { accessToken: patients } = await systemToken(service, 'system/Patient.rs', tenant.key);
    expect((await service.call('/fhir/R4/Subscription', { headers: bearer(patients) })).status).toBe(403);
    expect((await service.call('/fhir/R4/Subscription')).status).toBe(401);

    const bad = await create({
      ...subscriptionBody('ftp://partner.example/x'),
      criteria: 'http://example.org/topic',
      channel: { type: 'email', endpoint: 'ftp://x' },
    });
    expect(bad.status).toBe(400);
    const expressions = (bad.body as OperationOutcome).issue.map((issue) => issue.expression?.[0]);
    expect(expressions).toEqual(['Subscription.criteria', 'Subscription.channel.type']);
    const ftp = await create(subscriptionBody('ftp://partner.example/x'));
    expect(ftp.status).toBe(400);
    expect((ftp.body as OperationOutcome).issue[0]).toMatchObject({
      expression: ['Subscription.channel.endpoint'],
      diagnostics: expect.stringContaining('http or https'),
    });
    expect((await service.call('/fhir/R4/Subscription/sub-x', { method: 'PUT', body: {}, headers: bearer(token) })).status).toBe(405);
  });
});

describe('the endpoint passes the webhook SSRF guard', () => {
  let guarded: TestService;
  beforeAll(async () => {
    guarded = await startTestService({ ALLOW_PRIVATE_TARGETS: 'false' });
  });
  afterAll(() => guarded.stop());

  it('refuses a private or metadata address as it refuses a webhook URL', async () => {
    const { accessToken } = await systemToken(guarded, 'system/Subscription.*');
    for (const endpoint of ['http://169.254.169.254/latest/meta-data', 'http://127.0.0.1:8080/hook', 'http://metadata.google.internal/x']) {
      const response = await guarded.call('/fhir/R4/Subscription', {
        method: 'POST',
        body: subscriptionBody(endpoint),
        headers: bearer(accessToken),
      });
      expect(response.status, endpoint).toBe(400);
      expect((response.body as OperationOutcome).issue[0]).toMatchObject({
        expression: ['Subscription.channel.endpoint'],
        diagnostics: expect.stringContaining('private'),
      });
    }
  });
});

describe('the CapabilityStatement', () => {
  it('lists Subscription with the backport’s topic-canonical extension, $status, and the backport server capabilities', async () => {
    const { body } = await service.call('/fhir/R4/metadata');
    expect(body.instantiates).toContain('http://hl7.org/fhir/uv/subscriptions-backport/CapabilityStatement/backport-subscription-server-r4');
    const subscription = body.rest[0].resource.find((resource: { type: string }) => resource.type === 'Subscription');
    expect(subscription.extension).toEqual([
      {
        url: 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/capabilitystatement-subscriptiontopic-canonical',
        valueCanonical: PAS_TOPIC,
      },
    ]);
    expect(subscription.interaction.map((interaction: { code: string }) => interaction.code)).toEqual(['create', 'read', 'delete', 'search-type']);
    expect(subscription.operation).toEqual([
      expect.objectContaining({
        name: 'status',
        definition: 'http://hl7.org/fhir/uv/subscriptions-backport/OperationDefinition/backport-subscription-status',
      }),
    ]);
    expect(subscription.supportedProfile).toEqual([PAS_SUBSCRIPTION_PROFILE]);
    expect(fhirErrors(body)).toEqual([]);
  });
});
