import type { CodeableConcept, Coding, FhirResource, HumanName, Identifier, Period } from 'fhir/r4';

/**
 * The FHIR search parameters this endpoint evaluates, per resource type, over the in-memory
 * fixtures: token parameters (`system|code`, `code`, `|code`, `system|`), date parameters with the
 * R4 prefixes (eq, ne, gt, lt, ge, le) and string parameters (case- and accent-insensitive
 * "starts with"). Granular SMART scopes and the patient picker's search use the same code.
 */

// biome-ignore lint/suspicious/noExplicitAny: each accessor reads the fields of its own resource types, which share no useful static type
type AnyResource = any;
type Token = { system?: string | undefined; code?: string | undefined };
type Range = { start: number; end: number };

interface TokenParameter {
  type: 'token';
  tokens(resource: AnyResource): Token[];
}
interface DateParameter {
  type: 'date';
  ranges(resource: AnyResource): Range[];
}
interface StringParameter {
  type: 'string';
  strings(resource: AnyResource): string[];
}
export type SearchParameterDefinition = (TokenParameter | DateParameter | StringParameter) & { description: string };

const concepts = (...values: (CodeableConcept | CodeableConcept[] | undefined)[]): Token[] =>
  values.flat().flatMap((concept) => (concept?.coding ?? []).map((coding) => ({ system: coding.system, code: coding.code })));
const codings = (...values: (Coding | Coding[] | undefined)[]): Token[] =>
  values.flat().flatMap((coding) => (coding ? [{ system: coding.system, code: coding.code }] : []));
const codes = (...values: (string | undefined)[]): Token[] => values.flatMap((code) => (code === undefined ? [] : [{ code }]));
const dates = (...values: (string | Period | undefined)[]): Range[] =>
  values.flatMap((value) =>
    (value === undefined ? [] : [typeof value === 'string' ? dateRange(value) : periodRange(value)]).filter(
      (range): range is Range => range !== null,
    ),
  );

const identifiers = (values: Identifier[] | undefined): Token[] =>
  (values ?? []).map((identifier) => ({ system: identifier.system, code: identifier.value }));
const nameParts = (names: HumanName[] | undefined, part: 'family' | 'given' | 'all'): string[] =>
  (names ?? []).flatMap((name) => {
    const given = name.given ?? [];
    if (part === 'given') return given;
    if (part === 'family') return name.family ? [name.family] : [];
    return [...(name.text ? [name.text] : []), ...(name.family ? [name.family] : []), ...given, ...(name.prefix ?? []), ...(name.suffix ?? [])];
  });

const token = (description: string, tokens: (resource: AnyResource) => Token[]): SearchParameterDefinition => ({
  type: 'token',
  description,
  tokens,
});
const date = (description: string, ranges: (resource: AnyResource) => Range[]): SearchParameterDefinition => ({ type: 'date', description, ranges });
const string = (description: string, strings: (resource: AnyResource) => string[]): SearchParameterDefinition => ({
  type: 'string',
  description,
  strings,
});

const status = token('Status', (r) => codes(r.status));
const clinicalStatus = token('Clinical status', (r) => concepts(r.clinicalStatus));

/** Type-specific parameters; every type also has `_id` and `patient` (see the FHIR router). */
const SEARCH_PARAMETERS: Record<string, Record<string, SearchParameterDefinition>> = {
  Observation: {
    category: token('Classification of the observation', (r) => concepts(r.category)),
    code: token('The code of the observation', (r) => concepts(r.code)),
    date: date('Clinically relevant time of the observation', (r) => dates(r.effectiveDateTime, r.effectivePeriod, r.effectiveInstant)),
    status,
  },
  Condition: {
    category: token('Category of the condition', (r) => concepts(r.category)),
    code: token('Code of the condition', (r) => concepts(r.code)),
    'clinical-status': clinicalStatus,
    'onset-date': date('Date of onset', (r) => dates(r.onsetDateTime, r.onsetPeriod)),
  },
  Encounter: {
    class: token('Classification of the encounter', (r) => codings(r.class)),
    type: token('Specific type of encounter', (r) => concepts(r.type)),
    date: date('When the encounter took place', (r) => dates(r.period)),
    status,
  },
  AllergyIntolerance: {
    code: token('Code of the allergy or intolerance', (r) => concepts(r.code)),
    'clinical-status': clinicalStatus,
  },
  MedicationRequest: {
    code: token('Medication code', (r) => concepts(r.medicationCodeableConcept)),
    authoredon: date('When the prescription was written', (r) => dates(r.authoredOn)),
    intent: token('Intent of the request', (r) => codes(r.intent)),
    status,
  },
  Procedure: {
    code: token('Code of the procedure', (r) => concepts(r.code)),
    date: date('When the procedure was performed', (r) => dates(r.performedDateTime, r.performedPeriod)),
    status,
  },
  Immunization: {
    'vaccine-code': token('Vaccine product administered', (r) => concepts(r.vaccineCode)),
    date: date('When the vaccination occurred', (r) => dates(r.occurrenceDateTime)),
    status,
  },
  DiagnosticReport: {
    category: token('Service category', (r) => concepts(r.category)),
    code: token('The code of the report', (r) => concepts(r.code)),
    date: date('Clinically relevant time of the report', (r) => dates(r.effectiveDateTime, r.effectivePeriod)),
    status,
  },
  DocumentReference: {
    category: token('Categorization of the document', (r) => concepts(r.category)),
    type: token('Kind of document', (r) => concepts(r.type)),
    date: date('When the reference was created', (r) => dates(r.date)),
    status,
  },
  Patient: {
    identifier: token('A patient identifier', (r) => identifiers(r.identifier)),
    name: string('Any part of a name', (r) => nameParts(r.name, 'all')),
    family: string('Family name', (r) => nameParts(r.name, 'family')),
    given: string('Given name', (r) => nameParts(r.name, 'given')),
    gender: token('Administrative gender', (r) => codes(r.gender)),
    birthdate: date('Date of birth', (r) => dates(r.birthDate)),
  },
};

/** `_id`, which every type has (FHIR's common parameters); the Patient compartment applies it to Patient itself. */
export const ID_PARAMETER = token('Logical id', (r) => codes(r.id));

export function searchParametersOf(resourceType: string): Record<string, SearchParameterDefinition> {
  return SEARCH_PARAMETERS[resourceType] ?? {};
}

/** Whether every parameter of a granular scope filter is one this endpoint evaluates for the type. */
export function canEvaluate(resourceType: string, filter: [string, string][]): boolean {
  const known = searchParametersOf(resourceType);
  return filter.every(([name, value]) => Object.hasOwn(known, name) && parseValues(known[name]!, value) !== null);
}

export type Criterion = (resource: FhirResource) => boolean;

/**
 * A criterion for one `name=value` pair (comma-separated values are alternatives), or null when
 * the value cannot be read (an unknown date format, a bad prefix).
 */
export function criterion(definition: SearchParameterDefinition, value: string): Criterion | null {
  const alternatives = parseValues(definition, value);
  if (alternatives === null) return null;
  return (resource) => alternatives.some((matches) => matches(resource));
}

function parseValues(definition: SearchParameterDefinition, value: string): Criterion[] | null {
  const parts = value.split(',');
  const parsed = parts.map((part) => {
    if (definition.type === 'token') return tokenCriterion(definition, part);
    if (definition.type === 'date') return dateCriterion(definition, part);
    return stringCriterion(definition, part);
  });
  return parsed.every((entry): entry is Criterion => entry !== null) ? parsed : null;
}

function tokenCriterion(definition: TokenParameter, value: string): Criterion | null {
  if (value === '') return null;
  const bar = value.indexOf('|');
  const wanted: Token = bar < 0 ? { code: value } : { system: value.slice(0, bar), code: value.slice(bar + 1) };
  return (resource) =>
    definition.tokens(resource).some((candidate) => {
      if (bar < 0) return candidate.code === wanted.code;
      if (wanted.system === '') return candidate.system === undefined && candidate.code === wanted.code;
      if (wanted.code === '') return candidate.system === wanted.system;
      return candidate.system === wanted.system && candidate.code === wanted.code;
    });
}

function stringCriterion(definition: StringParameter, value: string): Criterion | null {
  const wanted = foldCase(value.trim());
  if (wanted === '') return null;
  return (resource) => definition.strings(resource).some((candidate) => foldCase(candidate).startsWith(wanted));
}

/** FHIR string search ignores case and accents. */
function foldCase(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .toLowerCase();
}

const DATE_PREFIXES = ['eq', 'ne', 'gt', 'lt', 'ge', 'le'] as const;

function dateCriterion(definition: DateParameter, value: string): Criterion | null {
  const prefix = DATE_PREFIXES.find((candidate) => value.startsWith(candidate)) ?? 'eq';
  const wanted = dateRange(value.startsWith(prefix) ? value.slice(2) : value);
  if (!wanted) return null;
  const test = (target: Range): boolean => {
    switch (prefix) {
      case 'eq':
        return target.start >= wanted.start && target.end <= wanted.end;
      case 'ne':
        return !(target.start >= wanted.start && target.end <= wanted.end);
      case 'gt':
        return target.end > wanted.end;
      case 'lt':
        return target.start < wanted.start;
      case 'ge':
        return target.end > wanted.start;
      case 'le':
        return target.start < wanted.end;
    }
  };
  return (resource) => definition.ranges(resource).some(test);
}

const DATE_PATTERN = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

/** A FHIR date, dateTime or instant as the half-open interval its precision covers (UTC when no zone is given). */
function dateRange(value: string): Range | null {
  const match = DATE_PATTERN.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  const offset = zone && zone !== 'Z' ? (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000 : 0;
  const start = (y: number, mo = 1, d = 1, h = 0, mi = 0, s = 0, ms = 0) => Date.UTC(y, mo - 1, d, h, mi, s, ms) - offset;
  const y = Number(year);
  if (month === undefined) return { start: start(y), end: start(y + 1) };
  const mo = Number(month);
  if (day === undefined) return { start: start(y, mo), end: start(y, mo + 1) };
  const d = Number(day);
  if (hour === undefined) return { start: start(y, mo, d), end: start(y, mo, d + 1) };
  const [h, mi] = [Number(hour), Number(minute)];
  if (second === undefined) return { start: start(y, mo, d, h, mi), end: start(y, mo, d, h, mi + 1) };
  const ms = fraction ? Math.round(Number(fraction) * 1000) : 0;
  const at = start(y, mo, d, h, mi, Number(second), ms);
  return { start: at, end: at + (fraction ? 1 : 1000) };
}

function periodRange(period: Period): Range | null {
  const start = period.start ? dateRange(period.start) : null;
  const end = period.end ? dateRange(period.end) : null;
  if (!start && !end) return null;
  return { start: start?.start ?? Number.NEGATIVE_INFINITY, end: end?.end ?? Number.POSITIVE_INFINITY };
}
