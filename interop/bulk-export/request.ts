import { FhirError } from '../../fhir/operation-outcome';
import { criterion, ID_PARAMETER, searchParametersOf } from '../../fhir/search-parameters';
import type { ExportLevel } from './vocabulary';

/**
 * A FHIR Bulk Data 2.0 kick-off (`$export`), checked and resolved once, when it is made: the workflow
 * and its activities only carry it out. See docs/api/bulk-data.md.
 */
export interface ExportRequest {
  level: ExportLevel;
  /** The Group whose members are exported (`group` level). */
  groupId: string | null;
  /** The types written, one NDJSON file (or more) each, in this order. */
  types: string[];
  /** Only resources updated after this instant (`_since`). */
  since: string | null;
  /** Per type, the `_typeFilter` queries a resource must match one of (none: every resource of the type). */
  typeFilters: Record<string, string[]>;
  /** The kick-off URL, which the manifest repeats as `request`. */
  url: string;
}

/** What `_outputFormat` may say: NDJSON in any of its names (Bulk Data 2.0). */
export const OUTPUT_FORMATS = ['application/fhir+ndjson', 'application/ndjson', 'ndjson'] as const;

/** Bulk Data parameters this server does not offer: refused rather than ignored, so a client never gets less than it asked for unknowingly. */
const UNSUPPORTED_PARAMETERS = ['_elements', 'includeAssociatedData', 'patient', '_until', 'organizeOutputBy', 'allowPartialManifests'];

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;
/** A comma that starts the next query of a comma-separated `_typeFilter` (Bulk Data 2.0 allows both forms). */
const NEXT_QUERY = /,(?=[A-Z][A-Za-z]*\?)/;
const MAX_TYPE_FILTERS = 50;

/**
 * The kick-off's parameters, checked against what this level can export (`levelTypes`) and what the
 * token may (`allowedTypes`): anything wrong is a 400 (or 403 for types outside the scopes) saying what.
 */
export function parseKickOff(options: {
  level: ExportLevel;
  groupId: string | null;
  params: URLSearchParams;
  url: string;
  levelTypes: readonly string[];
  allowedTypes: readonly string[];
  servedTypes: readonly string[];
}): ExportRequest {
  const { params, level, levelTypes, allowedTypes } = options;
  for (const name of UNSUPPORTED_PARAMETERS) {
    if (params.has(name)) throw new FhirError(400, 'not-supported', `The ${name} parameter is not supported by this server; leave it out.`);
  }
  const formats = params.getAll('_outputFormat');
  for (const format of formats) {
    if (!(OUTPUT_FORMATS as readonly string[]).includes(format)) {
      throw new FhirError(400, 'not-supported', `_outputFormat=${format} is not supported; use ${OUTPUT_FORMATS.join(', ')}.`);
    }
  }
  const since = params.get('_since');
  if (since !== null && (!INSTANT.test(since) || Number.isNaN(Date.parse(since)))) {
    throw new FhirError(400, 'invalid', `_since must be a FHIR instant with a time zone, e.g. 2026-01-01T00:00:00Z (got ${since}).`);
  }
  const requested = params
    .getAll('_type')
    .flatMap((value) => value.split(','))
    .map((type) => type.trim())
    .filter((type) => type.length > 0);
  for (const type of requested) {
    if (!options.servedTypes.includes(type)) {
      throw new FhirError(400, 'not-supported', `_type names ${type}, which is not served here. Served: ${options.servedTypes.join(', ')}.`);
    }
    if (!levelTypes.includes(type)) {
      throw new FhirError(
        400,
        'not-supported',
        `_type names ${type}, which is no patient's data, so a ${level}-level export cannot hold it. It can: ${levelTypes.join(', ')}.`,
      );
    }
  }
  const refused = requested.filter((type) => !allowedTypes.includes(type));
  if (refused.length > 0) {
    throw new FhirError(
      403,
      'forbidden',
      `The token's scopes do not allow exporting ${refused.join(', ')}; it needs system/${refused[0]}.read (or system/*.rs).`,
    );
  }
  const types = requested.length > 0 ? [...new Set(requested)] : levelTypes.filter((type) => allowedTypes.includes(type));
  if (types.length === 0)
    throw new FhirError(
      403,
      'forbidden',
      'The token’s scopes allow exporting none of the types this export covers; it needs system/*.rs or system/<type>.read.',
    );
  return { level, groupId: options.groupId, types, since, typeFilters: typeFilters(params.getAll('_typeFilter'), types), url: options.url };
}

/** `_typeFilter` queries by type, each checked now: a type not exported, or a parameter this server cannot evaluate, is a 400. */
function typeFilters(values: string[], types: string[]): Record<string, string[]> {
  const queries = values.flatMap((value) => value.split(NEXT_QUERY)).filter((query) => query.length > 0);
  if (queries.length > MAX_TYPE_FILTERS)
    throw new FhirError(400, 'too-costly', `At most ${MAX_TYPE_FILTERS} _typeFilter queries are accepted (got ${queries.length}).`);
  const filters: Record<string, string[]> = {};
  for (const query of queries) {
    const mark = query.indexOf('?');
    const type = mark < 0 ? '' : query.slice(0, mark);
    if (!types.includes(type)) {
      throw new FhirError(
        400,
        'invalid',
        `_typeFilter ${query} must be <type>?<search parameters> for a type this export writes (${types.join(', ')}).`,
      );
    }
    const search = query.slice(mark + 1);
    typeFilterMatcher(type, search);
    filters[type] = [...(filters[type] ?? []), search];
  }
  return filters;
}

/** A `_typeFilter` query's criteria (every parameter must match), or a 400 naming the one this server cannot evaluate. */
export function typeFilterMatcher(type: string, query: string) {
  const definitions = searchParametersOf(type);
  const criteria = [...new URLSearchParams(query)].map(([name, value]) => {
    const definition = name === '_id' ? ID_PARAMETER : Object.hasOwn(definitions, name) ? definitions[name] : undefined;
    const parsed = definition ? criterion(definition, value) : null;
    if (!parsed) {
      throw new FhirError(
        400,
        'not-supported',
        `_typeFilter ${type}?${query}: ${name}=${value} cannot be evaluated. Supported for ${type}: _id, ${Object.keys(definitions).join(', ')}.`,
      );
    }
    return parsed;
  });
  if (criteria.length === 0) throw new FhirError(400, 'invalid', `_typeFilter ${type}? has no search parameters.`);
  return criteria;
}
