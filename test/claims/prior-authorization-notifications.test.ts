import type { Bundle, ClaimResponse, Parameters, Subscription } from 'fhir/r4';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reviewActionOf } from '../../claims/prior-authorization';
import { BACKPORT_EXTENSIONS, PAS_TOPIC } from '../../fhir/subscriptions/vocabulary';
import { systemToken } from '../support/backend-services';
import { tenantReceivingAt } from '../support/deliveries';
import { fhirErrors, pasExamples } from '../support/fhir-validator';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { bearer } from '../support/smart';
import { waitUntil } from '../support/wait';

/**
 * The whole flow a partner sees (issue 34): Subscriptions on the PAS topic, a pended $submit, the
 * payer's later decision notified to each subscription's own receiver, and $inquire agreeing with it.
 */

let service: TestService;
let orgDefault: TestReceiver;
let idOnly: TestReceiver;
let full: TestReceiver;
let tenant: { organizationId: string; key: string; secret: string };
let token: string;
let examples: Record<string, any>[];

beforeAll(async () => {
  service = await startTestService();
  examples = await pasExamples();
  [orgDefault, idOnly, full] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  tenant = await tenantReceivingAt(service, orgDefault.url);
  ({ accessToken: token } = await systemToken(service, 'system/Subscription.* system/Claim.c', tenant.key));
});
afterAll(async () => {
  await Promise.all([orgDefault.close(), idOnly.close(), full.close()]);
  await service.stop();
});

const fhir = (path: string, body?: unknown) =>
  service.call(`/fhir/R4/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    body,
    headers: { ...bearer(token), 'Content-Type': 'application/fhir+json' },
  });

function subscriptionBody(endpoint: string, content: 'id-only' | 'full-resource'): Subscription {
  return {
    resourceType: 'Subscription',
    status: 'requested',
    reason: 'Decisions on our pended authorizations (synthetic)',
    criteria: PAS_TOPIC,
    channel: {
      type: 'rest-hook',
      endpoint,
      payload: 'application/fhir+json',
      _payload: { extension: [{ url: BACKPORT_EXTENSIONS.payloadContent, valueCode: content }] },
    },
  } as Subscription;
}

/** A delivery checked as a partner would: Standard Webhooks' own library, with the organization's secret. */
function verified(request: ReceivedRequest): Bundle {
  return new Webhook(tenant.secret, { format: 'raw' }).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  }) as Bundle;
}

const statusParameters = (bundle: Bundle) => bundle.entry![0]!.resource as Parameters;
const parameter = (bundle: Bundle, name: string) => statusParameters(bundle).parameter!.find((item) => item.name === name);
const typeOf = (request: ReceivedRequest) => parameter(JSON.parse(request.body) as Bundle, 'type')?.valueCode;

/** The receiver's event notification, once it has come (handshakes come first). */
const eventNotification = (receiver: TestReceiver) =>
  waitUntil(() => receiver.requests.find((request) => typeOf(request) === 'event-notification'), {
    what: `an event notification at ${receiver.url}`,
    lastSeen: () => receiver.requests.map(typeOf),
  });

const example = (id: string): any => structuredClone(examples.find((resource) => resource.id === id)!);
const claimResponseOf = (bundle: Bundle) => bundle.entry![0]!.resource as ClaimResponse;
const actions = (response: ClaimResponse) => (response.item ?? []).map((item) => reviewActionOf({ ...response, item: [item] } as ClaimResponse));

describe('PAS decisions notified through Subscriptions (the flow a partner sees)', () => {
  it('notifies a pended authorization’s final decision to id-only and full-resource subscriptions, signed and valid, and $inquire agrees', async () => {
    const created: Subscription[] = [];
    for (const [receiver, content] of [
      [idOnly, 'id-only'],
      [full, 'full-resource'],
    ] as const) {
      const response = await fhir('Subscription', subscriptionBody(receiver.url, content));
      expect(response.status).toBe(201);
      created.push(response.body as Subscription);
    }
    for (const subscription of created) {
      await waitUntil(async () => ((await fhir(`Subscription/${subscription.id}`)).body.status === 'active' ? true : undefined), {
        what: `Subscription/${subscription.id} active`,
      });
    }
    for (const receiver of [idOnly, full]) expect(receiver.requests.map(typeOf)).toEqual(['handshake']);

    // Manual pace: the pend is decided when advanced. The test member id picks pended, then approved.
    await service.call('/v1/sandbox/prior-auth/settings', { key: tenant.key, method: 'PUT', body: { pace: { mode: 'manual' }, outcome: null } });
    const submitted = example('ReferralAuthorizationBundleExample');
    submitted.entry[0].resource.identifier[0].value = `E2E-${Math.random().toString(36).slice(2)}`;
    submitted.entry.find((entry: any) => entry.resource.resourceType === 'Coverage').resource.subscriberId = 'SBX-PA-PENDED-APPROVED';
    const pended = await fhir('Claim/$submit', submitted);
    expect(pended.status).toBe(200);
    const pendedResponse = claimResponseOf(pended.body);
    expect(actions(pendedResponse)).toEqual(['A4']);
    expect(fhirErrors(pended.body)).toEqual([]);
    // Nothing is notified for the first answer: the partner has it already.
    for (const receiver of [idOnly, full]) expect(receiver.requests.map(typeOf)).toEqual(['handshake']);

    const authorizationId = pendedResponse.id!.replace('-', '_');
    const advanced = await service.call(`/v1/sandbox/prior-auth/authorizations/${authorizationId}/advance`, { key: tenant.key, method: 'POST' });
    expect(advanced.status).toBe(200);
    expect(advanced.body.decision).toBe('certified');

    const focus = `${service.baseUrl}/fhir/R4/ClaimResponse/${pendedResponse.id}`;
    const notices = { idOnly: await eventNotification(idOnly), full: await eventNotification(full) };
    const bundles = { idOnly: verified(notices.idOnly), full: verified(notices.full) };
    for (const [which, bundle] of Object.entries(bundles)) {
      expect(notices[which as keyof typeof notices].headers['content-type'], which).toBe('application/fhir+json');
      expect(bundle, which).toMatchObject({ resourceType: 'Bundle', type: 'history' });
      expect(statusParameters(bundle).resourceType, which).toBe('Parameters');
      expect(parameter(bundle, 'topic')?.valueCanonical, which).toBe(PAS_TOPIC);
      expect(parameter(bundle, 'notification-event')!.part, which).toContainEqual({ name: 'focus', valueReference: { reference: focus } });
      expect(bundle.entry![1]!.fullUrl, which).toBe(focus);
      expect(fhirErrors(bundle), which).toEqual([]);
    }
    expect(parameter(bundles.idOnly, 'subscription')!.valueReference!.reference).toBe(`${service.baseUrl}/fhir/R4/Subscription/${created[0]!.id}`);
    expect(parameter(bundles.full, 'subscription')!.valueReference!.reference).toBe(`${service.baseUrl}/fhir/R4/Subscription/${created[1]!.id}`);
    // id-only names the decision; full-resource carries it: the final decision, approved (A1).
    expect(bundles.idOnly.entry![1]!.resource).toBeUndefined();
    const notified = bundles.full.entry![1]!.resource as ClaimResponse;
    expect(notified).toMatchObject({ resourceType: 'ClaimResponse', id: pendedResponse.id });
    expect(actions(notified)).toEqual(['A1']);
    expect(notified.preAuthRef).toMatch(/^PA-/);

    const inquiry = example('PASClaimInquiryBundleExample');
    inquiry.entry[0].resource.identifier = submitted.entry[0].resource.identifier.slice(0, 1);
    const final = await fhir('Claim/$inquire', inquiry);
    expect(final.status).toBe(200);
    expect(actions(claimResponseOf(final.body))).toEqual(['A1']);
    expect(claimResponseOf(final.body).preAuthRef).toBe(notified.preAuthRef);
    expect(fhirErrors(final.body)).toEqual([]);
  }, 120_000);
});
