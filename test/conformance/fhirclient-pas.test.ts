import type { Bundle, ClaimResponse } from 'fhir/r4';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fhirErrors, pasExamples } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';
import { browse, registerSmartClient } from '../support/smart';
import { type FhirClient, type SmartApp, startSmartApp } from '../support/smart-app';

/**
 * A provider's SMART app as partners write it (the official `fhirclient` package, unchanged): opened
 * from the EHR, it takes a user-level token and calls Da Vinci PAS `$submit` and `$inquire` with the
 * client's own `request`, the way it will call a payer in production.
 */
let service: TestService;
let app: SmartApp;
let examples: Record<string, any>[];
beforeAll(async () => {
  service = await startTestService();
  examples = await pasExamples();
});
afterAll(() => service.stop());
afterEach(() => app?.stop());

const example = (id: string): any => structuredClone(examples.find((resource) => resource.id === id)!);
const FHIR_JSON = { 'Content-Type': 'application/fhir+json' };

describe('the fhirclient package, unchanged, calling Da Vinci PAS', () => {
  it("submits a prior authorization with a practitioner's user-level token (EHR launch) and inquires about it", async () => {
    const tenant = await service.newTenant();
    app = await startSmartApp();
    const scope = 'launch openid fhirUser user/Claim.c';
    const client = await registerSmartClient(service, tenant.key, {
      redirect_uris: [app.redirectUri],
      launch_uri: app.launchUri,
      token_endpoint_auth_method: 'client_secret_basic',
      scope,
    });
    const submitted = example('ReferralAuthorizationBundleExample');
    submitted.entry[0].resource.identifier[0].value = `FC-${Math.random().toString(36).slice(2)}`;
    const inquiry = example('PASClaimInquiryBundleExample');
    inquiry.entry[0].resource.identifier = submitted.entry[0].resource.identifier.slice(0, 1);
    app.configure({
      clientId: client.client_id,
      clientSecret: client.client_secret!,
      scope,
      work: async (fhir: FhirClient) => ({
        submitted: await fhir.request({
          url: 'Claim/$submit',
          method: 'POST',
          body: JSON.stringify(submitted),
          headers: { ...FHIR_JSON, 'X-Sandbox-Prior-Auth-Outcome': 'approved' },
        }),
        inquired: await fhir.request({ url: 'Claim/$inquire', method: 'POST', body: JSON.stringify(inquiry), headers: FHIR_JSON }),
      }),
    });

    const launch = await service.call('/v1/smart/launch', {
      key: tenant.key,
      method: 'POST',
      body: { client_id: client.client_id, patient: 'syn-pat-0001' },
    });
    expect(launch.status).toBe(201);
    const page = await browse(launch.body.launch_url);
    const report = (await page.json()) as { result: { submitted: Bundle; inquired: Bundle }; tokenResponse: Record<string, unknown>; error?: string };
    expect(page.status, report.error).toBe(200);

    expect(report.tokenResponse).toMatchObject({ token_type: 'Bearer', scope });
    expect(decodeJwt(report.tokenResponse.id_token as string).fhirUser).toMatch(new RegExp(`^${service.baseUrl}/fhir/R4/Practitioner/`));
    const { submitted: answer, inquired } = report.result;
    for (const bundle of [answer, inquired]) {
      expect(bundle.resourceType).toBe('Bundle');
      expect(fhirErrors(bundle)).toEqual([]);
      const claimResponse = bundle.entry![0]!.resource as ClaimResponse;
      expect(claimResponse).toMatchObject({ resourceType: 'ClaimResponse', outcome: 'complete' });
      expect(claimResponse.preAuthRef).toMatch(/^PA-/);
    }
    // The inquiry found the authorization the submission made.
    const submittedRef = (answer.entry![0]!.resource as ClaimResponse).preAuthRef;
    expect((inquired.entry![0]!.resource as ClaimResponse).preAuthRef).toBe(submittedRef);
  });
});
