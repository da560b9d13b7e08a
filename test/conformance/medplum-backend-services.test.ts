import { randomUUID } from 'node:crypto';
import { MedplumClient } from '@medplum/core';
import type { Bundle, Observation, Patient } from 'fhir/r4';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newClientKey, registerBackendClient } from '../support/backend-services';
import { startTestService, type TestService } from '../support/service';

/**
 * Medplum's published client (`@medplum/core` MedplumClient), unchanged, as a partner's backend
 * service uses it: client_credentials with a private_key_jwt assertion (`startJwtAssertionLogin`, which
 * sends no scope: the client's registered one applies), FHIR reads and searches, and a Bulk Data export
 * (`bulkExport`, which kicks off with a POST and polls the status URL).
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

/** A backend client registered with `system/*.rs`, and a MedplumClient logged in with an assertion signed by its key. */
async function loggedInMedplum(): Promise<MedplumClient> {
  const tenant = await service.newTenant();
  const key = await newClientKey('RS384');
  const client = await registerBackendClient(service, tenant.key, { jwks: { keys: [key.publicJwk] }, scope: 'system/*.rs' });
  const tokenUrl = `${service.baseUrl}/oauth/token`;
  // Signed as the SMART Backend Services guide shows it; Medplum's client sends it as it is.
  const assertion = await new SignJWT({ jti: randomUUID() })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(client.client_id)
    .setSubject(client.client_id)
    .setAudience(tokenUrl)
    .setExpirationTime('5m')
    .sign(key.privateKey);
  const medplum = new MedplumClient({ baseUrl: `${service.baseUrl}/`, fhirUrlPath: 'fhir/R4', tokenUrl, fetch: globalThis.fetch });
  await medplum.startJwtAssertionLogin(assertion);
  expect(medplum.getAccessToken()).toEqual(expect.any(String));
  return medplum;
}

describe('@medplum/core MedplumClient, unchanged, against the sandbox', () => {
  it('gets a system token with a private_key_jwt assertion, then reads and searches the synthetic world', async () => {
    const medplum = await loggedInMedplum();
    const patient = await medplum.readResource('Patient', 'syn-pat-0001');
    expect(patient).toEqual(service.fhirStore.read('Patient', 'syn-pat-0001'));
    const bundle = (await medplum.search('Observation', { patient: 'syn-pat-0001', _count: '500' })) as Bundle<Observation>;
    const expected = service.fhirStore.listForPatient('Observation', 'syn-pat-0001').map((resource) => resource.id);
    expect(bundle.entry!.map((entry) => entry.resource!.id).sort()).toEqual([...expected].sort());
  });

  it('runs a Bulk Data export: kick-off, polling, the manifest, and every file it lists', async () => {
    const medplum = await loggedInMedplum();
    const manifest = await medplum.bulkExport('Patient', 'Patient,Condition', undefined, { pollStatusOnAccepted: true, pollStatusPeriod: 200 });
    expect(manifest).toMatchObject({ requiresAccessToken: true, error: [] });
    expect(new Set(manifest.output!.map((file: { type?: string }) => file.type))).toEqual(new Set(['Patient', 'Condition']));
    let lines = 0;
    for (const file of manifest.output!) {
      const text = await (await medplum.download(file.url!)).text();
      const resources = text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Patient);
      expect(resources.every((resource) => resource.resourceType === file.type)).toBe(true);
      lines += resources.length;
    }
    expect(lines).toBe(service.fhirStore.list('Patient').length + service.fhirStore.list('Condition').length);
  });
});
