import { jaroWinkler } from '@skyra/jaro-winkler';
import { doubleMetaphone } from 'double-metaphone';
import type { Demographics } from './demographics';
import { levelWeight, type MatchField } from './model';
import { areNicknames } from './nicknames';

/** Jaro-Winkler similarity from which two names count as `close` (a typo, a dropped letter). */
export const CLOSE_NAME_SIMILARITY = 0.9;
/** Jaro-Winkler similarity from which two street lines in one postal code count as the same address. */
export const SAME_STREET_SIMILARITY = 0.93;

/** How one field of a pair compared: its level, the weight that level adds, and why. */
export interface FieldComparison {
  field: MatchField;
  level: string;
  weight: number;
  /** Jaro-Winkler similarity of the two values, where names or streets were compared. */
  similarity?: number;
  /** Double Metaphone codes of both values, for names. */
  phonetic?: [string, string];
  detail: string;
}

export function phoneticCode(name: string): string {
  return doubleMetaphone(name.replace(/ /g, ''))[0];
}

const round = (value: number) => Math.round(value * 1000) / 1000;

function result(field: MatchField, level: string, detail: string, extra: Partial<FieldComparison> = {}): FieldComparison {
  return { field, level, weight: levelWeight(field, level), detail, ...extra };
}

function missing(field: MatchField, side: 'query' | 'record' | 'both'): FieldComparison {
  return result(field, 'missing', side === 'both' ? 'missing on both sides' : `missing on the ${side}`);
}

function sideMissing(a: unknown, b: unknown): 'query' | 'record' | 'both' | undefined {
  if (a === undefined && b === undefined) return 'both';
  if (a === undefined) return 'query';
  if (b === undefined) return 'record';
  return undefined;
}

function compareNames(field: 'family' | 'given', a: string, b: string): FieldComparison {
  const similarity = round(jaroWinkler(a, b));
  const phonetic: [string, string] = [phoneticCode(a), phoneticCode(b)];
  const extra = { similarity, phonetic };
  if (a === b) return result(field, 'exact', `${a} = ${b}`, extra);
  // A double-barrelled family name matches either of its parts (Hessel-Kozey, Kozey).
  if (field === 'family' && (a.split(' ').includes(b) || b.split(' ').includes(a))) return result(field, 'exact', `${a} contains ${b}`, extra);
  if (field === 'given' && areNicknames(a, b)) return result(field, 'nickname', `${a} and ${b} are forms of one name`, extra);
  const soundsAlike = phonetic[0] !== '' && phonetic[0] === phonetic[1];
  if (similarity >= CLOSE_NAME_SIMILARITY || soundsAlike) {
    return result(field, 'close', `${a} ~ ${b}: Jaro-Winkler ${similarity}, Double Metaphone ${phonetic[0]} / ${phonetic[1]}`, extra);
  }
  return result(field, 'different', `${a} ≠ ${b}: Jaro-Winkler ${similarity}, Double Metaphone ${phonetic[0]} / ${phonetic[1]}`, extra);
}

function compareGiven(query: string[], record: string[]): FieldComparison {
  const gap = sideMissing(query[0], record[0]);
  if (gap) return missing('given', gap);
  return compareNames('given', query[0]!, record[0]!);
}

function compareBirthDate(a: string | undefined, b: string | undefined): FieldComparison {
  const gap = sideMissing(a, b);
  if (gap) return missing('birthDate', gap);
  if (a === b) return result('birthDate', 'exact', `${a} = ${b}`);
  const [ya, ma, da] = a!.split('-');
  const [yb, mb, db] = b!.split('-');
  if (ya === yb && ma === db && da === mb) return result('birthDate', 'transposed', `${a} and ${b}: day and month swapped`);
  const same = [ya === yb, ma === mb, da === db].filter(Boolean).length;
  if (same === 2) return result('birthDate', 'partial', `${a} ~ ${b}: two of year, month and day agree`);
  return result('birthDate', 'different', `${a} ≠ ${b}`);
}

function compareAddress(a: Demographics['address'], b: Demographics['address']): FieldComparison {
  const gap = sideMissing(a, b);
  if (gap) return missing('address', gap);
  const similarity = a!.line && b!.line ? round(jaroWinkler(a!.line, b!.line)) : undefined;
  const samePlace = (a!.postalCode && a!.postalCode === b!.postalCode) || (a!.city && a!.city === b!.city);
  const extra = similarity === undefined ? {} : { similarity };
  if (samePlace && similarity !== undefined && similarity >= SAME_STREET_SIMILARITY) {
    return result('address', 'exact', `same street line (Jaro-Winkler ${similarity}) in the same postal code or city`, extra);
  }
  if (samePlace) return result('address', 'partial', 'same postal code or city, another street line', extra);
  return result('address', 'different', 'another postal code and city', extra);
}

function compareSimple(field: 'gender' | 'phone', a: string | undefined, b: string | undefined): FieldComparison {
  const gap = sideMissing(a, b);
  if (gap) return missing(field, gap);
  return a === b ? result(field, 'exact', `${a} = ${b}`) : result(field, 'different', `${a} ≠ ${b}`);
}

/** Identifiers are compared only within a shared system: an MRN of another facility says nothing. */
function compareIdentifiers(query: Demographics['identifiers'], record: Demographics['identifiers']): FieldComparison {
  const shared = query.filter((identifier) => record.some((other) => other.system === identifier.system));
  if (shared.length === 0) return result('identifier', 'missing', 'no identifier system in common');
  const agreeing = shared.find((identifier) => record.some((other) => other.system === identifier.system && other.value === identifier.value));
  if (agreeing) return result('identifier', 'exact', `${agreeing.system}|${agreeing.value} on both`);
  return result('identifier', 'different', `another value in ${shared[0]!.system}`);
}

/** Every field of a pair, in MATCH_FIELDS order. */
export function compareDemographics(query: Demographics, record: Demographics): FieldComparison[] {
  return [
    query.family !== undefined && record.family !== undefined
      ? compareNames('family', query.family, record.family)
      : missing('family', sideMissing(query.family, record.family)!),
    compareGiven(query.given, record.given),
    compareBirthDate(query.birthDate, record.birthDate),
    compareSimple('gender', query.gender, record.gender),
    compareAddress(query.address, record.address),
    compareSimple('phone', query.phone, record.phone),
    compareIdentifiers(query.identifiers, record.identifiers),
  ];
}
