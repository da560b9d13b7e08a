import type { Patient } from 'fhir/r4';
import { z } from 'zod';
import { asFhirJson, fhirResourceSchema } from '../../fhir/resource-json';
import type { FhirStore } from '../../fixtures/store';
import { pageOfSorted, pageQuerySchema, pageSchema } from '../http/pagination';
import { defineRoute } from '../http/route';
import { resourceNotFound } from './world-lookups';

const GENDERS = ['male', 'female', 'other', 'unknown'] as const;
const BIRTHDATE = /^(eq|ge|le|gt|lt)?(\d{4})(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$/;

const patientSchema = fhirResourceSchema
  .extend({ resourceType: z.literal('Patient'), id: z.string().meta({ example: 'syn-pat-0001' }) })
  .meta({ id: 'FhirPatient', description: 'A synthetic FHIR R4 Patient; its id is stable across runs and releases of the same fixtures' });

const patientSearchSchema = pageQuerySchema
  .extend({
    name: z.string().trim().min(1, 'name must not be empty').max(100).optional().meta({
      description: 'Every word must start a given or family name, case-insensitively (`ava`, `Ava Smi`)',
    }),
    birthdate: z
      .string()
      .regex(BIRTHDATE, 'birthdate must be YYYY, YYYY-MM or YYYY-MM-DD, optionally prefixed by eq, ge, le, gt or lt (e.g. ge1960)')
      .optional()
      .meta({ description: 'FHIR date search: `1958`, `1958-03`, `1958-03-14`, or with a prefix, `ge1960`, `lt2000-01-01`', example: 'ge1960' }),
    gender: z.enum(GENDERS, { message: `gender must be one of ${GENDERS.join(', ')}` }).optional(),
    identifier: z.string().min(1).optional().meta({ description: 'An identifier `value`, or `system|value`', example: 'MRN1007919' }),
  })
  .strict();

type PatientSearch = z.output<typeof patientSearchSchema>;

function words(text: string): string[] {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .split(/[\s\-']+/)
    .filter(Boolean);
}

interface IndexedPatient {
  patient: Patient;
  nameWords: string[];
  identifiers: Set<string>;
}

function indexPatient(patient: Patient): IndexedPatient {
  const parts = (patient.name ?? []).flatMap((name) => [...(name.given ?? []), name.family ?? '']);
  return {
    patient,
    nameWords: parts.flatMap(words),
    identifiers: new Set(
      (patient.identifier ?? []).flatMap((identifier) => [identifier.value ?? '', `${identifier.system ?? ''}|${identifier.value ?? ''}`]),
    ),
  };
}

/**
 * Every word of the patients' names, sorted, each with the positions (in the store's id order) of the
 * patients whose names have it: the words starting with a search word are one run of the sorted list,
 * found by binary search, instead of every word of every patient tried in turn.
 */
class NameWordIndex {
  private readonly words: string[];
  private readonly positions: number[][];

  constructor(entries: readonly IndexedPatient[]) {
    const byWord = new Map<string, number[]>();
    entries.forEach((entry, position) => {
      for (const word of new Set(entry.nameWords)) {
        const list = byWord.get(word);
        if (list) list.push(position);
        else byWord.set(word, [position]);
      }
    });
    this.words = [...byWord.keys()].sort();
    this.positions = this.words.map((word) => byWord.get(word)!);
  }

  /** The positions, ascending, of the patients with a name word starting with each of `wanted`; undefined (everyone) when it is empty. */
  matching(wanted: readonly string[]): number[] | undefined {
    let result: number[] | undefined;
    for (const prefix of wanted) {
      const found = new Set<number>();
      for (let index = this.firstAtOrAfter(prefix); index < this.words.length && this.words[index]!.startsWith(prefix); index += 1) {
        for (const position of this.positions[index]!) found.add(position);
      }
      result = (result ?? [...found].sort((a, b) => a - b)).filter((position) => found.has(position));
    }
    return result;
  }

  private firstAtOrAfter(prefix: string): number {
    let start = 0;
    let end = this.words.length;
    while (start < end) {
      const middle = (start + end) >>> 1;
      if (this.words[middle]! < prefix) start = middle + 1;
      else end = middle;
    }
    return start;
  }
}

/** The FHIR date-search bounds of a partial date: `1958-03` covers 1958-03-01 to 1958-03-31. */
function birthDateMatcher(search: string): (birthDate: string | undefined) => boolean {
  const [, prefix = 'eq', year, , month, , day] = BIRTHDATE.exec(search)!;
  const low = `${year}-${month ?? '01'}-${day ?? '01'}`;
  const high = `${year}-${month ?? '12'}-${day ?? '31'}`;
  const test: Record<string, (date: string) => boolean> = {
    eq: (date) => date >= low && date <= high,
    ge: (date) => date >= low,
    le: (date) => date <= high,
    gt: (date) => date > high,
    lt: (date) => date < low,
  };
  return (birthDate) => birthDate !== undefined && test[prefix]!(birthDate);
}

/** The search's checks but the name's, which NameWordIndex answers. */
function matcher(search: PatientSearch): (entry: IndexedPatient) => boolean {
  const checks: ((entry: IndexedPatient) => boolean)[] = [];
  if (search.birthdate !== undefined) {
    const matches = birthDateMatcher(search.birthdate);
    checks.push((entry) => matches(entry.patient.birthDate));
  }
  if (search.gender !== undefined) checks.push((entry) => entry.patient.gender === search.gender);
  if (search.identifier !== undefined) checks.push((entry) => entry.identifiers.has(search.identifier!));
  return (entry) => checks.every((check) => check(entry));
}

/** `GET /v1/patients` and `/v1/patients/{id}`: the synthetic patients, the first request every partner makes. */
export function patientRoutes({ fhirStore }: { fhirStore: FhirStore }) {
  const indexed = fhirStore.patients().map(indexPatient);
  const names = new NameWordIndex(indexed);

  return [
    defineRoute({
      method: 'get',
      path: '/v1/patients',
      operationId: 'listPatients',
      summary: 'List or search the synthetic patients, by id',
      description:
        'Search by `name`, `birthdate`, `gender` and `identifier` (all must match). The same patients for every organization; ids never change for a given fixture release.',
      tag: 'Synthetic FHIR',
      auth: 'api_key',
      query: patientSearchSchema,
      success: { status: 200, description: 'A page of patients', schema: pageSchema(patientSchema) },
      errors: [400, 422],
      handler: async ({ query }) => {
        // Every word must start a given or family name.
        const named = query.name === undefined ? undefined : names.matching(words(query.name));
        const candidates = named ? named.map((position) => indexed[position]!) : indexed;
        const page = pageOfSorted(
          candidates.filter(matcher(query)).map((entry) => entry.patient),
          query,
        );
        return { data: page.data.map((patient) => asFhirJson(patient) as z.input<typeof patientSchema>), next_cursor: page.next_cursor };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/patients/{id}',
      operationId: 'getPatient',
      summary: 'Read one synthetic patient',
      tag: 'Synthetic FHIR',
      auth: 'api_key',
      params: z.object({ id: z.string().meta({ example: 'syn-pat-0001' }) }),
      success: { status: 200, description: 'The patient', schema: patientSchema },
      errors: [404],
      handler: async ({ params }) => {
        const patient = fhirStore.read('Patient', params.id);
        if (!patient) throw resourceNotFound('Patient', params.id);
        return asFhirJson(patient) as z.input<typeof patientSchema>;
      },
    }),
  ];
}
