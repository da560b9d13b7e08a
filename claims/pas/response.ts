import type { Bundle, BundleEntry, Claim, ClaimResponse, ClaimResponseItem, Reference } from 'fhir/r4';
import { concept, SYSTEM } from '../../fhir/terminology';
import { moreInformationRequest, PAS_PROFILE, reviewActionExtension } from '../prior-authorization';
import type { AuthorizationState } from './decision';
import { PAS_BUNDLE_PROFILE, PAS_CLAIM_INQUIRY_RESPONSE_PROFILE } from './request';

/**
 * The payer's answers as PAS 2.2.1 shapes them: a response Bundle (`$submit`) or an inquiry
 * response Bundle (`$inquire`) led by the ClaimResponse, every resource of the request echoed after
 * it (PAS: the response carries what the request did, so the provider's system can tie them up),
 * the X12 278 review action on each item (A1 certified with the authorization number and period,
 * A3 not certified with its reason, A4 pended, A6 modified), and, while pended, the payer's request
 * for more information as a contained CommunicationRequest.
 */

const PAS = 'http://hl7.org/fhir/us/davinci-pas/StructureDefinition';
const ITEM_PRE_AUTH_PERIOD = `${PAS}/extension-itemPreAuthPeriod`;
const ITEM_AUTHORIZED_DETAIL = `${PAS}/extension-itemAuthorizedDetail`;
/** X12 901 reject reason `T4`: a payer name or identifier is missing or invalid; the sandbox's `error` outcome answers with it. */
const X12_REJECT_REASON = 'https://codesystem.x12.org/005010/901';
export const RESPONSE_IDENTIFIER_SYSTEM = 'urn:sandbox:prior-authorization:response';

/** The FHIR id of an authorization's ClaimResponse (`pa_…` has an underscore, which FHIR ids cannot). */
export const claimResponseId = (authorizationId: string) => authorizationId.replace('_', '-');

export interface AnswerInput {
  authorizationId: string;
  /** The request this answer goes with (the submission, the latest claim update, or the inquiry). */
  request: Bundle;
  state: AuthorizationState;
  /** The Claim the authorization is about (for the ClaimResponse's header: identifier, patient, insurer, provider). */
  claim: Claim;
  /** When the payer decided (or pended) what this answer says. */
  decidedAt: string;
  /** Unique per answer: the response Bundle's identifier. */
  answerId: string;
}

function claimReference(request: Bundle, claim: Claim): Reference {
  const entry = request.entry?.find((candidate) => candidate.resource === claim);
  return claim.id ? { reference: `Claim/${claim.id}` } : { reference: entry?.fullUrl ?? 'Claim', identifier: claim.identifier?.[0] };
}

function items(input: AnswerInput): ClaimResponseItem[] {
  return input.state.items
    .filter((item) => !item.cancelled)
    .map((item) => {
      const certified = item.action === 'A1' || item.action === 'A6';
      const extension = [
        ...(certified && input.state.period ? [{ url: ITEM_PRE_AUTH_PERIOD, valuePeriod: input.state.period }] : []),
        ...(item.action === 'A6' && item.quantity !== undefined
          ? [{ url: ITEM_AUTHORIZED_DETAIL, extension: [{ url: 'quantity', valueQuantity: { value: item.quantity } }] }]
          : []),
      ];
      return {
        ...(extension.length > 0 ? { extension } : {}),
        itemSequence: item.sequence,
        adjudication: [
          {
            extension: [
              reviewActionExtension(item.action, {
                number: certified ? (input.state.preAuthRef ?? undefined) : undefined,
                notCertified: item.action === 'A3',
              }),
            ],
            category: concept({ system: SYSTEM.adjudication, code: 'submitted', display: 'Submitted Amount' }),
          },
        ],
      };
    });
}

const DISPOSITIONS: Record<AuthorizationState['decision'], string> = {
  pended: 'Pended for review (X12 278 A4): the payer decides within its time frame.',
  certified: 'Certified in total (X12 278 A1).',
  not_certified: 'Not certified (X12 278 A3): the clinical documentation does not meet the policy criteria.',
  modified: 'Certified with modifications (X12 278 A6): fewer units and a shorter authorization period than requested.',
  partial: 'Items were decided differently: see each item’s review action.',
  cancelled: 'Cancelled at the provider’s request.',
  error: 'The request could not be processed (X12 901 T4).',
};

/** The ClaimResponse of an answer; `inquiry` gives it the inquiry response profile. */
export function claimResponse(input: AnswerInput, profile: string): ClaimResponse {
  const { claim, state } = input;
  const id = claimResponseId(input.authorizationId);
  const moreInformation =
    state.moreInformation && claim.patient && claim.insurer && claim.provider
      ? moreInformationRequest({
          identifier: { system: RESPONSE_IDENTIFIER_SYSTEM, value: `${id}-more-information` },
          meta: {},
          authoredOn: input.decidedAt,
          patient: claim.patient,
          request: claimReference(input.request, claim),
          payer: claim.insurer,
          provider: claim.provider,
          missing: state.moreInformation,
          imagingReport: false,
        })
      : undefined;
  const notes = [DISPOSITIONS[state.decision], ...state.notes];
  const answered = items(input);
  return {
    resourceType: 'ClaimResponse',
    id,
    meta: { profile: [profile] },
    ...(moreInformation ? { contained: [moreInformation] } : {}),
    identifier: claim.identifier?.slice(0, 1) ?? [],
    // PAS fixes the status to active; a cancelled authorization says so in its disposition and lists no items.
    status: 'active',
    type: claim.type ?? concept({ system: SYSTEM.claimType, code: 'professional', display: 'Professional' }),
    use: 'preauthorization',
    patient: claim.patient,
    created: input.decidedAt,
    insurer: claim.insurer,
    requestor: claim.provider,
    request: claimReference(input.request, claim),
    outcome: state.decision === 'error' ? 'error' : 'complete',
    disposition: DISPOSITIONS[state.decision],
    ...(state.preAuthRef ? { preAuthRef: state.preAuthRef } : {}),
    ...(state.period ? { preAuthPeriod: state.period } : {}),
    ...(state.decision === 'error' ? { error: [{ code: { coding: [{ system: X12_REJECT_REASON, code: 'T4' }] } }] } : {}),
    ...(answered.length > 0 ? { item: answered } : {}),
    ...(moreInformation ? { communicationRequest: [{ reference: `#${moreInformation.id}` }] } : {}),
    processNote: notes.map((text, index) => ({ number: index + 1, type: 'display', text })),
  } as ClaimResponse;
}

function answerBundle(input: AnswerInput, bundleProfile: string, claimResponseProfile: string): Bundle {
  const response = claimResponse(input, claimResponseProfile);
  const echoed: BundleEntry[] = (input.request.entry ?? []).map((entry) => ({ fullUrl: entry.fullUrl, resource: entry.resource }));
  return {
    resourceType: 'Bundle',
    meta: { profile: [bundleProfile] },
    identifier: { system: RESPONSE_IDENTIFIER_SYSTEM, value: input.answerId },
    type: 'collection',
    timestamp: input.decidedAt,
    entry: [{ fullUrl: `urn:uuid:${input.answerId}`, resource: response }, ...echoed],
  };
}

/** The `$submit` answer: a PAS response Bundle. */
export function submitAnswer(input: AnswerInput): Bundle {
  return answerBundle(input, PAS_BUNDLE_PROFILE.response, PAS_PROFILE.claimResponse);
}

/** The `$inquire` answer: a PAS inquiry response Bundle with the authorization's current state. */
export function inquiryAnswer(input: AnswerInput): Bundle {
  return answerBundle(input, PAS_BUNDLE_PROFILE.inquiryResponse, PAS_CLAIM_INQUIRY_RESPONSE_PROFILE);
}
