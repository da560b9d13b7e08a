import { randomUUID } from 'node:crypto';
import type { Bundle, BundleEntry, BundleLink, FhirResource, OperationOutcome } from 'fhir/r4';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/**
 * A searchset Bundle for one page of matches: `total` counts every match; `self` repeats the
 * parameters that were applied, `next`/`previous` page through the same search. The fixtures do
 * not change while the process runs, so an offset is a stable page position.
 */
export function searchsetBundle(options: {
  fhirBase: string;
  resourceType: string;
  /** The parameters applied, in order, without paging ones. */
  applied: [string, string][];
  matches: readonly FhirResource[];
  count: number;
  offset: number;
  /** Warnings about the search (parameters it ignored), as an OperationOutcome entry with search mode `outcome`. */
  outcome?: OperationOutcome;
}): Bundle {
  const { fhirBase, resourceType, applied, matches, count, offset } = options;
  const pageUrl = (pageOffset: number) => {
    const params = new URLSearchParams(applied);
    params.set('_count', String(count));
    if (pageOffset > 0) params.set('_offset', String(pageOffset));
    return `${fhirBase}/${resourceType}?${params.toString()}`;
  };
  const page = matches.slice(offset, offset + count);
  const link: BundleLink[] = [{ relation: 'self', url: pageUrl(offset) }];
  if (count > 0 && offset + count < matches.length) link.push({ relation: 'next', url: pageUrl(offset + count) });
  if (count > 0 && offset > 0) link.push({ relation: 'previous', url: pageUrl(Math.max(0, offset - count)) });
  return {
    resourceType: 'Bundle',
    id: randomUUID(),
    meta: { lastUpdated: new Date().toISOString() },
    type: 'searchset',
    total: matches.length,
    link,
    entry: [
      ...page.map((resource) => matchEntry(fhirBase, resource)),
      ...(options.outcome ? [{ resource: options.outcome, search: { mode: 'outcome' as const } }] : []),
    ],
  };
}

/**
 * The fixture resources are frozen and shared by every request (fixtures/store.ts), so each one's
 * match entry is made once and frozen too: the response's JSON then reuses the entry's text
 * (api/http/json.ts) instead of walking 50 entries at every search.
 */
const matchEntries = new WeakMap<FhirResource, BundleEntry>();

function matchEntry(fhirBase: string, resource: FhirResource): BundleEntry {
  const fullUrl = `${fhirBase}/${resource.resourceType}/${resource.id}`;
  if (!Object.isFrozen(resource)) return { fullUrl, resource, search: { mode: 'match' } };
  const kept = matchEntries.get(resource);
  if (kept?.fullUrl === fullUrl) return kept;
  const entry: BundleEntry = Object.freeze({ fullUrl, resource, search: Object.freeze({ mode: 'match' as const }) });
  matchEntries.set(resource, entry);
  return entry;
}
