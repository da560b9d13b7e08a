import type { Patient } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { loadNearDuplicates, NEAR_DUPLICATE_CASES } from '../../fixtures/near-duplicates';
import { loadFhirStore } from '../../fixtures/store';
import { demographicsOf } from '../../interop/mpi/demographics';
import { createMpiIndex, scorePair } from '../../interop/mpi/mpi-index';
import { fhirErrors } from '../support/fhir-validator';

/** The MPI index and the near-duplicates it is graded on; mpi.test.ts matches them through the API. */
const store = loadFhirStore();
const nearDuplicates = loadNearDuplicates();
const patient = (id: string) => store.read('Patient', id) as Patient;
const record = (id: string) => nearDuplicates.find((candidate) => candidate.id === id)!;

describe('the near-duplicates of the synthetic world', () => {
  it('are valid FHIR R4 Patients, tagged synthetic, one per documented case', () => {
    expect(nearDuplicates.map((duplicate) => duplicate.id)).toEqual(NEAR_DUPLICATE_CASES.map((testCase) => testCase.id));
    for (const duplicate of nearDuplicates) {
      expect(fhirErrors(duplicate), duplicate.id).toEqual([]);
      expect(duplicate.meta?.tag).toContainEqual(expect.objectContaining({ code: 'synthetic' }));
    }
    expect(record('syn-mpi-0007')).toMatchObject({ active: false, link: [{ other: { reference: 'Patient/syn-pat-0005' }, type: 'replaced-by' }] });
  });

  it('never grades twins certain, whichever twin asks and however much else agrees', () => {
    const index = createMpiIndex([...store.patients(), ...nearDuplicates]);
    const [first, second] = [patient('syn-pat-0052'), record('syn-mpi-0004')];
    for (const [query, twin] of [
      [first, second],
      [second, first],
    ] as const) {
      const candidate = index.match(demographicsOf(query)).candidates.find((entry) => entry.patient.id === twin.id)!;
      expect(candidate.grade).toBe('possible');
      expect(candidate.weight).toBeGreaterThan(30);
      expect(candidate.caps).toEqual([expect.stringContaining('twins')]);
      expect(candidate.score).toBeLessThan(0.8);
    }
    const sameEverythingButGiven = scorePair(
      demographicsOf(first),
      demographicsOf({ ...first, name: [{ family: first.name![0]!.family, given: ['Tiana'] }] }),
    );
    expect(sameEverythingButGiven.grade).toBe('possible');
  });
});

describe('the MPI index', () => {
  it('explains the swapped day and month, and a typo by Jaro-Winkler and Double Metaphone', () => {
    const index = createMpiIndex([...store.patients(), ...nearDuplicates]);
    const swapped = index.match(demographicsOf(patient('syn-pat-0032'))).candidates.find((entry) => entry.patient.id === 'syn-mpi-0005')!;
    expect(swapped.fields.find((field) => field.field === 'birthDate')).toMatchObject({ level: 'transposed' });
    const typo = index.match(demographicsOf(patient('syn-pat-0013'))).candidates.find((entry) => entry.patient.id === 'syn-mpi-0001')!;
    expect(typo.fields.find((field) => field.field === 'family')).toMatchObject({ level: 'close', phonetic: ['NKLS', 'NKLS'] });
  });

  it('compares a request only with the records blocking lets through', () => {
    const index = createMpiIndex([...store.patients(), ...nearDuplicates]);
    const result = index.match(demographicsOf(patient('syn-pat-0001')));
    expect(result.compared).toBeLessThan(10);
    expect(index.size).toBe(108);
  });
});
