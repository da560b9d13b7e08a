import { describe, expect, it } from 'vitest';
import { toJson } from '../../api/http/json';
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
