import type { Claim, ClaimResponse, CodeableConcept, CommunicationRequest, Extension, Identifier, Meta, Reference } from 'fhir/r4';
import { type Code, concept, SYSTEM } from '../fhir/terminology';
import { usd } from './adjudication';

/**
 * Prior authorization as Da Vinci PAS 2.2.1 shapes it, for the world's requests (fixtures) and
 * scenario runs alike: the request `Claim` (profile-claim), the payer's `ClaimResponse`
 * (profile-claimresponse) with the X12 278 review action on the item, and the payer's request for
 * more information (profile-communicationrequest). A pend is outcome `complete` with review action
 * `A4` (PAS binds outcome to complete | error | partial); a denial gives its reason as an X12 278
 * review decision reason inside the review action, not as a claim payment reason (CARC).
 */

const PAS = 'http://hl7.org/fhir/us/davinci-pas/StructureDefinition';
export const PAS_PROFILE = {
  claim: `${PAS}/profile-claim`,
  claimResponse: `${PAS}/profile-claimresponse`,
  communicationRequest: `${PAS}/profile-communicationrequest`,
} as const;

const EXTENSION = {
  reviewAction: `${PAS}/extension-reviewAction`,
  reviewActionCode: `${PAS}/extension-reviewActionCode`,
  requestType: `${PAS}/extension-serviceItemRequestType`,
  certificationType: `${PAS}/extension-certificationType`,
  careTeamClaimScope: `${PAS}/extension-careTeamClaimScope`,
} as const;

/** X12 code sources PAS binds (https://codesystem.x12.org/…); X12 licenses the lists, the package carries none of them. */
const X12 = {
  reviewAction: 'https://codesystem.x12.org/005010/306',
  reviewDecisionReason: 'https://codesystem.x12.org/external/886',
  requestType: 'https://codesystem.x12.org/005010/1525',
  certificationType: 'https://codesystem.x12.org/005010/1322',
  serviceType: 'https://codesystem.x12.org/005010/1365',
  attachmentReportType: 'https://codesystem.x12.org/005010/755',
} as const;
export const PLACE_OF_SERVICE_SYSTEM = 'https://www.cms.gov/Medicare/Coding/place-of-service-codes/Place_of_Service_Code_Set';
const PAS_TEMP_CODES = 'http://hl7.org/fhir/us/davinci-pas/CodeSystem/PASTempCodes';

/** X12 306 (HCR01): the review actions the sandbox's payers take. */
export const REVIEW_ACTIONS = { A1: 'Certified in total', A3: 'Not certified', A4: 'Pended', A6: 'Modified' } as const;
export type ReviewAction = keyof typeof REVIEW_ACTIONS;

/**
 * X12 886 (HCR03), why a request was not certified. The sandbox denies for one reason only: the
 * documentation does not meet the payer's policy criteria. The code is the sandbox's choice from a
 * list X12 licenses and neither the PAS package nor this repository holds, so it is not checked
 * against the list (so no display is claimed for it: the concept's text says the reason); the profile
 * validator checks the system.
 */
export const REVIEW_DECISION_REASON = { code: '0X', text: 'The clinical documentation does not meet the policy criteria' } as const;

/** CMS place-of-service codes of the settings the sandbox's requests name. */
export const PLACES_OF_SERVICE = {
  office: { code: '11', display: 'Office' },
  inpatientHospital: { code: '21', display: 'Inpatient Hospital' },
  outpatientHospital: { code: '22', display: 'On Campus-Outpatient Hospital' },
} as const;

/** X12 1365 service type of a CPT code: MRI/CT, other imaging, surgery, or medical care. */
function serviceTypeOf(code: Code): CodeableConcept {
  const value = code.code;
  if (/^7\d{4}$/.test(value) && /magnetic resonance|computed tomograph/i.test(code.display))
    return concept({ system: X12.serviceType, code: '62', display: 'MRI/CAT Scan' });
  if (/^7\d{4}$/.test(value)) return concept({ system: X12.serviceType, code: '4', display: 'Diagnostic X-Ray' });
  if (/^[1-6]\d{4}$/.test(value)) return concept({ system: X12.serviceType, code: '2', display: 'Surgical' });
  return concept({ system: X12.serviceType, code: '1', display: 'Medical Care' });
}

export function reviewActionExtension(action: ReviewAction, options: { number?: string | undefined; notCertified?: boolean } = {}): Extension {
  return {
    url: EXTENSION.reviewAction,
    extension: [
      { url: EXTENSION.reviewActionCode, valueCodeableConcept: concept({ system: X12.reviewAction, code: action, display: REVIEW_ACTIONS[action] }) },
      ...(options.number ? [{ url: 'number', valueString: options.number }] : []),
      ...(options.notCertified
        ? [
            {
              url: 'reasonCode',
              valueCodeableConcept: {
                coding: [{ system: X12.reviewDecisionReason, code: REVIEW_DECISION_REASON.code }],
                text: REVIEW_DECISION_REASON.text,
              },
            },
          ]
        : []),
    ],
  };
}

/** The review action code a PAS ClaimResponse's first item carries (tests and samples read it back). */
export function reviewActionOf(response: ClaimResponse): string | undefined {
  const action = response.item?.[0]?.adjudication?.[0]?.extension?.find((extension) => extension.url === EXTENSION.reviewAction);
  return action?.extension?.find((inner) => inner.url === EXTENSION.reviewActionCode)?.valueCodeableConcept?.coding?.[0]?.code;
}

export interface PriorAuthRequestInput {
  id: string;
  meta: Meta;
  identifier: Identifier;
  created: string;
  patient: Reference;
  insurer: Reference;
  /** The requesting organization. */
  provider: Reference;
  /** The ordering clinician in their role (PAS allows PractitionerRole or Organization on the care team). */
  clinicianRole: Reference;
  qualification?: CodeableConcept | undefined;
  coverage: Reference;
  diagnosis: Code;
  service: Code;
  unitCharge: number;
  servicedDate: string;
  placeOfService: keyof typeof PLACES_OF_SERVICE;
  /** Where the service will be performed. */
  facility?: Reference | undefined;
  supportingInfo?: Claim['supportingInfo'];
}

/** What a PAS request and its response both carry: the business identifier, the professional type, the patient and the payer. */
function preauthorizationHeader(
  input: { id?: string; meta?: Meta; identifier: Identifier; patient: Reference; created: string; insurer: Reference },
  profile: string,
) {
  return {
    id: input.id,
    meta: { ...input.meta, profile: [profile] },
    identifier: [input.identifier],
    status: 'active' as const,
    type: concept({ system: SYSTEM.claimType, code: 'professional', display: 'Professional' }),
    use: 'preauthorization' as const,
    patient: input.patient,
    created: input.created,
    insurer: input.insurer,
  };
}

/** The prior-authorization request: a PAS Claim, `use: preauthorization`. */
export function priorAuthRequest(input: PriorAuthRequestInput): Claim {
  const place = PLACES_OF_SERVICE[input.placeOfService];
  return {
    resourceType: 'Claim',
    ...preauthorizationHeader(input, PAS_PROFILE.claim),
    provider: input.provider,
    priority: concept({ system: SYSTEM.processPriority, code: 'normal', display: 'Normal' }),
    ...(input.facility ? { facility: input.facility } : {}),
    careTeam: [
      {
        extension: [{ url: EXTENSION.careTeamClaimScope, valueBoolean: true }],
        sequence: 1,
        provider: input.clinicianRole,
        ...(input.qualification ? { qualification: input.qualification } : {}),
      },
    ],
    ...(input.supportingInfo ? { supportingInfo: input.supportingInfo } : {}),
    diagnosis: [
      {
        sequence: 1,
        diagnosisCodeableConcept: concept(input.diagnosis),
        type: [{ coding: [{ system: PAS_TEMP_CODES, code: 'principal', display: 'Principal' }] }],
      },
    ],
    insurance: [{ sequence: 1, focal: true, coverage: input.coverage }],
    item: [
      {
        extension: [
          { url: EXTENSION.requestType, valueCodeableConcept: concept({ system: X12.requestType, code: 'HS', display: 'Health Services Review' }) },
          { url: EXTENSION.certificationType, valueCodeableConcept: concept({ system: X12.certificationType, code: 'I', display: 'Initial' }) },
        ],
        sequence: 1,
        careTeamSequence: [1],
        diagnosisSequence: [1],
        category: serviceTypeOf(input.service),
        productOrService: concept(input.service),
        servicedDate: input.servicedDate,
        locationCodeableConcept: concept({ system: PLACE_OF_SERVICE_SYSTEM, ...place }),
        quantity: { value: 1 },
        unitPrice: usd(input.unitCharge),
        net: usd(input.unitCharge),
      },
    ],
    total: usd(input.unitCharge),
  };
}

/** X12 755 (PWK01) attachment report types the sandbox's payers ask for. */
const ATTACHMENT_REPORT_TYPES = {
  radiologyReports: { code: 'RR', display: 'Radiology Reports' },
  medicalRecordAttachment: { code: 'M1', display: 'Medical Record Attachment' },
} as const;

export interface MoreInformationInput {
  identifier: Identifier;
  meta: Meta;
  authoredOn: string;
  patient: Reference;
  request: Reference;
  payer: Reference;
  provider: Reference;
  /** What the payer asks for, in words. */
  missing: string;
  /** Whether what is missing is an imaging report (X12 755 RR) rather than other records (M1). */
  imagingReport: boolean;
}

/** The payer's request for more information on a pended request: the payer requests, the provider sends, to the payer. */
export function moreInformationRequest(input: MoreInformationInput): CommunicationRequest {
  const reportType = input.imagingReport ? ATTACHMENT_REPORT_TYPES.radiologyReports : ATTACHMENT_REPORT_TYPES.medicalRecordAttachment;
  return {
    resourceType: 'CommunicationRequest',
    id: 'more-information',
    // Contained in the ClaimResponse, so no versionId or lastUpdated of its own (R4 dom-4).
    meta: { ...(input.meta.tag ? { tag: input.meta.tag } : {}), profile: [PAS_PROFILE.communicationRequest] },
    extension: [{ url: `${PAS}/extension-serviceLineNumber`, valuePositiveInt: 1 }],
    identifier: [input.identifier],
    status: 'active',
    category: [concept({ system: X12.attachmentReportType, ...reportType })],
    subject: input.patient,
    about: [input.request],
    payload: [{ contentString: `Send: ${input.missing}` }],
    authoredOn: input.authoredOn,
    requester: input.payer,
    recipient: [input.payer],
    sender: input.provider,
  };
}

export interface PriorAuthDecisionInput {
  id: string;
  meta: Meta;
  identifier: Identifier;
  created: string;
  patient: Reference;
  insurer: Reference;
  requestor: Reference;
  request: Reference;
  unitCharge: number;
  action: ReviewAction;
  /** The authorization number and period of a certified (A1) or modified (A6) request. */
  certification?: { number: string; start: string; end: string } | undefined;
  disposition: string;
  note?: string | undefined;
  moreInformation?: CommunicationRequest | undefined;
}

/** The payer's decision (or pend) on a request: a PAS ClaimResponse, outcome `complete`, the review action on the item. */
export function priorAuthDecision(input: PriorAuthDecisionInput): ClaimResponse {
  return {
    resourceType: 'ClaimResponse',
    ...preauthorizationHeader(input, PAS_PROFILE.claimResponse),
    requestor: input.requestor,
    request: input.request,
    outcome: 'complete',
    disposition: input.disposition,
    ...(input.certification
      ? { preAuthRef: input.certification.number, preAuthPeriod: { start: input.certification.start, end: input.certification.end } }
      : {}),
    ...(input.moreInformation ? { contained: [input.moreInformation] } : {}),
    item: [
      {
        itemSequence: 1,
        adjudication: [
          {
            extension: [reviewActionExtension(input.action, { number: input.certification?.number, notCertified: input.action === 'A3' })],
            category: concept({ system: SYSTEM.adjudication, code: 'submitted', display: 'Submitted Amount' }),
            amount: usd(input.unitCharge),
          },
        ],
      },
    ],
    ...(input.moreInformation ? { communicationRequest: [{ reference: `#${input.moreInformation.id}` }] } : {}),
    ...(input.note ? { processNote: [{ number: 1, type: 'display', text: input.note }] } : {}),
  };
}
