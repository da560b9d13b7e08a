import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LISTED_ERRORS } from '../../api/http/problem';
import { startTestService, type TestService } from '../support/service';
import { postForm, registerSmartClient } from '../support/smart';

/**
 * Bounded cost for every input (BRIEF, Security): long inputs on open endpoints answer quickly.
 * The goal is well under 100 ms; on a loaded shared machine the assertion is a generous
 * bound that the quadratic expressions this replaced could not meet on a long input, and each
 * probe prints what it measured.
 */

const GENEROUS_BOUND_MS = 1_000;

let service: TestService;
let key: string;
let clientId: string;
beforeAll(async () => {
  service = await startTestService();
  const tenant = await service.newTenant();
  key = tenant.key;
  clientId = (await registerSmartClient(service, key)).client_id;
});
afterAll(() => service.stop());

async function timed<T>(name: string, probe: () => Promise<T>): Promise<T> {
  // One warm-up so the figure is the input's cost, not the first request's.
  await probe();
  const started = performance.now();
  const result = await probe();
  const elapsed = performance.now() - started;
  console.log(`bounded cost: ${name}: ${elapsed.toFixed(1)} ms`);
  expect(elapsed, name).toBeLessThan(GENEROUS_BOUND_MS);
  return result;
}

const slashes = (length: number) => `${'/'.repeat(length)}x`;

describe('long inputs on open endpoints', () => {
  it('answers a 64 KB aud of slashes on POST /oauth/authorize at once', async () => {
    const form = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: 'http://127.0.0.1:9/callback',
      state: 'state',
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'S256',
      scope: 'patient/*.rs',
    };
    // Slashes sent as they are (a form may), so the whole body stays within the 64 KiB the OAuth endpoints read.
    const withAud = (aud: string) => `${new URLSearchParams(form)}&aud=${aud}`;
    const post = async (body: string) => {
      const response = await fetch(`${service.baseUrl}/oauth/authorize`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        redirect: 'manual',
      });
      await response.arrayBuffer();
      return response;
    };
    const answer = await timed('POST /oauth/authorize, 64 KB aud of slashes', () => post(withAud(`${service.baseUrl}/fhir/R4${slashes(63 * 1024)}`)));
    expect(answer.status).toBe(303);
    const trailing = await timed('POST /oauth/authorize, 64 KB aud of trailing slashes', () =>
      post(withAud(`${service.baseUrl}/fhir/R4${'/'.repeat(63 * 1024)}`)),
    );
    expect(trailing.status).toBe(303);
    expect(new URL(trailing.headers.get('location')!, service.baseUrl).pathname).toBe('/oauth/authorize/patient');
  });

  it('answers long values on every other open endpoint at once', async () => {
    const long = 'a'.repeat(60 * 1024);
    const spaced = `a${' '.repeat(8 * 1024)}b`;
    const probes: [string, () => Promise<{ status: number }>][] = [
      ['GET /oauth/authorize, 12 KB aud', () => service.call(`/oauth/authorize?client_id=${clientId}&aud=${encodeURIComponent(slashes(12 * 1024))}`)],
      [
        'POST /oauth/token, 60 KB refresh_token and scope',
        () =>
          postForm(service, '/oauth/token', {
            grant_type: 'refresh_token',
            client_id: clientId,
            refresh_token: long,
            scope: `patient/${'A'.repeat(30_000)}.rs?${long.slice(0, 30_000)}`,
          }),
      ],
      [
        'POST /oauth/token, 60 KB code',
        () =>
          postForm(service, '/oauth/token', {
            grant_type: 'authorization_code',
            client_id: clientId,
            code: long,
            redirect_uri: 'x',
            code_verifier: long,
          }),
      ],
      ['POST /oauth/introspect, 60 KB token', () => postForm(service, '/oauth/introspect', { token: long }, { authorization: `Bearer ${key}` })],
      ['POST /oauth/revoke, Basic header of spaces', () => postForm(service, '/oauth/revoke', { token: 'x' }, { authorization: `Basic ${spaced}` })],
      [
        'GET /oauth/authorize/patient, long request and q',
        () => service.call(`/oauth/authorize/patient?request=${'a'.repeat(6000)}&q=${'a '.repeat(3000)}`),
      ],
      ['GET /fhir/R4/Patient, bearer of spaces', () => service.call('/fhir/R4/Patient', { headers: { authorization: `Bearer ${spaced}` } })],
      [
        'GET /fhir/R4/Patient, 12 KB bearer',
        () => service.call('/fhir/R4/Patient', { headers: { authorization: `Bearer ${'a'.repeat(12 * 1024)}` } }),
      ],
      ['GET /v1/connections, API key of spaces', () => service.call('/v1/connections', { headers: { authorization: `Bearer ${spaced}` } })],
      [
        'GET /v1/connections, 12 KB API key',
        () => service.call('/v1/connections', { headers: { authorization: `Bearer sk_sandbox_${'a'.repeat(12 * 1024)}` } }),
      ],
      ['GET /fhir/R4/metadata, long query', () => service.call(`/fhir/R4/metadata?_format=${'a'.repeat(12 * 1024)}`)],
    ];
    for (const [name, probe] of probes) {
      const answer = await timed(name, probe);
      expect(answer.status, name).toBeLessThan(500);
    }
  });

  it('answers a webhook URL whose host is a long run of dots at once', async () => {
    const answer = await timed('POST /v1/connections, 60 KB of dots in the host', () =>
      service.call('/v1/connections', { key, method: 'POST', body: { name: 'dots', webhook_url: `http://a${'.'.repeat(60 * 1024)}b/hook` } }),
    );
    expect(answer.status).toBeLessThan(500);
  });
});

describe('error lists', () => {
  it(`lists the first ${MAX_LISTED_ERRORS} invalid fields of a 422 and counts the rest`, async () => {
    const unknownFields = Object.fromEntries(Array.from({ length: 10_000 }, (_, index) => [`field_${index}`, 1]));
    const answer = await timed('POST /v1/smart/clients, 10,000 unknown fields', () =>
      service.call('/v1/smart/clients', {
        key,
        method: 'POST',
        body: { client_name: 'Many', redirect_uris: ['https://app.example/cb'], ...unknownFields },
      }),
    );
    expect(answer.status).toBe(422);
    expect(answer.body.errors).toHaveLength(MAX_LISTED_ERRORS);
    expect(answer.body.errors[0]).toEqual({ path: 'body.field_0', message: 'is not a field of this request' });
    expect(answer.body.errors_omitted).toBeGreaterThanOrEqual(10_000 - MAX_LISTED_ERRORS);
    expect(answer.body.detail).toContain('more');
    expect(JSON.stringify(answer.body).length).toBeLessThan(16 * 1024);
  });
});
