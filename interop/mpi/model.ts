/**
 * The Fellegi–Sunter model the MPI scores with (docs/api/mpi-match.md). For every field and every
 * level of agreement, m is the probability of that level when two records are the same person and
 * u the probability when they are not; the level adds log2(m/u) to the pair's weight. A missing
 * value on either side adds nothing. The m values reflect how often a real duplicate carries a
 * typo, a nickname, a move or a new phone; the u values how often strangers agree by chance in a
 * population of about a hundred thousand (a birth date is shared with 1 in ~25,000).
 */

export const MATCH_GRADES = ['certain', 'probable', 'possible', 'certainly-not'] as const;
export type MatchGrade = (typeof MATCH_GRADES)[number];

export const MATCH_FIELDS = ['family', 'given', 'birthDate', 'gender', 'address', 'phone', 'identifier'] as const;
export type MatchField = (typeof MATCH_FIELDS)[number];

export interface LevelProbabilities {
  m: number;
  u: number;
}

export const FIELD_LEVELS = {
  family: {
    exact: { m: 0.92, u: 0.005 },
    close: { m: 0.05, u: 0.01 },
    different: { m: 0.03, u: 0.985 },
  },
  given: {
    exact: { m: 0.9, u: 0.01 },
    nickname: { m: 0.04, u: 0.001 },
    close: { m: 0.04, u: 0.01 },
    different: { m: 0.02, u: 0.979 },
  },
  birthDate: {
    exact: { m: 0.96, u: 0.00004 },
    transposed: { m: 0.01, u: 0.00004 },
    partial: { m: 0.02, u: 0.002 },
    different: { m: 0.01, u: 0.99792 },
  },
  gender: {
    exact: { m: 0.98, u: 0.5 },
    different: { m: 0.02, u: 0.5 },
  },
  address: {
    exact: { m: 0.7, u: 0.0005 },
    partial: { m: 0.1, u: 0.02 },
    different: { m: 0.2, u: 0.9795 },
  },
  phone: {
    exact: { m: 0.6, u: 0.002 },
    different: { m: 0.4, u: 0.998 },
  },
  identifier: {
    exact: { m: 0.97, u: 0.000001 },
    different: { m: 0.03, u: 0.999999 },
  },
} as const satisfies Record<MatchField, Record<string, LevelProbabilities>>;

/** log2(m/u), rounded to hundredths so breakdowns and totals agree to the digit. */
export function levelWeight(field: MatchField, level: string): number {
  if (level === 'missing') return 0;
  const probabilities = (FIELD_LEVELS[field] as Record<string, LevelProbabilities>)[level];
  if (!probabilities) throw new Error(`No level ${level} for ${field}`);
  return Math.round(Math.log2(probabilities.m / probabilities.u) * 100) / 100;
}

/**
 * Total weight thresholds. Certain needs corroboration beyond name and birth date (an address, a
 * phone or an identifier); name and birth date alone are probable.
 */
export const GRADE_THRESHOLDS = { certain: 30, probable: 22, possible: 14 } as const;

/**
 * The prior odds of a match among the pairs blocking lets through, as a power of two (about one
 * in a million): `search.score` is the posterior probability 2^(W-20) / (1 + 2^(W-20)).
 */
export const PRIOR_ODDS_LOG2 = -20;

export function scoreOf(weight: number): number {
  const odds = 2 ** (weight + PRIOR_ODDS_LOG2);
  return Math.round((odds / (1 + odds)) * 10_000) / 10_000;
}

export function gradeOf(weight: number): MatchGrade {
  if (weight >= GRADE_THRESHOLDS.certain) return 'certain';
  if (weight >= GRADE_THRESHOLDS.probable) return 'probable';
  if (weight >= GRADE_THRESHOLDS.possible) return 'possible';
  return 'certainly-not';
}

const RANK: Record<MatchGrade, number> = { certain: 3, probable: 2, possible: 1, 'certainly-not': 0 };

export function atMost(grade: MatchGrade, cap: MatchGrade): MatchGrade {
  return RANK[grade] > RANK[cap] ? cap : grade;
}

export function gradeRank(grade: MatchGrade): number {
  return RANK[grade];
}
