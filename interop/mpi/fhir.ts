import type { Bundle, BundleEntry, Extension, OperationOutcome, Patient } from 'fhir/r4';
import type { FieldComparison } from './compare';
import type { MatchCandidate, MatchResult } from './mpi-index';

/** The R4 core extension $match puts on each entry's `search`. */
export const MATCH_GRADE_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/match-grade';
/** Ours: why the pair scored what it did, field by field (docs/api/mpi-match.md). */
export const MATCH_BREAKDOWN_EXTENSION = 'https://sandbox.example/fhir/StructureDefinition/match-breakdown';

function fieldExtension(field: FieldComparison): Extension {
  return {
    url: 'field',
    extension: [
      { url: 'name', valueCode: field.field },
      { url: 'level', valueCode: field.level },
      { url: 'weight', valueDecimal: field.weight },
      ...(field.similarity === undefined ? [] : [{ url: 'similarity', valueDecimal: field.similarity }]),
      ...(field.phonetic ? [{ url: 'phonetic', valueString: field.phonetic.join(' / ') }] : []),
      { url: 'detail', valueString: field.detail },
    ],
  };
}

export function breakdownExtension(candidate: MatchCandidate): Extension {
  return {
    url: MATCH_BREAKDOWN_EXTENSION,
    extension: [
      { url: 'weight', valueDecimal: candidate.weight },
      ...candidate.fields.map(fieldExtension),
      ...candidate.caps.map((rule) => ({ url: 'rule', valueString: rule })),
      ...(candidate.via ? [{ url: 'merged-record', valueReference: { reference: `Patient/${candidate.via}` } }] : []),
    ],
  };
}

/**
 * The `Patient/$match` answer (IHE PDQm ITI-119): a searchset Bundle, best first, each entry with
 * `search.score`, the match-grade extension and the breakdown. When `onlyCertainMatches` found
 * several certain records, no Patient at all and an informational OperationOutcome (search mode
 * `outcome`) saying so; `total` counts Patients only.
 */
export function matchBundle(
  result: Pick<MatchResult, 'candidates' | 'ambiguousCertainMatches'>,
  fullUrlOf: (patient: Patient) => string,
  id: string,
  lastUpdated: string,
  selfUrl?: string,
): Bundle {
  const { candidates } = result;
  const entry: BundleEntry[] = candidates.map((candidate) => ({
    fullUrl: fullUrlOf(candidate.patient),
    resource: candidate.patient,
    search: {
      mode: 'match',
      score: candidate.score,
      extension: [{ url: MATCH_GRADE_EXTENSION, valueCode: candidate.grade }, breakdownExtension(candidate)],
    },
  }));
  const total = entry.length;
  if (result.ambiguousCertainMatches) {
    const outcome: OperationOutcome = {
      resourceType: 'OperationOutcome',
      id,
      issue: [
        {
          severity: 'information',
          code: 'multiple-matches',
          diagnostics: `${result.ambiguousCertainMatches} records match with certainty; with onlyCertainMatches no record is returned (IHE ITI-119). Send more demographics, or ask without onlyCertainMatches to see the candidates.`,
        },
      ],
    };
    entry.push({ fullUrl: `urn:uuid:${id}`, resource: outcome, search: { mode: 'outcome' } });
  }
  return {
    resourceType: 'Bundle',
    id,
    meta: { lastUpdated },
    type: 'searchset',
    total,
    ...(selfUrl ? { link: [{ relation: 'self', url: selfUrl }] } : {}),
    entry,
  };
}
