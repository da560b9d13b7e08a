import type { Bundle, ClaimResponse, OperationOutcome } from 'fhir/r4';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuthorization } from '../../claims/pas/authorization-records';
import { reviewActionOf } from '../../claims/prior-authorization';
import { firstAnswerUpdate } from '../../workflows/prior-auth/contract';
import { systemToken } from '../support/backend-services';
import { fhirErrors, pasExamples } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';
import { standaloneTokens, userTokens } from '../support/smart';

const PAS = 'http://hl7.org/fhir/us/davinci-pas/StructureDefinition';
let service: TestService;
let examples: Record<string, any>[];
beforeAll(async () => {
  service = await startTestService();
  examples = await pasExamples();
});
afterAll(() => service.stop());

const example = (id: string): any => structuredClone(examples.find((resource) => resource.id === id)!);
/** A request example with its own Claim identifier, so each test has an authorization of its own. */
function request(id = 'ReferralAuthorizationBundleExample', claimIdentifier = `T-${Math.random().toString(36).slice(2)}`): any {
  const bundle = example(id);
  bundle.entry[0].resource.identifier[0].value = claimIdentifier;
  return bundle;
}

async function tenant(scope = 'system/Claim.c') {
  const { accessToken, apiKey } = await systemToken(service, scope);
  return { accessToken, apiKey, post: poster(accessToken) };
}

/** Calls a PAS operation with the access token. */
function poster(accessToken: string) {
  return (operation: '$submit' | '$inquire', body: unknown, headers: Record<string, string> = {}) =>
    service.call(`/fhir/R4/Claim/${operation}`, {
      key: accessToken,
      method: 'POST',
      body,
      headers: { 'content-type': 'application/fhir+json', ...headers },
    });
}

const claimResponseOf = (bundle: Bundle) => bundle.entry![0]!.resource as ClaimResponse;
const actions = (bundle: Bundle) =>
  (claimResponseOf(bundle).item ?? []).map((item) => reviewActionOf({ ...claimResponseOf(bundle), item: [item] } as ClaimResponse));

function inquiryFor(submitted: any): any {
  const inquiry = example('PASClaimInquiryBundleExample');
  inquiry.entry[0].resource.identifier = submitted.entry[0].resource.identifier.slice(0, 1);
  return inquiry;
}

describe('Da Vinci PAS Claim/$submit and Claim/$inquire', () => {
  it("takes each of the package's request examples and answers a PAS response Bundle that passes the response profiles", async () => {
    const ids = [
      'HomecareAuthorizationBundleExample',
      'MedicalServicesAuthorizationBundleExample',
      'ReferralAuthorizationBundleExample',
      'SurgicalRequestBundleExample',
    ];
    for (const id of ids) {
      const { post } = await tenant();
      const answer = await post('$submit', example(id));
      expect(answer.status, id).toBe(200);
      expect(answer.headers.get('content-type')).toContain('application/fhir+json');
      expect(answer.body.meta.profile).toEqual([`${PAS}/profile-pas-response-bundle`]);
      expect(claimResponseOf(answer.body).meta!.profile).toEqual([`${PAS}/profile-claimresponse`]);
      // The request's resources are echoed after the ClaimResponse.
      expect(answer.body.entry.slice(1).map((entry: any) => entry.fullUrl)).toEqual(example(id).entry.map((entry: any) => entry.fullUrl));
      expect(fhirErrors(answer.body), id).toEqual([]);
    }
    // Wrapped in Parameters.resource, as the OperationDefinition's parameter.
    const { post } = await tenant();
    const wrapped = await post('$submit', { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: request() }] });
    expect(wrapped.status).toBe(200);
    expect(fhirErrors(wrapped.body)).toEqual([]);
  }, 180_000);

  it('approves, denies and modifies as the outcome header asks (A1 with number and period, A3 with a reason, A6)', async () => {
    const { post } = await tenant();
    const approved = await post('$submit', request(), { 'x-sandbox-prior-auth-outcome': 'approved' });
    expect(actions(approved.body)).toEqual(['A1']);
    expect(claimResponseOf(approved.body).preAuthRef).toMatch(/^PA-/);
    expect(claimResponseOf(approved.body).preAuthPeriod?.end).toBeDefined();
    const denied = await post('$submit', request(), { 'x-sandbox-prior-auth-outcome': 'denied' });
    expect(actions(denied.body)).toEqual(['A3']);
    expect(JSON.stringify(claimResponseOf(denied.body))).toContain('reasonCode');
    const modified = await post('$submit', request('SurgicalRequestBundleExample'), { 'x-sandbox-prior-auth-outcome': 'modified' });
    expect(actions(modified.body)).toContain('A6');
    const error = await post('$submit', request(), { 'x-sandbox-prior-auth-outcome': 'error' });
    expect(claimResponseOf(error.body).outcome).toBe('error');
    for (const answer of [approved, denied, modified, error]) expect(fhirErrors(answer.body)).toEqual([]);
    const refused = await post('$submit', request(), { 'x-sandbox-prior-auth-outcome': 'maybe' });
    expect(refused.status).toBe(400);
  });

  it('answers each $submit with the one first answer its workflow keeps, whether the route or the run assessed first', async () => {
    const { post } = await tenant();
    for (let round = 0; round < 8; round += 1) {
      const answer = await post('$submit', request(), { 'x-sandbox-prior-auth-outcome': 'approved' });
      expect(answer.status).toBe(200);
      const authorization = await readAuthorization(service.database.db, claimResponseOf(answer.body).id!.replace('-', '_'));
      // The run's own first step, waited for: the handler answers once it is done.
      const status = await service.temporal.workflow.getHandle(authorization.workflowId).executeUpdate(firstAnswerUpdate);
      expect(status.decision).toBe('certified');
      // What a later notification carries is what the partner was answered, not a second assessment's.
      const stored = (await readAuthorization(service.database.db, authorization.id)).response as Bundle;
      expect(stored.identifier).toEqual(answer.body.identifier);
      expect(claimResponseOf(stored).created).toBe(claimResponseOf(answer.body).created);
    }
  });

  it('pends (A4, a contained CommunicationRequest), decides when advanced, and $inquire shows the pend then the final decision', async () => {
    const { post, apiKey } = await tenant();
    await service.call('/v1/sandbox/prior-auth/settings', { key: apiKey, method: 'PUT', body: { pace: { mode: 'manual' }, outcome: null } });
    const submitted = request();
    // A test member id picks pended, then denied.
    submitted.entry.find((entry: any) => entry.resource.resourceType === 'Coverage').resource.subscriberId = 'SBX-PA-PENDED-DENIED';
    const pended = await post('$submit', submitted);
    expect(pended.status).toBe(200);
    expect(actions(pended.body)).toEqual(['A4']);
    const response = claimResponseOf(pended.body);
    expect(response.contained?.[0]?.resourceType).toBe('CommunicationRequest');
    expect(fhirErrors(pended.body)).toEqual([]);

    const asked = await post('$inquire', inquiryFor(submitted));
    expect(asked.status).toBe(200);
    expect(asked.body.meta.profile).toEqual([`${PAS}/profile-pas-inquiry-response-bundle`]);
    expect(actions(asked.body)).toEqual(['A4']);
    expect(fhirErrors(asked.body)).toEqual([]);

    const authorizationId = response.id!.replace('-', '_');
    const advanced = await service.call(`/v1/sandbox/prior-auth/authorizations/${authorizationId}/advance`, { key: apiKey, method: 'POST' });
    expect(advanced.status).toBe(200);
    expect(advanced.body.decision).toBe('not_certified');
    const final = await post('$inquire', inquiryFor(submitted));
    expect(actions(final.body)).toEqual(['A3']);
    expect(fhirErrors(final.body)).toEqual([]);
    // Advancing again: nothing is pended.
    expect((await service.call(`/v1/sandbox/prior-auth/authorizations/${authorizationId}/advance`, { key: apiKey, method: 'POST' })).status).toBe(
      409,
    );
  });

  it('takes claim updates on the same authorization: add an item, modify one, cancel one, cancel all', async () => {
    const { post } = await tenant();
    const original = request('HomecareAuthorizationBundleExample');
    const first = await post('$submit', original, { 'x-sandbox-prior-auth-outcome': 'approved' });
    expect(actions(first.body)).toEqual(['A1', 'A1']);
    const authorization = claimResponseOf(first.body).id;

    const update = (changes: (claim: any) => void, identifier: string) => {
      const bundle = example('HomecareAuthorizationUpdateBundleExample');
      const claim = bundle.entry[0].resource;
      claim.identifier[0].value = identifier;
      // The Claim it updates, as the original request carried it.
      bundle.entry.find((entry: any) => entry.resource.id === 'HomecareAuthorizationExample').resource.identifier =
        original.entry[0].resource.identifier;
      changes(claim);
      return bundle;
    };
    // The package's update leaves item 1 as it was, cancels item 2 and adds item 3.
    const cancelTwoAddThree = await post(
      '$submit',
      update(() => {}, 'U-1'),
      { 'x-sandbox-prior-auth-outcome': 'denied' },
    );
    expect(cancelTwoAddThree.status).toBe(200);
    const afterUpdate = claimResponseOf(cancelTwoAddThree.body);
    expect(afterUpdate.id).toBe(authorization);
    expect(afterUpdate.item?.map((item) => item.itemSequence)).toEqual([1, 3]);
    expect(actions(cancelTwoAddThree.body)).toEqual(['A1', 'A3']);
    expect(fhirErrors(cancelTwoAddThree.body)).toEqual([]);

    const modifyOne = await post(
      '$submit',
      update((claim) => {
        claim.item = [claim.item[0]];
        claim.item[0].extension.push({ url: `${PAS}/extension-infoChanged`, valueCode: 'changed' });
      }, 'U-2'),
      { 'x-sandbox-prior-auth-outcome': 'modified' },
    );
    expect(actions(modifyOne.body)).toEqual(['A6', 'A3']);
    expect(fhirErrors(modifyOne.body)).toEqual([]);

    const cancelAll = await post(
      '$submit',
      update((claim) => {
        claim.extension = [
          ...(claim.extension ?? []),
          {
            url: `${PAS}/extension-certificationType`,
            valueCodeableConcept: { coding: [{ system: 'https://codesystem.x12.org/005010/1322', code: '3' }] },
          },
        ];
      }, 'U-3'),
    );
    expect(cancelAll.status).toBe(200);
    expect(claimResponseOf(cancelAll.body).disposition).toMatch(/^Cancelled/);
    expect(claimResponseOf(cancelAll.body).item).toBeUndefined();
    expect(fhirErrors(cancelAll.body)).toEqual([]);
  });

  it('answers nonconformant requests 400 with an OperationOutcome naming the element, never 5xx', async () => {
    const { post } = await tenant();
    const broken: [string, (bundle: any) => unknown, RegExp][] = [
      ['not a Bundle', () => ({ resourceType: 'Patient' }), /^Patient$/],
      ['missing Claim', (bundle) => ({ ...bundle, entry: bundle.entry.slice(1) }), /Bundle\.entry\[0\]\.resource/],
      [
        'wrong Bundle profile',
        (bundle) => ({ ...bundle, meta: { profile: [`${PAS}/profile-pas-inquiry-request-bundle`] } }),
        /Bundle\.meta\.profile/,
      ],
      [
        'wrong Claim profile',
        (bundle) => {
          bundle.entry[0].resource.meta.profile = ['http://example.org/other'];
          return bundle;
        },
        /entry\[0\]\.resource\.meta\.profile/,
      ],
      [
        'Claim without identifier',
        (bundle) => {
          delete bundle.entry[0].resource.identifier;
          return bundle;
        },
        /entry\[0\]\.resource\.identifier/,
      ],
      [
        'Claim use claim',
        (bundle) => {
          bundle.entry[0].resource.use = 'claim';
          return bundle;
        },
        /entry\[0\]\.resource\.use/,
      ],
      [
        'patient not in the Bundle',
        (bundle) => {
          bundle.entry[0].resource.patient = { reference: 'Patient/elsewhere' };
          return bundle;
        },
        /entry\[0\]\.resource\.patient/,
      ],
      [
        'coverage not in the Bundle',
        (bundle) => {
          bundle.entry[0].resource.insurance[0].coverage = { reference: 'Coverage/x' };
          return bundle;
        },
        /insurance\[0\]\.coverage/,
      ],
      [
        'item without category',
        (bundle) => {
          delete bundle.entry[0].resource.item[0].category;
          return bundle;
        },
        /entry\[0\]\.resource\.item\[0\]\.category/,
      ],
      [
        'item without request type',
        (bundle) => {
          bundle.entry[0].resource.item[0].extension.shift();
          return bundle;
        },
        /item\[0\]\.extension\.where/,
      ],
      [
        'Bundle without identifier',
        (bundle) => {
          delete bundle.identifier;
          return bundle;
        },
        /Bundle/,
      ],
      [
        'Bundle without timestamp',
        (bundle) => {
          delete bundle.timestamp;
          return bundle;
        },
        /Bundle/,
      ],
      [
        'entry without fullUrl',
        (bundle) => {
          delete bundle.entry[1].fullUrl;
          return bundle;
        },
        /Bundle\.entry\[1\]/,
      ],
      ['Parameters without resource', () => ({ resourceType: 'Parameters', parameter: [] }), /Parameters\.parameter/],
      ['a string', () => '"text"', /^$/],
    ];
    for (const [what, breakIt, expression] of broken) {
      const answer = await post('$submit', breakIt(request()));
      expect(answer.status, what).toBe(400);
      const outcome = answer.body as OperationOutcome;
      expect(outcome.resourceType, what).toBe('OperationOutcome');
      expect(
        outcome.issue.some((issue) => expression.test(issue.expression?.[0] ?? '')),
        `${what}: ${JSON.stringify(outcome.issue)}`,
      ).toBe(true);
      expect(fhirErrors(outcome)).toEqual([]);
    }
  });

  it('never lets another organization inquire or update, and refuses a token without the Claim scope', async () => {
    const owner = await tenant();
    const submitted = request();
    expect((await owner.post('$submit', submitted)).status).toBe(200);
    const other = await tenant();
    const inquiry = await other.post('$inquire', inquiryFor(submitted));
    expect(inquiry.status).toBe(200);
    expect(inquiry.body).toEqual({ resourceType: 'Parameters' });
    const update = example('HomecareAuthorizationUpdateBundleExample');
    update.entry.find((entry: any) => entry.resource.id === 'HomecareAuthorizationExample').resource.identifier =
      submitted.entry[0].resource.identifier;
    const refused = await other.post('$submit', update);
    expect(refused.status).toBe(400);
    expect(refused.body.issue[0].code).toBe('not-found');

    const reader = await tenant('system/*.rs');
    const forbidden = await reader.post('$submit', request());
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('www-authenticate')).toContain('insufficient_scope');
    expect((await service.call('/fhir/R4/Claim/$submit', { method: 'POST', body: request() })).status).toBe(401);
  });

  it("takes a user-level token of a provider's app (EHR launch, user/Claim.c) for its organization; refuses a patient-level token and a user token without Claim create", async () => {
    const owner = await tenant();
    // A practitioner opens the organization's app from the EHR: the app asks for user-level scopes its registration names.
    const { tokens } = await userTokens(service, 'launch openid fhirUser user/Claim.c', { key: owner.apiKey, patient: 'syn-pat-0001' });
    expect(tokens.scope).toBe('launch openid fhirUser user/Claim.c');
    expect(decodeJwt(tokens.access_token).fhirUser).toMatch(/\/fhir\/R4\/Practitioner\/[^/]+$/);
    const user = poster(tokens.access_token);
    const submitted = request();
    const approved = await user('$submit', submitted, { 'x-sandbox-prior-auth-outcome': 'approved' });
    expect(approved.status).toBe(200);
    expect(actions(approved.body)).toEqual(['A1']);
    expect(fhirErrors(approved.body)).toEqual([]);
    const inquired = await user('$inquire', inquiryFor(submitted));
    expect(inquired.status).toBe(200);
    expect(actions(inquired.body)).toEqual(['A1']);
    // It acted for its client's organization: the organization's system token finds it, another organization's does not.
    expect(actions((await owner.post('$inquire', inquiryFor(submitted))).body)).toEqual(['A1']);
    expect((await (await tenant()).post('$inquire', inquiryFor(submitted))).body).toEqual({ resourceType: 'Parameters' });

    const patientLevel = await standaloneTokens(service, 'syn-pat-0001', 'launch/patient patient/*.rs');
    const refused = await poster(patientLevel.tokens.access_token)('$submit', request());
    expect(refused.status).toBe(403);
    expect(refused.body.issue[0].diagnostics).toContain('patient-level token');
    expect(refused.headers.get('www-authenticate')).toContain('insufficient_scope');
    expect((await poster(patientLevel.tokens.access_token)('$inquire', inquiryFor(submitted))).status).toBe(403);

    const withoutClaim = await userTokens(service, 'user/*.rs user/Subscription.crds', { key: owner.apiKey });
    expect(withoutClaim.tokens.scope).toBe('user/*.rs user/Subscription.crds');
    const noScope = await poster(withoutClaim.tokens.access_token)('$submit', request());
    expect(noScope.status).toBe(403);
    expect(noScope.body.issue[0].diagnostics).toContain('user/Claim.c');
  });

  it('lists both operations with their canonicals in the CapabilityStatement', async () => {
    const metadata = await service.call('/fhir/R4/metadata');
    const claim = metadata.body.rest[0].resource.find((resource: any) => resource.type === 'Claim');
    expect(claim.operation.map((operation: any) => operation.definition)).toEqual([
      'http://hl7.org/fhir/us/davinci-pas/OperationDefinition/Claim-submit',
      'http://hl7.org/fhir/us/davinci-pas/OperationDefinition/Claim-inquiry',
    ]);
    expect(fhirErrors(metadata.body)).toEqual([]);
  });
});
