import { z } from 'zod';
import type { FhirStore } from '../../fixtures/store';
import { CREDENTIALING_STATUSES, type CredentialingFile, credentialingFile, credentialingFiles } from '../../interop/credentialing/file';
import { pageOfSorted, pageQuerySchema, pageSchema } from '../http/pagination';
import { defineRoute } from '../http/route';
import { resourceNotFound } from '../sandbox/world-lookups';

const codeableConcept = z.looseObject({ coding: z.array(z.looseObject({ system: z.string(), code: z.string() })) });
const reference = z.looseObject({ reference: z.string(), display: z.string().optional() });

const verificationResultSchema = z
  .looseObject({
    resourceType: z.literal('VerificationResult'),
    id: z.string(),
    status: z.enum(['validated', 'val-fail', 'in-process']),
    contained: z
      .array(z.looseObject({ resourceType: z.literal('Organization'), id: z.string(), name: z.string() }))
      .meta({ description: 'The primary source and the verification organization, as Organizations' }),
    target: z.array(reference),
    need: codeableConcept,
    statusDate: z.string(),
    validationType: codeableConcept,
    validationProcess: z.array(codeableConcept),
    failureAction: codeableConcept.meta({
      description: 'http://terminology.hl7.org/CodeSystem/failure-action: fatal (NPI, license, exclusions) or warn (DEA, board, Medicare)',
    }),
    primarySource: z.array(
      z.looseObject({ who: reference.meta({ description: 'The primary source: a contained Organization (#…)' }), validationStatus: codeableConcept }),
    ),
    attestation: z
      .looseObject({ who: reference, onBehalfOf: reference, communicationMethod: codeableConcept, date: z.string() })
      .meta({ description: "The practitioner's attestation of their application, on behalf of the organization they join" }),
    validator: z.array(z.looseObject({ organization: reference })),
  })
  .meta({
    id: 'FhirVerificationResult',
    description: 'One primary-source check as a FHIR R4 VerificationResult with the elements HL7 NDH’s Verification profile requires',
  });

export const credentialingFileSchema = z
  .object({
    practitioner_id: z.string().meta({ example: 'syn-prac-001' }),
    name: z.string(),
    status: z.enum(CREDENTIALING_STATUSES),
    reasons: z.array(z.string()).meta({ description: 'Why the file is flagged, or what it is waiting for' }),
    notes: z.array(z.string()).meta({ description: 'Findings that do not change the status (a lapsed license in a state no longer practised in)' }),
    npi: z.looseObject({ number: z.string(), enumeration_type: z.literal('NPI-1') }).meta({
      description: 'The NPPES NPI Registry record (API v2.1 shape): basic, addresses, taxonomies with a primary flag',
    }),
    licenses: z.array(
      z.object({
        state: z.string(),
        number: z.string(),
        type: z.string(),
        status: z.enum(['active', 'expired']),
        issued_on: z.string(),
        expires_on: z.string(),
        practice_state: z.boolean(),
      }),
    ),
    dea: z
      .object({ number: z.string(), state: z.string(), schedules: z.array(z.string()), status: z.literal('active'), expires_on: z.string() })
      .nullable(),
    board_certifications: z.array(
      z.object({
        board: z.string(),
        specialty: z.string(),
        status: z.enum(['certified', 'pending_verification']),
        certified_since: z.string(),
        expires_on: z.string().nullable(),
      }),
    ),
    exclusions: z.object({
      oig_leie: z.looseObject({ checked_on: z.string(), excluded: z.boolean() }),
      sam: z.looseObject({ checked_on: z.string(), status: z.string() }),
    }),
    medicare: z.looseObject({ status: z.enum(['approved', 'pending']) }),
    verifications: z.array(verificationResultSchema),
    last_credentialed_on: z.string(),
    recredential_due_on: z.string().meta({ description: 'The 36-month recredentialing cycle' }),
  })
  .meta({ id: 'CredentialingFile' });

type FileJson = z.input<typeof credentialingFileSchema>;
const present = (file: CredentialingFile) => ({ ...file, id: file.practitioner_id }) as unknown as FileJson & { id: string };

/** `GET /v1/sandbox/credentialing/practitioners[/{id}]`: the world's practitioners' credentialing files. */
export function credentialingRoutes({ fhirStore }: { fhirStore: FhirStore }) {
  const files = credentialingFiles(fhirStore).map(present);
  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/credentialing/practitioners',
      operationId: 'listCredentialingFiles',
      summary: "List the practitioners' credentialing files, by practitioner id",
      tag: 'Interop',
      auth: 'api_key',
      query: pageQuerySchema.extend({ status: z.enum(CREDENTIALING_STATUSES).optional() }).strict(),
      success: { status: 200, description: 'A page of credentialing files', schema: pageSchema(credentialingFileSchema) },
      errors: [400, 422],
      handler: async ({ query }) => {
        const page = pageOfSorted(
          files.filter((file) => query.status === undefined || file.status === query.status),
          query,
        );
        return { data: page.data.map(({ id: _id, ...file }) => file), next_cursor: page.next_cursor };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/credentialing/practitioners/{id}',
      operationId: 'getCredentialingFile',
      summary: "Read a practitioner's credentialing file: NPI, licenses, DEA, board, exclusions, Medicare, each check a VerificationResult",
      tag: 'Interop',
      auth: 'api_key',
      params: z.object({ id: z.string().max(64).meta({ example: 'syn-prac-001' }) }),
      success: { status: 200, description: 'The credentialing file', schema: credentialingFileSchema },
      errors: [404],
      handler: async ({ params }) => {
        const file = credentialingFile(fhirStore, params.id);
        if (!file) throw resourceNotFound('Practitioner', params.id);
        return file as unknown as FileJson;
      },
    }),
  ];
}
