import { describe, expect, it } from 'vitest';
import { toJson } from '../../api/http/json';
import { searchsetBundle } from '../../fhir/searchset';
import { loadFhirStore } from '../../fixtures/store';

const store = loadFhirStore();

describe('response JSON', () => {
  it('writes exactly what JSON.stringify writes, for every fixture resource in a page, twice (the second time from its kept text)', () => {
    for (const type of store.supportedTypes) {
      const page = { data: store.list(type).slice(0, 200), next_cursor: 'eyJhZnRlciI6IngifQ' };
      expect(toJson(page)).toBe(JSON.stringify(page));
      expect(toJson(page)).toBe(JSON.stringify(page));
    }
  });

  it('handles a searchset Bundle, dates, undefined members and deep objects the way JSON.stringify does', () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'searchset',
      total: 3,
      entry: store
        .listForPatient('Observation', 'syn-pat-0001')
        .map((resource) => ({ fullUrl: `x/${resource.id}`, resource, search: { mode: 'match' } })),
      meta: { lastUpdated: new Date(0), skipped: undefined, deep: { deeper: { deepest: [1, undefined, null, 'a'] } } },
    };
    expect(toJson(bundle)).toBe(JSON.stringify(bundle));
    expect(toJson([undefined, () => 1, 'a', 2, true, null])).toBe(JSON.stringify([undefined, () => 1, 'a', 2, true, null]));
  });
});

describe('searchset JSON', () => {
  it("writes a searchset of fixture resources as JSON.stringify does, from each match entry's kept text on later searches", () => {
    const search = (fhirBase: string) =>
      searchsetBundle({
        fhirBase,
        resourceType: 'Observation',
        applied: [['patient', 'syn-pat-0001']],
        matches: store.listForPatient('Observation', 'syn-pat-0001'),
        count: 50,
        offset: 0,
      });
    const first = search('http://sandbox.test/fhir/R4');
    const again = search('http://sandbox.test/fhir/R4');
    expect(toJson(first)).toBe(JSON.stringify(first));
    expect(toJson(again)).toBe(JSON.stringify(again));
    // The same entries, frozen: their text is written once, not walked at every search.
    expect(again.entry![0]).toBe(first.entry![0]);
    expect(Object.isFrozen(again.entry![0])).toBe(true);
    // Another base gets entries with its own URLs.
    const elsewhere = search('http://other.test/fhir/R4');
    expect(elsewhere.entry![0]!.fullUrl).toBe(`http://other.test/fhir/R4/Observation/${first.entry![0]!.resource!.id}`);
    expect(toJson(elsewhere)).toBe(JSON.stringify(elsewhere));
  });
});
