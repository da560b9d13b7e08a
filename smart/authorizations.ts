import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { and, eq, isNull, lt } from 'drizzle-orm';
import type { Patient } from 'fhir/r4';
import { type SmartAuthorization, type SmartClient, smartAuthorizations } from '../drizzle/schema';
import { ORGANIZATION_RESOURCE_PERMISSIONS } from '../fhir/organization-resources';
import type { FhirStore } from '../fixtures/store';
import type { Config } from '../platform/config';
import type { Database } from '../platform/database';
import { excerpt, trimTrailing } from '../platform/text';
import { findClient } from './clients';
import type { SmartUrls } from './endpoints';
import { consumeLaunch } from './launches';
import { OAuthError } from './oauth-error';
import { digest, newOpaqueToken } from './opaque-token';
import { grantableScopes, grantContext, needsPatientChoice, splitScope, systemScope, unevaluableFilters, withLaunchContext } from './scopes';
import type { TokenResponse } from './token-response';

/** What the authorization endpoint answers: an error page, a redirect to the client, or the patient picker. */
export type AuthorizeOutcome =
  | { kind: 'error_page'; title: string; detail: string }
  | { kind: 'redirect'; location: string }
  | { kind: 'patient_picker'; requestId: string };

/** What the flow asks of the token service (smart/tokens.ts, which records its grants through this module). */
export interface TokenIssuer {
  issue(authorization: SmartAuthorization, scope: string): Promise<TokenResponse>;
  issueSystem(client: SmartClient, scope: string): Promise<TokenResponse>;
  revokeAuthorization(authorizationId: string): Promise<void>;
}

export interface AuthorizationDeps {
  db: Database;
  config: Pick<Config, 'SMART_AUTHORIZATION_CODE_SECONDS' | 'SMART_LAUNCH_SECONDS'>;
  urls: SmartUrls;
  fhirStore: FhirStore;
  tokens: TokenIssuer;
  /** Whether a granular scope filter can be evaluated for a type (FHIR search parameters it knows). */
  canFilter(resourceType: string, filter: [string, string][]): boolean;
}

/** A picker request that is unknown, expired or already answered: nothing can be redirected. */
export const EXPIRED_REQUEST = errorPage(
  'Authorization request expired',
  'This authorization request is unknown or has expired. Start the launch again from the app.',
);

const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const PKCE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** The authorization endpoint (RFC 6749 §4.1.1 with SMART App Launch and RFC 7636 rules). */
export function createAuthorizationFlow(deps: AuthorizationDeps) {
  const { db, config, urls, fhirStore, tokens } = deps;

  async function authorize(params: URLSearchParams): Promise<AuthorizeOutcome> {
    // Until the client and its redirect URI are established, nothing may be redirected (RFC 6749 §4.1.2.1).
    const duplicated = [...new Set([...params.keys()].filter((name, index, all) => all.indexOf(name) !== index))];
    const clientId = params.get('client_id');
    if (!clientId)
      return errorPage(
        'Missing client_id',
        'The authorization request has no client_id. Register the app with POST /v1/smart/clients and send its client_id.',
      );
    if (duplicated.includes('client_id') || duplicated.includes('redirect_uri')) {
      return errorPage('Repeated parameter', 'client_id and redirect_uri must each appear once in the authorization request.');
    }
    const client = await findClient(db, clientId);
    if (!client) return errorPage('Unknown client', `No SMART client ${excerpt(clientId)} is registered with this sandbox.`);
    const redirectUri = params.get('redirect_uri');
    if (!redirectUri)
      return errorPage('Missing redirect_uri', `The authorization request has no redirect_uri. Send one of the URIs registered for ${client.name}.`);
    if (!client.redirectUris.includes(redirectUri)) {
      return errorPage(
        'Unregistered redirect_uri',
        `${excerpt(redirectUri)} is not registered for ${client.name}. The redirect_uri must match a registered URI exactly; registered: ${client.redirectUris.join(', ')}.`,
      );
    }

    const state = params.get('state');
    const fail = (error: OAuthError['error'], description: string): AuthorizeOutcome => ({
      kind: 'redirect',
      location: withParams(redirectUri, { error, error_description: description, ...(state ? { state } : {}) }),
    });
    if (duplicated.length > 0) return fail('invalid_request', `Parameters must not repeat: ${excerpt(duplicated.join(', '))}.`);
    const responseType = params.get('response_type');
    if (!responseType) return fail('invalid_request', 'response_type is required; use response_type=code.');
    if (responseType !== 'code') return fail('unsupported_response_type', 'Only the authorization code flow is supported: response_type=code.');
    if (!state) return fail('invalid_request', 'state is required (SMART App Launch): send an unguessable value and check it on return.');
    const aud = params.get('aud');
    if (!aud) return fail('invalid_request', `aud is required and must be the FHIR base URL, ${urls.fhirBase}.`);
    if (trimTrailing(aud, '/') !== urls.fhirBase)
      return fail('invalid_request', `aud must be this sandbox's FHIR base URL, ${urls.fhirBase} (got ${excerpt(aud)}).`);
    const challenge = params.get('code_challenge');
    const method = params.get('code_challenge_method');
    if (!challenge) return fail('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.');
    if (method !== 'S256')
      return fail(
        'invalid_request',
        `Only code_challenge_method=S256 is accepted${method ? ` (got ${excerpt(method)})` : '; plain is the default when it is omitted, and plain is refused'}.`,
      );
    if (!PKCE_CHALLENGE.test(challenge))
      return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the code_verifier: 43 characters, no padding.');

    const unevaluable = unevaluableFilters(params.get('scope') ?? '', deps.canFilter);
    if (unevaluable.length > 0) {
      return fail(
        'invalid_scope',
        `This FHIR endpoint cannot evaluate the filter of ${excerpt(unevaluable.join(', '))}: granular scopes may use the search parameters listed for their type in /fhir/R4/metadata, with readable values.`,
      );
    }
    const launch = params.get('launch');
    const launchKind = launch ? 'ehr' : 'standalone';
    const scopes = grantableScopes(params.get('scope') ?? '', {
      resourceTypes: fhirStore.supportedTypes,
      canFilter: deps.canFilter,
      registered: client.scope,
      launchKind,
      organizationTypes: ORGANIZATION_RESOURCE_PERMISSIONS,
    });
    if (scopes.length === 0) {
      return fail(
        'invalid_scope',
        `None of the requested scopes (${excerpt(params.get('scope') || 'none')}) can be granted. Ask for patient-level read scopes such as patient/*.rs, launch/patient, openid fhirUser, offline_access; or, for a client whose registered scope names them, user-level scopes such as user/Claim.c, user/Subscription.crds, user/*.rs.`,
      );
    }
    const request = {
      clientId: client.id,
      redirectUri,
      state,
      codeChallenge: challenge,
      nonce: params.get('nonce'),
    };

    if (launch) {
      if (!scopes.includes('launch')) return fail('invalid_scope', 'An EHR launch (with a launch parameter) must ask for the launch scope.');
      const context = await consumeLaunch(db, launch, client.id);
      if (!context)
        return fail(
          'invalid_request',
          'The launch parameter is unknown, expired, already used, or belongs to another client. Start a new launch with POST /v1/smart/launch.',
        );
      const granted = withLaunchContext(scopes, context);
      const fhirUser = granted.includes('fhirUser') ? practitionerUser(context.patientId) : null;
      return issueCode(client, { ...request, launchKind, scope: finalScope(granted, fhirUser), ...context, fhirUser });
    }
    if (needsPatientChoice(scopes)) {
      const requestId = newRequestId();
      await removeStale(client.id);
      await db.insert(smartAuthorizations).values({
        id: requestId,
        ...request,
        launchKind,
        scope: scopes.join(' '),
        expiresAt: secondsFromNow(config.SMART_LAUNCH_SECONDS),
      });
      return { kind: 'patient_picker', requestId };
    }
    // No patient to choose: a user-level grant, whose user (fhirUser) is a synthetic practitioner, or one without patient data.
    const fhirUser = scopes.includes('fhirUser') ? practitionerUser(null) : null;
    return issueCode(client, { ...request, launchKind, scope: finalScope(scopes, fhirUser), patientId: null, encounterId: null, fhirUser });
  }

  /** A standalone request waiting at the patient picker, while it is still valid. */
  async function pendingAuthorization(requestId: string): Promise<SmartAuthorization | null> {
    if (!REQUEST_ID.test(requestId)) return null;
    const [authorization] = await db
      .select()
      .from(smartAuthorizations)
      .where(and(eq(smartAuthorizations.id, requestId), isNull(smartAuthorizations.codeHash), isNull(smartAuthorizations.revokedAt)));
    return authorization && authorization.expiresAt > new Date() ? authorization : null;
  }

  /** The pending request with its client, for the picker page. */
  async function pendingRequest(requestId: string): Promise<{ authorization: SmartAuthorization; client: SmartClient } | null> {
    const authorization = await pendingAuthorization(requestId);
    const client = authorization && (await findClient(db, authorization.clientId));
    return authorization && client ? { authorization, client } : null;
  }

  /** The person at the picker chose a patient (or declined): the code, or access_denied, goes to the client. */
  async function completePatientChoice(requestId: string, choice: { patientId: string } | 'deny'): Promise<AuthorizeOutcome> {
    const authorization = await pendingAuthorization(requestId);
    if (!authorization) return EXPIRED_REQUEST;
    if (choice === 'deny') {
      await db.update(smartAuthorizations).set({ revokedAt: new Date() }).where(eq(smartAuthorizations.id, requestId));
      return {
        kind: 'redirect',
        location: withParams(authorization.redirectUri, {
          error: 'access_denied',
          error_description: 'No patient was chosen.',
          state: authorization.state,
        }),
      };
    }
    if (!fhirStore.read('Patient', choice.patientId))
      return errorPage('Unknown patient', `No synthetic patient ${excerpt(choice.patientId)} exists. Go back and choose one from the list.`);
    const granted = withLaunchContext(authorization.scope.split(' '), { patientId: choice.patientId, encounterId: null });
    // A patient-level grant's user is the patient chosen; a user-level one's, a practitioner of theirs.
    const user = grantContext('app', granted) === 'user' ? practitionerUser(choice.patientId) : `Patient/${choice.patientId}`;
    const fhirUser = granted.includes('fhirUser') ? user : null;
    const code = newOpaqueToken();
    const [updated] = await db
      .update(smartAuthorizations)
      .set({
        patientId: choice.patientId,
        fhirUser,
        scope: finalScope(granted, fhirUser),
        codeHash: digest(code),
        expiresAt: secondsFromNow(config.SMART_AUTHORIZATION_CODE_SECONDS),
      })
      .where(and(eq(smartAuthorizations.id, requestId), isNull(smartAuthorizations.codeHash)))
      .returning();
    if (!updated) return errorPage('Already answered', 'This authorization request has already been answered. Start the launch again from the app.');
    return { kind: 'redirect', location: withParams(authorization.redirectUri, { code, state: authorization.state }) };
  }

  async function issueCode(
    client: SmartClient,
    values: Omit<typeof smartAuthorizations.$inferInsert, 'id' | 'codeHash' | 'expiresAt'>,
  ): Promise<AuthorizeOutcome> {
    const code = newOpaqueToken();
    await removeStale(client.id);
    await db.insert(smartAuthorizations).values({
      ...values,
      id: newRequestId(),
      codeHash: digest(code),
      expiresAt: secondsFromNow(config.SMART_AUTHORIZATION_CODE_SECONDS),
    });
    return { kind: 'redirect', location: withParams(values.redirectUri, { code, state: values.state }) };
  }

  /**
   * The authorization_code grant: the code is spent on the first attempt, whatever its outcome;
   * a second use revokes what the first produced (RFC 6749 §4.1.2).
   */
  async function exchangeCode(client: SmartClient, form: { code?: string; redirectUri?: string; codeVerifier?: string }): Promise<TokenResponse> {
    if (!form.code) throw new OAuthError('invalid_request', 'code is required.');
    if (!form.redirectUri) throw new OAuthError('invalid_request', 'redirect_uri is required: the same one sent to the authorization endpoint.');
    if (!form.codeVerifier) throw new OAuthError('invalid_request', 'code_verifier is required: PKCE (S256) is mandatory here.');
    const codeHash = digest(form.code);
    const [authorization] = await db
      .update(smartAuthorizations)
      .set({ exchangedAt: new Date() })
      .where(and(eq(smartAuthorizations.codeHash, codeHash), isNull(smartAuthorizations.exchangedAt), isNull(smartAuthorizations.revokedAt)))
      .returning();
    if (!authorization) {
      const [used] = await db.select({ id: smartAuthorizations.id }).from(smartAuthorizations).where(eq(smartAuthorizations.codeHash, codeHash));
      if (used) {
        await tokens.revokeAuthorization(used.id);
        throw new OAuthError('invalid_grant', 'The authorization code has already been used; the tokens issued for it are now revoked.');
      }
      throw new OAuthError('invalid_grant', 'The authorization code is unknown.');
    }
    if (authorization.expiresAt <= authorization.exchangedAt!)
      throw new OAuthError('invalid_grant', 'The authorization code has expired; exchange it as soon as the redirect arrives.');
    if (authorization.clientId !== client.id) throw new OAuthError('invalid_grant', 'The authorization code was issued to another client.');
    if (authorization.redirectUri !== form.redirectUri)
      throw new OAuthError('invalid_grant', 'redirect_uri differs from the one sent to the authorization endpoint.');
    if (!PKCE_VERIFIER.test(form.codeVerifier) || pkceChallenge(form.codeVerifier) !== authorization.codeChallenge) {
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge (S256).');
    }
    return tokens.issue(authorization, authorization.scope);
  }

  /**
   * The client_credentials grant (SMART Backend Services), for a client its assertion authenticated:
   * the system scopes asked for, all of them, or a refusal naming the one that cannot be granted.
   */
  async function grantSystem(client: SmartClient, requested: string | undefined): Promise<TokenResponse> {
    // RFC 6749 §3.3: an omitted scope may take a default. Here it is the scope the client registered
    // (clients such as Medplum's send none with an assertion).
    const scope = splitScope(requested).length > 0 ? requested! : (client.scope ?? '');
    if (splitScope(scope).length === 0) {
      throw new OAuthError(
        'invalid_scope',
        'scope is required (or registered with the client): the system scopes the client needs, e.g. system/Patient.rs system/Observation.rs.',
      );
    }
    const granted = systemScope(scope, {
      resourceTypes: fhirStore.supportedTypes,
      canFilter: deps.canFilter,
      registered: client.scope,
      organizationTypes: ORGANIZATION_RESOURCE_PERMISSIONS,
    });
    if ('refused' in granted) throw new OAuthError('invalid_scope', `${excerpt(granted.refused)} cannot be granted: ${granted.reason}.`);
    return tokens.issueSystem(client, granted.scope);
  }

  /** Requests nobody finished and codes nobody exchanged, once expired, are of no further use. */
  async function removeStale(clientId: string): Promise<void> {
    await db
      .delete(smartAuthorizations)
      .where(and(eq(smartAuthorizations.clientId, clientId), isNull(smartAuthorizations.exchangedAt), lt(smartAuthorizations.expiresAt, new Date())));
  }

  /**
   * The user of an EHR launch or of a user-level grant: the general practitioner of the patient in
   * context when the world has one, else the world's first synthetic practitioner; null when there
   * is none (then fhirUser is not granted).
   */
  function practitionerUser(patientId: string | null): string | null {
    if (!fhirStore.supportedTypes.includes('Practitioner')) return null;
    const patient = patientId === null ? undefined : (fhirStore.read('Patient', patientId) as Patient | undefined);
    const reference = patient?.generalPractitioner?.map((entry) => entry.reference).find((value) => value?.startsWith('Practitioner/'));
    if (reference && fhirStore.read('Practitioner', reference.slice('Practitioner/'.length))) return reference;
    const first = fhirStore.list('Practitioner')[0];
    return first?.id ? `Practitioner/${first.id}` : null;
  }

  return { authorize, pendingRequest, completePatientChoice, exchangeCode, grantSystem };
}

export type AuthorizationFlow = ReturnType<typeof createAuthorizationFlow>;

function finalScope(granted: string[], fhirUser: string | null): string {
  return granted.filter((scope) => scope !== 'fhirUser' || fhirUser !== null).join(' ');
}

function errorPage(title: string, detail: string): AuthorizeOutcome {
  return { kind: 'error_page', title, detail };
}

function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** Ids of authorization requests double as the picker's handle on one, so they are unguessable. */
const REQUEST_ID_BYTES = 24;
/** The form newRequestId gives, checked before a lookup so that no other value reaches the database. */
const REQUEST_ID = new RegExp(`^[A-Za-z0-9_-]{${Math.ceil((REQUEST_ID_BYTES * 4) / 3)}}$`);

function newRequestId(): string {
  return randomBytes(REQUEST_ID_BYTES).toString('base64url');
}

function secondsFromNow(seconds: number): Date {
  return new Date(Date.now() + seconds * 1000);
}

/** Adds parameters to a registered redirect URI, keeping its own query (RFC 6749 §3.1.2). */
function withParams(uri: string, params: Record<string, string>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

/**
 * The client_credentials grant's authorization row (SMART Backend Services): born granted, it expires
 * with its access token, so retention and the client's next authorization remove it as they remove a
 * code never exchanged.
 */
export async function recordSystemAuthorization(
  db: Database,
  grant: { clientId: string; scope: string; expiresAt: Date },
): Promise<SmartAuthorization> {
  const [authorization] = await db
    .insert(smartAuthorizations)
    .values({
      // Not of the picker's request id form, so no picker step can ever find it.
      id: `system_${randomUUID()}`,
      clientId: grant.clientId,
      launchKind: 'system',
      redirectUri: '',
      state: '',
      scope: grant.scope,
      codeChallenge: '',
      expiresAt: grant.expiresAt,
    })
    .returning();
  return authorization!;
}

/** Marks the authorization revoked (its tokens are the token service's to revoke). */
export async function revokeAuthorizationRecord(db: Database, authorizationId: string, at: Date): Promise<void> {
  await db.update(smartAuthorizations).set({ revokedAt: at }).where(eq(smartAuthorizations.id, authorizationId));
}
