import { describe, expect, it } from 'vitest';
import { fhirErrors, pasExamples, validateFhir } from '../support/fhir-validator';

const PAS = 'http://hl7.org/fhir/us/davinci-pas/StructureDefinition';

/** A pend as PAS 2.2.1 expresses it (after the package's PractitionerRequestorPendingResponseExample). */
function pendedResponse(): any {
  return {
    resourceType: 'ClaimResponse',
    id: 'pended',
    meta: { profile: [`${PAS}/profile-claimresponse`] },
    identifier: [{ system: 'urn:sandbox:pa', value: 'PA-1-P' }],
    status: 'active',
    type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/claim-type', code: 'professional' }] },
    use: 'preauthorization',
    patient: { reference: 'Patient/p' },
    created: '2026-01-02T10:00:00Z',
    insurer: { reference: 'Organization/payer' },
    requestor: { reference: 'Organization/clinic' },
    request: { reference: 'Claim/pa' },
    outcome: 'complete',
    item: [
      {
        itemSequence: 1,
        adjudication: [
          {
            extension: [
              {
                url: `${PAS}/extension-reviewAction`,
                extension: [
                  {
                    url: `${PAS}/extension-reviewActionCode`,
                    valueCodeableConcept: { coding: [{ system: 'https://codesystem.x12.org/005010/306', code: 'A4' }] },
                  },
                ],
              },
            ],
            category: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/adjudication', code: 'submitted' }] },
          },
        ],
      },
    ],
  };
}

describe('the profile validator (base R4 with its invariants, Da Vinci PAS 2.2.1)', () => {
  it('passes a conforming PAS ClaimResponse and a valid base R4 resource', () => {
    expect(fhirErrors(pendedResponse())).toEqual([]);
    expect(fhirErrors({ resourceType: 'Patient', id: 'p', birthDate: '1980-01-01' })).toEqual([]);
  });

  it("passes the PAS package's own Claim, ClaimResponse and CommunicationRequest examples (no false errors)", async () => {
    const examples = (await pasExamples()).filter((example) =>
      ['Claim', 'ClaimResponse', 'CommunicationRequest'].includes(String(example.resourceType)),
    );
    expect(examples.length).toBeGreaterThanOrEqual(13);
    for (const example of examples) expect(fhirErrors(example), String(example.id)).toEqual([]);
  });

  it('checks a primitive’s extensions: the PAS Subscription example passes, its content level (an extension on channel.payload) must be full-resource', async () => {
    const example = (await pasExamples()).find((resource) => resource.resourceType === 'Subscription') as any;
    expect(fhirErrors(example)).toEqual([]);
    const idOnly = structuredClone(example);
    idOnly.channel._payload.extension[0].valueCode = 'id-only';
    expect(fhirErrors(idOnly)).toEqual([expect.stringContaining('does not match its patternCode "full-resource"')]);
    const withoutContent = structuredClone(example);
    delete withoutContent.channel._payload;
    expect(fhirErrors(withoutContent)).toContainEqual(expect.stringContaining('extension:content: 0 present'));
    const otherTopic = structuredClone(example);
    otherTopic.criteria = 'http://example.org/SubscriptionTopic/admission';
    expect(fhirErrors(otherTopic)).toEqual([expect.stringContaining('Subscription.criteria')]);
  });

  it('fails an R4 invariant: a CoverageEligibilityResponse item with both category and productOrService breaks ces-1', () => {
    const response = {
      resourceType: 'CoverageEligibilityResponse',
      id: 'r',
      status: 'active',
      purpose: ['benefits'],
      patient: { reference: 'Patient/p' },
      created: '2026-01-01',
      request: { reference: 'CoverageEligibilityRequest/q' },
      outcome: 'complete',
      insurer: { reference: 'Organization/payer' },
      insurance: [
        {
          coverage: { reference: 'Coverage/c' },
          item: [
            {
              category: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/ex-benefitcategory', code: '30' }] },
              productOrService: { coding: [{ system: 'http://www.ama-assn.org/go/cpt', code: '73721' }] },
            },
          ],
        },
      ],
    };
    expect(fhirErrors(response).join('\n')).toContain('ces-1');
    response.insurance[0]!.item[0] = { category: response.insurance[0]!.item[0]!.category } as never;
    expect(fhirErrors(response)).toEqual([]);
  });

  it('fails PAS rules: a pend sent as outcome queued, a review decision reason outside X12 886, a missing required element', () => {
    const queued = { ...pendedResponse(), outcome: 'queued' };
    expect(fhirErrors(queued).join('\n')).toMatch(/ClaimResponse\.outcome: "queued" is not in the required value set/);

    const carcReason = pendedResponse();
    carcReason.item[0].adjudication[0].extension[0].extension.push({
      url: 'reasonCode',
      valueCodeableConcept: { coding: [{ system: 'https://x12.org/codes/claim-adjustment-reason-codes', code: '50' }] },
    });
    expect(fhirErrors(carcReason).join('\n')).toContain('extension-reviewAction#reasonCode');

    const noRequest = pendedResponse();
    delete noRequest.request;
    expect(fhirErrors(noRequest).join('\n')).toMatch(/request/);
  });

  it('fails a PAS Claim whose care team names a Practitioner and lacks careTeamClaimScope, item.category and the request type', () => {
    const claim = {
      resourceType: 'Claim',
      id: 'pa',
      meta: { profile: [`${PAS}/profile-claim`] },
      identifier: [{ system: 'urn:sandbox:pa', value: 'PA-1' }],
      status: 'active',
      type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/claim-type', code: 'professional' }] },
      use: 'preauthorization',
      patient: { reference: 'Patient/p' },
      created: '2026-01-01T10:00:00Z',
      insurer: { reference: 'Organization/payer' },
      provider: { reference: 'Organization/clinic' },
      priority: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/processpriority', code: 'normal' }] },
      careTeam: [{ sequence: 1, provider: { reference: 'Practitioner/doc' } }],
      insurance: [{ sequence: 1, focal: true, coverage: { reference: 'Coverage/c' } }],
      item: [
        {
          sequence: 1,
          productOrService: { coding: [{ system: 'http://www.ama-assn.org/go/cpt', code: '73721' }] },
          locationReference: { reference: 'Location/imaging' },
        },
      ],
    };
    const errors = fhirErrors(claim).join('\n');
    expect(errors).toContain('Claim.careTeam.provider: references a Practitioner');
    expect(errors).toContain('careTeamClaimScope');
    expect(errors).toMatch(/Claim\.item\.category/);
    expect(errors).toMatch(/requestType|certificationType/);
    expect(errors).toMatch(/Claim\.item\.location/);
  });

  it('lists what it could not check as warnings', () => {
    const { errors, warnings } = validateFhir({
      ...pendedResponse(),
      meta: { profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient'] },
    });
    expect(errors).toEqual([]);
    expect(warnings.join('\n')).toContain('not available offline');
  });
});
