import { createHash, randomBytes } from 'node:crypto';
import type { TestService } from './service';

/** SMART helpers for tests: registration, PKCE, a raw authorization request, and a browser's redirects. */

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
}

export async function registerSmartClient(service: TestService, key: string, metadata: Record<string, unknown> = {}): Promise<RegisteredClient> {
  const response = await service.call('/v1/smart/clients', {
    key,
    method: 'POST',
    body: { client_name: 'Test app (synthetic)', redirect_uris: ['http://127.0.0.1:9/callback'], token_endpoint_auth_method: 'none', ...metadata },
  });
  if (response.status !== 201) throw new Error(`client registration failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as RegisteredClient;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(48).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface RawAuthorization {
  status: number;
  location: URL | null;
  body: string;
}

/** One GET to the authorization endpoint, redirects not followed. */
export async function requestAuthorization(service: TestService, params: Record<string, string>): Promise<RawAuthorization> {
  const response = await fetch(`${service.baseUrl}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
  const location = response.headers.get('location');
  return { status: response.status, location: location ? new URL(location, service.baseUrl) : null, body: await response.text() };
}

/** The parameters of a valid standalone request for a client with one redirect URI. */
export function authorizationParams(
  service: TestService,
  client: RegisteredClient,
  challenge: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0]!,
    scope: 'launch/patient patient/*.rs openid fhirUser offline_access',
    state: randomBytes(12).toString('base64url'),
    aud: `${service.baseUrl}/fhir/R4`,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
}

/**
 * A standalone authorization through the patient picker, as a browser submits its form: answers
 * the code (and state) the client's redirect URI receives.
 */
export async function authorizeWithPicker(
  service: TestService,
  params: Record<string, string>,
  patientId: string,
): Promise<{ code: string; state: string | null }> {
  const first = await requestAuthorization(service, params);
  if (first.status !== 302 || !first.location?.pathname.endsWith('/oauth/authorize/patient')) {
    throw new Error(`expected the patient picker, got ${first.status} ${first.location} ${first.body}`);
  }
  const form = await searchPicker(first.location, patientId);
  const chosen = await fetch(new URL(form.action, service.baseUrl), { method: 'POST', body: new URLSearchParams(form.fields), redirect: 'manual' });
  const location = new URL(chosen.headers.get('location') ?? '', service.baseUrl);
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code in ${location}`);
  return { code, state: location.searchParams.get('state') };
}

/** What a person does at the picker: types the patient's id in the search box, then picks the row. */
async function searchPicker(picker: URL, patientId: string): Promise<{ action: string; fields: Record<string, string> }> {
  const searched = new URL(picker);
  searched.searchParams.set('q', patientId);
  return pickerForm(await (await fetch(searched)).text(), patientId);
}

/** The picker's form for one patient: its action and its (hidden) fields, read from the page's HTML. */
export function pickerForm(html: string, patientId: string): { action: string; fields: Record<string, string> } {
  for (const [, action, inner] of html.matchAll(/<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)) {
    const fields = Object.fromEntries(
      [...inner!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [name!, decodeHtml(value!)]),
    );
    if (fields.patient === patientId) return { action: action!, fields };
  }
  throw new Error(`the picker lists no patient ${patientId}`);
}

function decodeHtml(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

export async function postForm(service: TestService, path: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  return service.call(path, {
    method: 'POST',
    body: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

export function basicAuth(clientId: string, secret: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}` };
}

/**
 * A browser following redirects from `start` to the app's page, cookie-less as SMART launches
 * are; at the patient picker it submits the form for `patientId`. Answers the final response.
 */
export async function browse(start: string, patientId?: string): Promise<Response> {
  let url = new URL(start);
  let init: RequestInit = {};
  for (let hop = 0; hop < 20; hop += 1) {
    const response = await fetch(url, { ...init, redirect: 'manual' });
    init = {};
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url);
      continue;
    }
    if (url.pathname.endsWith('/oauth/authorize/patient') && response.status === 200 && patientId) {
      const form = await searchPicker(url, patientId);
      url = new URL(form.action, url);
      init = { method: 'POST', body: new URLSearchParams(form.fields) };
      continue;
    }
    return response;
  }
  throw new Error(`too many redirects from ${start}`);
}

export interface IssuedTokens {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
  scope: string;
  patient?: string;
}

/**
 * A public client of a new tenant that went through a standalone launch for `patientId` and
 * exchanged its code: the shortest way to a real token for a test.
 */
export async function standaloneTokens(
  service: TestService,
  patientId: string,
  scope: string,
): Promise<{ tokens: IssuedTokens; client: RegisteredClient; key: string }> {
  const tenant = await service.newTenant();
  const client = await registerSmartClient(service, tenant.key);
  const { verifier, challenge } = pkcePair();
  const { code } = await authorizeWithPicker(service, authorizationParams(service, client, challenge, { scope }), patientId);
  return { tokens: await exchangeCode(service, client, code, verifier), client, key: tenant.key };
}

/**
 * A provider-side app (a public client registered for `registered`, by default the scope it asks)
 * of `key`'s organization or a new tenant's, authorized for `scope` with user-level scopes: an EHR
 * launch for `patient` when one is given (the sandbox plays the EHR), else a standalone launch,
 * which has no patient to choose; then its code exchanged.
 */
export async function userTokens(
  service: TestService,
  scope: string,
  options: { registered?: string; key?: string; patient?: string } = {},
): Promise<{ tokens: IssuedTokens; client: RegisteredClient; key: string }> {
  const key = options.key ?? (await service.newTenant()).key;
  const client = await registerSmartClient(service, key, { scope: options.registered ?? scope });
  const extra: Record<string, string> = { scope };
  if (options.patient) {
    const launch = await service.call('/v1/smart/launch', { key, method: 'POST', body: { client_id: client.client_id, patient: options.patient } });
    if (launch.status !== 201) throw new Error(`EHR launch failed: ${launch.status} ${JSON.stringify(launch.body)}`);
    extra.launch = launch.body.launch;
  }
  const { verifier, challenge } = pkcePair();
  const authorization = await requestAuthorization(service, authorizationParams(service, client, challenge, extra));
  const code = authorization.location?.searchParams.get('code');
  if (authorization.status !== 302 || !code)
    throw new Error(`expected a code, got ${authorization.status} ${authorization.location} ${authorization.body}`);
  return { tokens: await exchangeCode(service, client, code, verifier), client, key };
}

async function exchangeCode(service: TestService, client: RegisteredClient, code: string, verifier: string): Promise<IssuedTokens> {
  const exchanged = await postForm(service, '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirect_uris[0]!,
    client_id: client.client_id,
    code_verifier: verifier,
  });
  if (exchanged.status !== 200) throw new Error(`token exchange failed: ${exchanged.status} ${JSON.stringify(exchanged.body)}`);
  return exchanged.body as IssuedTokens;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
