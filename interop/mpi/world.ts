import type { Patient } from 'fhir/r4';
import { loadNearDuplicates } from '../../fixtures/near-duplicates';
import type { FhirStore } from '../../fixtures/store';
import { createMpiIndex, type MpiIndex } from './mpi-index';

export interface WorldMpi {
  index: MpiIndex;
  /** A record of the index by id: a world patient or a near-duplicate. */
  record(id: string): Patient | undefined;
}

const built = new WeakMap<FhirStore, WorldMpi>();

/** The index over the world's patients and their near-duplicates, built once per store. */
export function worldMpi(store: FhirStore): WorldMpi {
  let mpi = built.get(store);
  if (!mpi) {
    const records = [...store.patients(), ...loadNearDuplicates()];
    const byId = new Map(records.map((record) => [record.id!, record]));
    mpi = { index: createMpiIndex(records), record: (id) => byId.get(id) };
    built.set(store, mpi);
  }
  return mpi;
}
