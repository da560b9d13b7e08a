import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service';
import { browse, registerSmartClient } from '../support/smart';
import { type AppReport, type SmartApp, startSmartApp } from '../support/smart-app';

let service: TestService;
let app: SmartApp;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());
afterEach(() => app?.stop());

/** A synthetic patient with more Observations than one page of three, so the app follows `next` links. */
function patientWithObservations(minimum: number): string {
  const patient = service.fhirStore.patients().find((candidate) => service.fhirStore.listForPatient('Observation', candidate.id!).length >= minimum);
  if (!patient) throw new Error(`the synthetic world has no patient with ${minimum} observations`);
  return patient.id!;
}

function expectReadsOf(report: AppReport, patientId: string) {
  expect(report.patientId).toBe(patientId);
  expect(report.patient).toMatchObject({ resourceType: 'Patient', id: patientId });
  const expected = service.fhirStore.listForPatient('Observation', patientId).map((resource) => resource.id);
  expect(report.observations.map((observation) => observation.id).sort()).toEqual([...expected].sort());
  for (const observation of report.observations) expect(observation.subject?.reference).toBe(`Patient/${patientId}`);
}

describe('the fhirclient package, unchanged, against the sandbox', () => {
  it('completes an EHR launch (confidential client, PKCE required) and reads the launch patient and their Observations', async () => {
    const tenant = await service.newTenant();
    app = await startSmartApp();
    const client = await registerSmartClient(service, tenant.key, {
      redirect_uris: [app.redirectUri],
      launch_uri: app.launchUri,
      token_endpoint_auth_method: 'client_secret_basic',
    });
    const scope = 'launch patient/Patient.rs patient/Observation.rs openid fhirUser';
    app.configure({ clientId: client.client_id, clientSecret: client.client_secret!, scope });
    const patientId = patientWithObservations(4);

    const launch = await service.call('/v1/smart/launch', {
      key: tenant.key,
      method: 'POST',
      body: { client_id: client.client_id, patient: patientId },
    });
    expect(launch.status).toBe(201);
    expect(launch.body.iss).toBe(`${service.baseUrl}/fhir/R4`);
    const launchUrl = new URL(launch.body.launch_url);
    expect(`${launchUrl.origin}${launchUrl.pathname}`).toBe(app.launchUri);
    expect(launchUrl.searchParams.get('launch')).toBe(launch.body.launch);
    expect(launchUrl.searchParams.get('iss')).toBe(launch.body.iss);

    const page = await browse(launch.body.launch_url);
    const report = (await page.json()) as AppReport & { error?: string };
    expect(page.status, report.error).toBe(200);
    expectReadsOf(report, patientId);
    expect(report.tokenResponse).toMatchObject({ token_type: 'Bearer', patient: patientId, need_patient_banner: false, scope });
    const idToken = decodeJwt(report.tokenResponse.id_token as string);
    expect(idToken).toMatchObject({ iss: service.baseUrl, aud: client.client_id });
    expect(idToken.fhirUser).toMatch(new RegExp(`^${service.baseUrl}/fhir/R4/Practitioner/`));
  });

  it('completes a standalone launch (public client) through the patient picker, submitted as a browser would', async () => {
    const tenant = await service.newTenant();
    app = await startSmartApp();
    const client = await registerSmartClient(service, tenant.key, { redirect_uris: [app.redirectUri], token_endpoint_auth_method: 'none' });
    app.configure({
      clientId: client.client_id,
      scope: 'launch/patient patient/*.read openid fhirUser offline_access',
      iss: `${service.baseUrl}/fhir/R4`,
    });
    const patientId = patientWithObservations(4);

    const page = await browse(app.launchUri, patientId);
    const report = (await page.json()) as AppReport & { error?: string };
    expect(page.status, report.error).toBe(200);
    expectReadsOf(report, patientId);
    expect(report.tokenResponse).toMatchObject({
      token_type: 'Bearer',
      patient: patientId,
      need_patient_banner: true,
      scope: 'launch/patient patient/*.read openid fhirUser offline_access',
      refresh_token: expect.any(String),
    });
    expect(decodeJwt(report.tokenResponse.id_token as string).fhirUser).toBe(`${service.baseUrl}/fhir/R4/Patient/${patientId}`);
  });
});
