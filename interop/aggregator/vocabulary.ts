/**
 * The aggregator's words, shared by the API schemas, the workflow contract and the domain code
 * (the pattern of every domain vocabulary: const tuples, so zod, OpenAPI and the types come from one list).
 */

export const SOURCE_IDS = ['hospital', 'clinic', 'lab', 'pharmacy', 'payer'] as const;
export type SourceId = (typeof SOURCE_IDS)[number];

/**
 * What a source answered: records (`ok`), no record of the patient (`no_match`), only a probable
 * match, left out because the query did not ask for probable matches (`probable_match`), nothing in
 * time (`timeout`), or an error (`error`).
 */
export const SOURCE_STATUSES = ['ok', 'no_match', 'probable_match', 'timeout', 'error'] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];

/** The sources that did not answer: each gets an OperationOutcome in the answer. */
export const FAILED_SOURCE_STATUSES: readonly SourceStatus[] = ['timeout', 'error'];

/** What a query may make a source do: answer, fail with an error, or never answer in time. */
export const SIMULATED_BEHAVIOURS = ['ok', 'error', 'timeout'] as const;
export type SimulatedBehaviour = (typeof SIMULATED_BEHAVIOURS)[number];

export const PURPOSES_OF_USE = ['treatment', 'payment', 'operations', 'individual_access'] as const;
export type PurposeOfUse = (typeof PURPOSES_OF_USE)[number];

/** The HL7 v3 ActReason code each purpose travels as (the TEFCA exchange purposes). */
export const PURPOSE_CODES: Record<PurposeOfUse, { code: string; display: string }> = {
  treatment: { code: 'TREAT', display: 'treatment' },
  payment: { code: 'HPAYMT', display: 'healthcare payment' },
  operations: { code: 'HOPERAT', display: 'healthcare operations' },
  individual_access: { code: 'PATRQT', display: 'patient requested' },
};

export const AGGREGATABLE_TYPES = [
  'Encounter',
  'Condition',
  'Observation',
  'Procedure',
  'DiagnosticReport',
  'ServiceRequest',
  'AllergyIntolerance',
  'Immunization',
  'MedicationRequest',
  'Coverage',
  'Claim',
  'ExplanationOfBenefit',
] as const;
export type AggregatableType = (typeof AGGREGATABLE_TYPES)[number];

/**
 * An aggregator query runs until its workflow has merged every source's answer, then says how that
 * went (docs/api/aggregator.md): `completed` when every source answered, `partial` when some
 * failed or timed out, `failed` when none answered.
 */
export const AGGREGATOR_QUERY_STATUSES = ['running', 'completed', 'partial', 'failed'] as const;
export type AggregatorQueryStatus = (typeof AGGREGATOR_QUERY_STATUSES)[number];
