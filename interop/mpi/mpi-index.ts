import type { Patient } from 'fhir/r4';
import { compareDemographics, type FieldComparison, phoneticCode } from './compare';
import { type Demographics, demographicsOf } from './demographics';
import { atMost, GRADE_THRESHOLDS, gradeOf, gradeRank, type MatchGrade, scoreOf } from './model';

/**
 * The master patient index: records indexed by blocking keys, so a request is compared only with
 * the records that share a key with it (a birth date, the same date with day and month swapped,
 * the sound of the names, a phone number, an identifier), never with the whole index.
 */

export interface MatchOptions {
  onlyCertainMatches?: boolean;
  /** At most this many candidates, best first. */
  count?: number;
}

export interface MatchCandidate {
  /** The record the match names: a merged record's surviving one. */
  patient: Patient;
  weight: number;
  score: number;
  grade: MatchGrade;
  fields: FieldComparison[];
  /** Rules that lowered the grade the weight alone would give. */
  caps: string[];
  /** The merged record (Patient.link `replaced-by`) the request matched, when it was one. */
  via?: string;
}

export interface MatchResult {
  candidates: MatchCandidate[];
  /** How many records blocking let through to be compared. */
  compared: number;
  /**
   * With `onlyCertainMatches`, how many records were certain when more than one was: IHE ITI-119
   * answers none then, since the client asked for the one record that is surely the patient.
   */
  ambiguousCertainMatches?: number;
}

export interface MpiIndex {
  readonly size: number;
  match(query: Demographics, options?: MatchOptions): MatchResult;
}

interface IndexedRecord {
  patient: Patient;
  demographics: Demographics;
  /** The surviving record's id, for a record merged into another. */
  replacedBy?: string;
}

function swapDayMonth(birthDate: string): string | undefined {
  const [year, month, day] = birthDate.split('-');
  if (month === day || Number(day) > 12) return undefined;
  return `${year}-${day}-${month}`;
}

function blockingKeys(demographics: Demographics, asQuery: boolean): string[] {
  const keys: string[] = [];
  const { birthDate, family, given, phone } = demographics;
  if (birthDate) {
    keys.push(`d:${birthDate}`);
    const swapped = asQuery ? swapDayMonth(birthDate) : undefined;
    if (swapped) keys.push(`d:${swapped}`);
  }
  if (family) {
    const familyCode = phoneticCode(family);
    if (given[0]) keys.push(`n:${familyCode}:${phoneticCode(given[0])}`);
    if (birthDate) keys.push(`f:${familyCode}:${birthDate.slice(0, 4)}`);
  }
  if (phone) keys.push(`p:${phone}`);
  for (const identifier of demographics.identifiers) keys.push(`i:${identifier.system}|${identifier.value}`);
  return keys;
}

const TWIN_RULE = 'given names disagree: at most possible, since twins share family name, birth date, address and phone';

export function scorePair(query: Demographics, record: Demographics): Omit<MatchCandidate, 'patient' | 'via'> {
  const fields = compareDemographics(query, record);
  const weight = Math.round(fields.reduce((total, field) => total + field.weight, 0) * 100) / 100;
  const caps: string[] = [];
  let grade = gradeOf(weight);
  if (fields.find((field) => field.field === 'given')?.level === 'different' && grade !== 'certainly-not') {
    const capped = atMost(grade, 'possible');
    if (capped !== grade) caps.push(TWIN_RULE);
    grade = capped;
  }
  // A capped pair's score stays below the lowest score of the grade it was kept from.
  const score = caps.length > 0 ? Math.min(scoreOf(weight), scoreOf(GRADE_THRESHOLDS.probable) - 0.0001) : scoreOf(weight);
  return { weight, score, grade, fields, caps };
}

export function createMpiIndex(patients: readonly Patient[]): MpiIndex {
  const records: IndexedRecord[] = [];
  const byId = new Map<string, Patient>();
  const blocks = new Map<string, number[]>();
  for (const patient of patients) {
    const replacedBy = patient.active === false ? patient.link?.find((link) => link.type === 'replaced-by')?.other.reference : undefined;
    const position = records.length;
    records.push({ patient, demographics: demographicsOf(patient), ...(replacedBy ? { replacedBy: replacedBy.replace(/^Patient\//, '') } : {}) });
    byId.set(patient.id!, patient);
    for (const key of new Set(blockingKeys(records[position]!.demographics, false))) {
      const block = blocks.get(key);
      if (block) block.push(position);
      else blocks.set(key, [position]);
    }
  }

  return {
    size: records.length,
    match(query, options = {}) {
      const positions = new Set<number>();
      for (const key of blockingKeys(query, true)) for (const position of blocks.get(key) ?? []) positions.add(position);
      const best = new Map<string, MatchCandidate>();
      for (const position of positions) {
        const record = records[position]!;
        const surviving = record.replacedBy ? byId.get(record.replacedBy) : record.patient;
        if (!surviving) continue;
        const scored = scorePair(query, record.demographics);
        const candidate: MatchCandidate = { patient: surviving, ...scored, ...(record.replacedBy ? { via: record.patient.id! } : {}) };
        const previous = best.get(surviving.id!);
        if (!previous || candidate.weight > previous.weight) best.set(surviving.id!, candidate);
      }
      const kept = [...best.values()].filter(
        (candidate) => candidate.grade !== 'certainly-not' && (!options.onlyCertainMatches || candidate.grade === 'certain'),
      );
      if (options.onlyCertainMatches && kept.length > 1) return { candidates: [], compared: positions.size, ambiguousCertainMatches: kept.length };
      const candidates = kept
        .sort(
          (a, b) =>
            gradeRank(b.grade) - gradeRank(a.grade) ||
            b.weight - a.weight ||
            (a.patient.id! < b.patient.id! ? -1 : a.patient.id! > b.patient.id! ? 1 : 0),
        )
        .slice(0, options.count ?? Number.POSITIVE_INFINITY);
      return { candidates, compared: positions.size };
    },
  };
}
