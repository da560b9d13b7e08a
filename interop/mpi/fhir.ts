import type { Bundle, BundleEntry, Extension, Patient } from 'fhir/r4';
import type { FieldComparison } from './compare';
import type { MatchCandidate } from './mpi-index';

/** The R4 core extension $match puts on each entry's `search`. */
export const MATCH_GRADE_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/match-grade';
/** Ours: why the pair scored what it did, field by field (README, "MPI match"). */
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
 * The `Patient/$match` answer: a searchset Bundle, best first, each entry with `search.score`, the
 * match-grade extension and the breakdown.
 */
export function matchBundle(candidates: readonly MatchCandidate[], fullUrlOf: (patient: Patient) => string, id: string, lastUpdated: string): Bundle {
  const entry: BundleEntry[] = candidates.map((candidate) => ({
    fullUrl: fullUrlOf(candidate.patient),
    resource: candidate.patient,
    search: {
      mode: 'match',
      score: candidate.score,
      extension: [{ url: MATCH_GRADE_EXTENSION, valueCode: candidate.grade }, breakdownExtension(candidate)],
    },
  }));
  return { resourceType: 'Bundle', id, meta: { lastUpdated }, type: 'searchset', total: entry.length, entry };
}
