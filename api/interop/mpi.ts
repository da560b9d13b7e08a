import { randomUUID } from 'node:crypto';
import type { Bundle, OperationOutcome, Patient } from 'fhir/r4';
import { z } from 'zod';
import { asFhirJson, fhirResourceSchema } from '../../fhir/resource-json';
import type { FhirStore } from '../../fixtures/store';
import { type Demographics, demographicsOf } from '../../interop/mpi/demographics';
import { matchBundle } from '../../interop/mpi/fhir';
import { worldMpi } from '../../interop/mpi/world';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { refusesRealIdentifiers } from '../../platform/organizations';
import { guardJson, type LocatedFinding } from '../../privacy/fhir';
import { privacyWarnings, realIdentifiersRefused } from '../http/privacy';
import { defineRoute } from '../http/route';
import { resourceNotFound } from '../sandbox/world-lookups';

const GENDERS = ['male', 'female', 'other', 'unknown'] as const;
export const MAX_MATCH_COUNT = 100;

const isCalendarDate = (value: string) => {
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
};
const dateField = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date, YYYY-MM-DD')
  .refine(isCalendarDate, 'must be a calendar date');
const countField = z.number().int('must be a whole number').min(1, 'must be at least 1').max(MAX_MATCH_COUNT, `must be at most ${MAX_MATCH_COUNT}`);

/** Blocking needs one of these, or the request would be compared with nothing. */
export const ENOUGH = 'give at least a birth date, a family and a given name, a phone number or an identifier to match on';
export function enoughToMatch(demographics: Demographics): boolean {
  return (
    demographics.birthDate !== undefined ||
    (demographics.family !== undefined && demographics.given.length > 0) ||
    demographics.phone !== undefined ||
    demographics.identifiers.length > 0
  );
}

// Bounded so a request's cost is: the index compares each name, street and identifier it is sent.
const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const queryPatientSchema = z
  .looseObject({
    resourceType: z.literal('Patient'),
    identifier: z
      .array(z.looseObject({ system: text(200).optional(), value: text(100).optional() }))
      .max(10)
      .optional(),
    name: z
      .array(z.looseObject({ use: z.string().optional(), family: text(100).optional(), given: z.array(text(100)).max(5).optional() }))
      .max(5)
      .optional(),
    telecom: z
      .array(z.looseObject({ system: z.string().optional(), value: text(100).optional() }))
      .max(10)
      .optional(),
    gender: z.enum(GENDERS, { message: `must be one of ${GENDERS.join(', ')}` }).optional(),
    birthDate: dateField.optional(),
    address: z
      .array(z.looseObject({ line: z.array(text(200)).max(4).optional(), city: text(100).optional(), postalCode: text(10).optional() }))
      .max(5)
      .optional(),
  })
  .meta({ description: 'The demographics to match, as a FHIR R4 Patient' });

const PARAMETER_NAMES = ['resource', 'onlyCertainMatches', 'count'] as const;

const parametersBody = z
  .object({
    resourceType: z.literal('Parameters'),
    id: z.string().optional(),
    parameter: z
      .array(
        z
          .object({
            name: z.enum(PARAMETER_NAMES, { message: `must be one of ${PARAMETER_NAMES.join(', ')}` }),
            resource: queryPatientSchema.optional(),
            valueBoolean: z.boolean().optional(),
            valueInteger: countField.optional(),
          })
          .strict(),
      )
      .min(1, 'must hold the resource parameter')
      .max(3, 'holds resource, onlyCertainMatches and count at most once each'),
  })
  .strict()
  .superRefine((body, context) => {
    const resources = body.parameter.filter((parameter) => parameter.name === 'resource');
    if (resources.length !== 1) context.addIssue({ code: 'custom', path: ['parameter'], message: 'must hold exactly one resource parameter' });
    body.parameter.forEach((parameter, index) => {
      const expected = { resource: 'resource', onlyCertainMatches: 'valueBoolean', count: 'valueInteger' }[parameter.name];
      if (parameter[expected as 'resource' | 'valueBoolean' | 'valueInteger'] === undefined) {
        context.addIssue({ code: 'custom', path: ['parameter', index, expected], message: `the ${parameter.name} parameter needs ${expected}` });
      } else if (parameter.name === 'resource' && !enoughToMatch(demographicsOf(parameter.resource as Patient))) {
        context.addIssue({ code: 'custom', path: ['parameter', index, 'resource'], message: ENOUGH });
      }
    });
  })
  .meta({ id: 'MpiMatchParameters', description: 'The FHIR `Patient/$match` input: resource, onlyCertainMatches, count' });

/** Plain JSON demographics, as the match and the aggregator query take them. */
export const demographicsShape = {
  given: z.string().trim().min(1, 'must not be empty').max(100).optional().meta({ description: 'Given names, first one first', example: 'Nate' }),
  family: z.string().trim().min(1, 'must not be empty').max(100).optional().meta({ example: 'Bradtke' }),
  birth_date: dateField.optional().meta({ example: '1974-10-27' }),
  gender: z.enum(GENDERS, { message: `must be one of ${GENDERS.join(', ')}` }).optional(),
  phone: z.string().max(40).optional().meta({ example: '971-555-0181' }),
  address: z
    .object({ line: z.string().max(200).optional(), city: z.string().max(100).optional(), postal_code: z.string().max(10).optional() })
    .strict()
    .optional(),
  identifiers: z
    .array(z.object({ system: z.string().min(1).max(200), value: z.string().min(1).max(100) }).strict())
    .max(10)
    .optional(),
};

const demographicsBody = z
  .object({
    resourceType: z.undefined().optional(),
    ...demographicsShape,
    only_certain_matches: z.boolean().optional(),
    count: countField.optional(),
  })
  .strict()
  .superRefine((body, context) => {
    if (!enoughToMatch(demographicsOf(patientFromDemographics(body)))) context.addIssue({ code: 'custom', path: [], message: ENOUGH });
  })
  .meta({ id: 'MpiMatchDemographics', description: 'Plain JSON demographics' });

export const matchBodySchema = z.discriminatedUnion('resourceType', [parametersBody, demographicsBody]);
export type MatchBody = z.output<typeof matchBodySchema>;

const barePatientBody = queryPatientSchema
  .superRefine((patient, context) => {
    if (!enoughToMatch(demographicsOf(patient as Patient))) context.addIssue({ code: 'custom', path: [], message: ENOUGH });
  })
  .meta({ id: 'MpiMatchPatient', description: 'A bare FHIR R4 Patient: the demographics to match, with the defaults of the other parameters' });

/**
 * `POST /fhir/R4/Patient/$match` (IHE PDQm ITI-119): a `Parameters` resource (`resource`,
 * `onlyCertainMatches`, `count`) or a bare Patient.
 */
export const fhirMatchBodySchema = z.discriminatedUnion('resourceType', [parametersBody, barePatientBody]).meta({
  id: 'PatientMatchInput',
  description: 'ITI-119 input: a Parameters resource (resource, onlyCertainMatches, count) or a bare Patient',
});
export type FhirMatchBody = z.output<typeof fhirMatchBodySchema>;

export type PlainDemographics = z.output<z.ZodObject<typeof demographicsShape>>;

export function patientFromDemographics(body: PlainDemographics): Patient {
  return {
    resourceType: 'Patient',
    ...(body.identifiers ? { identifier: body.identifiers } : {}),
    ...(body.family || body.given ? { name: [{ family: body.family, given: body.given?.split(/\s+/) }] } : {}),
    ...(body.phone ? { telecom: [{ system: 'phone', value: body.phone }] } : {}),
    ...(body.gender ? { gender: body.gender } : {}),
    ...(body.birth_date ? { birthDate: body.birth_date } : {}),
    ...(body.address
      ? { address: [{ line: body.address.line ? [body.address.line] : [], city: body.address.city, postalCode: body.address.postal_code }] }
      : {}),
  };
}

/** The request in any shape, as the Patient to match and the options. */
export function matchRequest(body: MatchBody | FhirMatchBody): { patient: Patient; onlyCertainMatches: boolean; count: number } {
  if (body.resourceType === 'Patient') return { patient: body as Patient, onlyCertainMatches: false, count: MAX_MATCH_COUNT };
  if (body.resourceType === 'Parameters') {
    const find = (name: (typeof PARAMETER_NAMES)[number]) => body.parameter.find((parameter) => parameter.name === name);
    return {
      patient: find('resource')!.resource as Patient,
      onlyCertainMatches: find('onlyCertainMatches')?.valueBoolean ?? false,
      count: find('count')?.valueInteger ?? MAX_MATCH_COUNT,
    };
  }
  return { patient: patientFromDemographics(body), onlyCertainMatches: body.only_certain_matches ?? false, count: body.count ?? MAX_MATCH_COUNT };
}

export const matchBundleSchema = z
  .looseObject({
    resourceType: z.literal('Bundle'),
    type: z.literal('searchset'),
    total: z.number().int().meta({ description: 'How many Patients the Bundle holds' }),
    entry: z.array(
      z.union([
        z.looseObject({
          fullUrl: z.string(),
          resource: fhirResourceSchema,
          search: z.looseObject({
            mode: z.literal('match'),
            score: z.number().meta({ description: 'Posterior probability that the record is the same person, 0 to 1' }),
            extension: z.array(z.looseObject({ url: z.string() })).meta({
              description: 'The match-grade extension (certain, probable, possible) and the per-field breakdown (match-breakdown)',
            }),
          }),
        }),
        z
          .looseObject({
            fullUrl: z.string(),
            resource: z.looseObject({
              resourceType: z.literal('OperationOutcome'),
              issue: z.array(
                z.looseObject({
                  severity: z.enum(['information', 'warning']),
                  code: z.enum(['multiple-matches', 'security']),
                  diagnostics: z.string(),
                }),
              ),
            }),
            search: z.looseObject({ mode: z.literal('outcome') }),
          })
          .meta({
            description:
              'With onlyCertainMatches and several certain records: an OperationOutcome saying so, and no Patient (ITI-119); and, when the request held real identifiers, one warning issue (code `security`) for each the privacy guard masked (docs/api/privacy.md)',
          }),
      ]),
    ),
  })
  .meta({ id: 'MpiMatchBundle', description: 'A FHIR R4 searchset Bundle of candidates, best first (IHE PDQm ITI-119)' });

/** The master patient index over the synthetic world, answering $match in any of its request shapes. */
export function worldPatientMatch({ fhirStore, config }: { fhirStore: FhirStore; config: Config }) {
  const mpi = worldMpi(fhirStore);
  const recordUrl = (patient: Patient) =>
    fhirStore.read('Patient', patient.id!)
      ? `${config.PUBLIC_BASE_URL}/fhir/R4/Patient/${patient.id}`
      : `${config.PUBLIC_BASE_URL}/v1/sandbox/mpi/records/${patient.id}`;
  return {
    mpi,
    /**
     * The candidates for a request whose real identifiers (docs/api/privacy.md) are masked first: each
     * is a warning issue of an OperationOutcome entry (search mode `outcome`), or, when the organization
     * refuses them, `refusal` is thrown. Nothing of the request is stored.
     */
    async answer(
      body: MatchBody | FhirMatchBody,
      privacy: { db: Database; organizationId: string; refusal: (findings: LocatedFinding[]) => Error },
      selfUrl?: string,
    ): Promise<Bundle> {
      const request = matchRequest(body);
      const guarded = guardJson(request.patient, 'Patient');
      if (guarded.findings.length > 0 && (await refusesRealIdentifiers(privacy.db, privacy.organizationId))) throw privacy.refusal(guarded.findings);
      const bundle = matchBundle(mpi.index.match(demographicsOf(guarded.value), request), recordUrl, randomUUID(), new Date().toISOString(), selfUrl);
      if (guarded.findings.length === 0) return bundle;
      const warnings: OperationOutcome = {
        resourceType: 'OperationOutcome',
        issue: privacyWarnings(guarded.findings, false).map((warning) => ({
          severity: 'warning',
          code: 'security',
          diagnostics: warning.message,
          expression: [warning.path],
        })),
      };
      return {
        ...bundle,
        entry: [...(bundle.entry ?? []), { fullUrl: `urn:uuid:${randomUUID()}`, resource: warnings, search: { mode: 'outcome' } }],
      };
    },
  };
}

/**
 * `POST /v1/sandbox/mpi/match` and the index's records. The match is also the FHIR operation
 * `POST /fhir/R4/Patient/$match` (api/fhir/routes.ts), which takes the FHIR shapes only.
 */
export function mpiRoutes(deps: { fhirStore: FhirStore; config: Config; db: Database }) {
  const { mpi, answer } = worldPatientMatch(deps);

  return [
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/mpi/match',
      operationId: 'matchPatient',
      summary: 'Find the records of a patient in the master patient index (as FHIR Patient/$match)',
      description:
        'Send a FHIR `Parameters` resource (`resource`, `onlyCertainMatches`, `count`) or plain JSON demographics. Candidates are scored with Fellegi–Sunter weights and graded certain, probable or possible; certainly-not candidates are left out. Each entry explains its score field by field. With `onlyCertainMatches` and several certain records, no record (IHE ITI-119). The FHIR operation itself is `POST /fhir/R4/Patient/$match`.',
      tag: 'Interop',
      auth: 'api_key',
      body: matchBodySchema,
      success: { status: 200, description: 'The candidates, best first', schema: matchBundleSchema },
      errors: [415, 422],
      handler: async ({ auth, body }) =>
        (await answer(body, { db: deps.db, organizationId: auth.organizationId, refusal: realIdentifiersRefused })) as unknown as z.input<
          typeof matchBundleSchema
        >,
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/mpi/records/{id}',
      operationId: 'getMpiRecord',
      summary: 'Read one record of the master patient index (a world patient or a near-duplicate)',
      tag: 'Interop',
      auth: 'api_key',
      params: z.object({ id: z.string().max(64).meta({ example: 'syn-mpi-0004' }) }),
      success: { status: 200, description: 'The record', schema: fhirResourceSchema },
      errors: [404],
      handler: async ({ params }) => {
        const record = mpi.record(params.id);
        if (!record) throw resourceNotFound('MPI record', params.id);
        return asFhirJson(record);
      },
    }),
  ];
}
