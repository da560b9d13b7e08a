import { eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smartAuthorizations, smartTokens } from '../../drizzle/schema';
import { canEvaluate } from '../../fhir/search-parameters';
import { smartUrls } from '../../smart/endpoints';
import { createTokenService } from '../../smart/tokens';
import { startTestService, type TestService } from '../support/service';
import { authorizationParams, bearer, pkcePair, postForm, registerSmartClient, requestAuthorization, standaloneTokens } from '../support/smart';

/** SMART App Launch 2.x and RFC 6749 §6: a refresh keeps or narrows the grant, never widens it, and a refusal spends nothing. */

let service: TestService;
let patientId: string;
beforeAll(async () => {
  service = await startTestService();
  patientId = service.fhirStore.patients().find((patient) => service.fhirStore.listForPatient('Observation', patient.id!).length > 0)!.id!;
});
afterAll(() => service.stop());

const refresh = (clientId: string, refreshToken: string, scope?: string) =>
  postForm(service, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: clientId,
    ...(scope === undefined ? {} : { scope }),
  });

function expectInvalidScope(response: { status: number; body: any }, scope: string) {
  expect(response.status, scope).toBe(400);
  expect(response.body, scope).toEqual({ error: 'invalid_scope', error_description: expect.stringContaining('still valid') });
}

describe('refresh scope', () => {
  it('refuses every wider form with invalid_scope, and the refresh token still works afterwards', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/Observation.rs offline_access');
    expect(tokens.scope).toBe('launch/patient patient/Observation.rs offline_access');
    const wider = [
      'patient/Observation.write',
      'patient/Observation.cruds',
      'patient/Observation.*',
      'patient/Observation.crs',
      'patient/Observation.rsd',
      'patient/*.rs',
      'patient/*.read',
      'patient/*.*',
      'patient/Patient.rs',
      'user/Observation.rs',
      'system/Observation.read',
      'patient/Observation.rs openid',
      'patient/Observation.rs fhirUser',
    ];
    for (const scope of wider) expectInvalidScope(await refresh(client.client_id, tokens.refresh_token!, scope), scope);

    // The access token of the grant still works, and the refresh token is still unspent.
    expect((await service.call(`/fhir/R4/Observation?patient=${patientId}`, { headers: bearer(tokens.access_token) })).status).toBe(200);
    const kept = await refresh(client.client_id, tokens.refresh_token!);
    expect(kept.status).toBe(200);
    expect(kept.body.scope).toBe(tokens.scope);
  });

  it('refuses widening a filtered grant, and accepts the same or a narrower filter in v1 or v2 syntax', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/Observation.rs?category=laboratory offline_access');
    expect(tokens.scope).toContain('patient/Observation.rs?category=laboratory');
    for (const scope of [
      'patient/Observation.rs',
      'patient/Observation.read',
      'patient/Observation.rs?category=vital-signs',
      'patient/Observation.cruds?category=laboratory',
    ]) {
      expectInvalidScope(await refresh(client.client_id, tokens.refresh_token!, scope), scope);
    }
    const narrowed = await refresh(client.client_id, tokens.refresh_token!, 'patient/Observation.r?category=laboratory offline_access');
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scope).toBe('patient/Observation.r?category=laboratory offline_access');
  });

  it('narrows a v1 grant in v2 syntax and the reverse', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/Observation.read offline_access');
    const v2 = await refresh(client.client_id, tokens.refresh_token!, 'patient/Observation.rs offline_access');
    expect(v2.status).toBe(200);
    const v1 = await refresh(client.client_id, v2.body.refresh_token, 'patient/Observation.read offline_access');
    expect(v1.status).toBe(200);
    expect(v1.body.scope).toBe('patient/Observation.read offline_access');
  });

  it('refuses a filter it cannot evaluate at refresh, and serves one it can', async () => {
    const { tokens, client } = await standaloneTokens(service, patientId, 'launch/patient patient/Observation.rs offline_access');
    for (const scope of ['patient/Observation.rs?foo=bar', 'patient/Observation.rs?date=garbage', 'patient/Observation.rs?category=']) {
      expectInvalidScope(await refresh(client.client_id, tokens.refresh_token!, scope), scope);
    }
    const filtered = await refresh(client.client_id, tokens.refresh_token!, 'patient/Observation.rs?category=laboratory');
    expect(filtered.status).toBe(200);
    const search = await service.call(`/fhir/R4/Observation?patient=${patientId}`, { headers: bearer(filtered.body.access_token) });
    expect(search.status).toBe(200);
    for (const entry of search.body.entry ?? []) {
      expect(JSON.stringify(entry.resource.category)).toContain('laboratory');
    }
  });

  it('refuses a filter it cannot evaluate at authorization, with the state', async () => {
    const tenant = await service.newTenant();
    const client = await registerSmartClient(service, tenant.key);
    for (const scope of [
      'launch/patient patient/Observation.rs?foo=bar',
      'patient/Observation.rs?date=garbage',
      'patient/*.rs?category=laboratory',
    ]) {
      const params = authorizationParams(service, client, pkcePair().challenge, { scope });
      const answer = await requestAuthorization(service, params);
      expect(answer.status, scope).toBe(302);
      expect(answer.location?.searchParams.get('error'), scope).toBe('invalid_scope');
      expect(answer.location?.searchParams.get('state'), scope).toBe(params.state);
    }
  });

  it('answers no 500 from any FHIR read for a token whose filter cannot be evaluated (granted before the rule)', async () => {
    const { tokens } = await standaloneTokens(service, patientId, 'launch/patient patient/*.rs');
    const { db } = service.database;
    const [row] = await db
      .select()
      .from(smartTokens)
      .where(eq(smartTokens.id, decodeJwt(tokens.access_token).jti!));
    const [authorization] = await db.select().from(smartAuthorizations).where(eq(smartAuthorizations.id, row!.authorizationId));
    const issuer = createTokenService({
      db,
      lifetimes: service.config,
      urls: smartUrls(service.config.PUBLIC_BASE_URL),
      listen: service.database.listen,
      canFilter: canEvaluate,
    });
    const planted = await issuer.signAccessToken(
      authorization!,
      'patient/Observation.rs?foo=bar patient/Condition.rs?onset-date=garbage patient/Patient.rs?x=1',
    );
    const observation = service.fhirStore.listForPatient('Observation', patientId)[0]!;
    for (const path of [
      `Observation?patient=${patientId}`,
      `Observation/${observation.id}`,
      `Condition?patient=${patientId}`,
      `Patient/${patientId}`,
      `Patient?_id=${patientId}`,
    ]) {
      const response = await service.call(`/fhir/R4/${path}`, { headers: bearer(planted.token) });
      expect(response.status, path).toBeLessThan(500);
      if (response.status === 200 && response.body.resourceType === 'Bundle') expect(response.body.entry ?? [], path).toEqual([]);
    }
  });
});
