import { base, en, en_US, Faker } from '@faker-js/faker';
import type { Patient } from 'fhir/r4';
import { loadNearDuplicates } from '../fixtures/near-duplicates';
import { loadFhirStore } from '../fixtures/store';
import { SYNTHETIC_META } from '../fixtures/synthetic';
import { type Demographics, demographicsOf } from '../interop/mpi/demographics';
import { createMpiIndex, type MpiIndex } from '../interop/mpi/mpi-index';

/**
 * `npm run bench:mpi`: MPI matches per second in process, against the world's index (100 patients
 * and their near-duplicates) and against a generated index of BENCH_MPI_RECORDS (100,000) synthetic
 * patients, so the cost of growth is visible. Each run asks with every query in turn for
 * BENCH_SECONDS (2) after a warm-up.
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const generatedSize = Number(process.env.BENCH_MPI_RECORDS ?? 100_000);

function generatedPatients(count: number): Patient[] {
  const faker = new Faker({ locale: [en_US, en, base] });
  faker.seed(11);
  return Array.from({ length: count }, (_, index) => {
    const sex = faker.helpers.arrayElement(['male', 'female'] as const);
    return {
      resourceType: 'Patient',
      id: `bench-${index}`,
      meta: SYNTHETIC_META,
      name: [{ family: faker.person.lastName(), given: [faker.person.firstName(sex)] }],
      gender: sex,
      birthDate: faker.date.birthdate({ min: 0, max: 95, mode: 'age' }).toISOString().slice(0, 10),
      telecom: [{ system: 'phone', value: `503-555-${faker.string.numeric(4)}` }],
      address: [{ line: [faker.location.streetAddress()], city: faker.location.city(), postalCode: faker.location.zipCode('97###') }],
    };
  });
}

function measure(label: string, index: MpiIndex, queries: Demographics[]): void {
  let compared = 0;
  let runs = 0;
  const warm = performance.now() + seconds * 200;
  for (let position = 0; performance.now() < warm; position++) index.match(queries[position % queries.length]!, { count: 10 });
  const started = performance.now();
  const cpu = process.cpuUsage();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    compared += index.match(queries[runs % queries.length]!, { count: 10 }).compared;
    runs++;
  }
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  // CPU time per match too: on a machine shared with other work, wall time says more about the neighbours.
  const cpuMicros = (used.user + used.system) / runs;
  const cells = [
    label.padEnd(46),
    `${index.size.toLocaleString('en-US').padStart(8)} records`,
    `${Math.round(runs / elapsed)
      .toLocaleString('en-US')
      .padStart(7)} matches/s`,
    `${((elapsed * 1e6) / runs).toFixed(0).padStart(6)} µs wall, ${cpuMicros.toFixed(0).padStart(5)} µs CPU each`,
    `${(compared / runs).toFixed(1).padStart(5)} compared each`,
  ];
  process.stdout.write(`${cells.join('  ')}\n`);
}

const store = loadFhirStore();
const world = [...store.patients(), ...loadNearDuplicates()];
const worldQueries = world.map(demographicsOf);
measure('world (100 patients + near-duplicates)', createMpiIndex(world), worldQueries);

let started = performance.now();
const generated = generatedPatients(generatedSize);
process.stdout.write(
  `generated ${generatedSize.toLocaleString('en-US')} synthetic patients in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
);
started = performance.now();
const large = createMpiIndex([...generated, ...world]);
process.stdout.write(`indexed them in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
measure('generated index, asking with the world', large, worldQueries);
measure('generated index, asking with its own records', large, generated.slice(0, 1_000).map(demographicsOf));
