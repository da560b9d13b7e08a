import { createHash } from 'node:crypto';
import type { FhirResource, Observation, Patient } from 'fhir/r4';
import type { FhirStore } from '../../fixtures/store';
import { demographicsOf } from '../mpi/demographics';
import { createMpiIndex } from '../mpi/mpi-index';
import type { AggregatableType, SourceId } from './vocabulary';

/**
 * The simulated sources an aggregator query fans out to. Each keeps its own copy of part of the
 * world: its own ids, its own registration of the patient (a nickname, a dropped middle name, a
 * missing phone) and small differences in what it recorded (a time a few minutes off, a display
 * text of its own). Everything is a function of the world and the query's seed: the same seed gives
 * the same copies, ids and latencies.
 */
export interface SourceDefinition {
  id: SourceId;
  name: string;
  /** Prefix of the source's own ids. */
  prefix: string;
  types: readonly AggregatableType[];
  /** Simulated answer time range, in ms. */
  latencyMs: readonly [number, number];
  /** Which of the patients it holds a record of. */
  holds(store: FhirStore, patientId: string): boolean;
}

const anyOf = (types: readonly AggregatableType[]) => (store: FhirStore, patientId: string) =>
  types.some((type) => store.listForPatient(type, patientId).length > 0);

const isLab = (resource: FhirResource) =>
  resource.resourceType !== 'Observation' ||
  (resource as Observation).category?.some((category) => category.coding?.some((coding) => coding.code === 'laboratory'));

export const SOURCES: readonly SourceDefinition[] = [
  {
    id: 'hospital',
    name: 'Lakeside Community Hospital (synthetic)',
    prefix: 'lch',
    types: ['Encounter', 'Condition', 'Observation', 'Procedure', 'DiagnosticReport', 'AllergyIntolerance', 'Immunization'],
    latencyMs: [120, 600],
    holds: anyOf(['Encounter']),
  },
  {
    id: 'clinic',
    name: 'Riverside Family Medicine (synthetic)',
    prefix: 'rfm',
    types: ['Encounter', 'Condition', 'Observation', 'AllergyIntolerance', 'Immunization', 'MedicationRequest', 'ServiceRequest'],
    latencyMs: [60, 300],
    holds: anyOf(['Encounter']),
  },
  {
    id: 'lab',
    name: 'Cascade Reference Laboratory (synthetic)',
    prefix: 'crl',
    types: ['Observation', 'DiagnosticReport', 'ServiceRequest'],
    latencyMs: [80, 400],
    holds: (store, patientId) => store.listForPatient('Observation', patientId).some(isLab),
  },
  {
    id: 'pharmacy',
    name: 'Evergreen Pharmacy Network (synthetic)',
    prefix: 'epn',
    types: ['MedicationRequest', 'AllergyIntolerance'],
    latencyMs: [100, 500],
    holds: anyOf(['MedicationRequest']),
  },
  {
    id: 'payer',
    name: "The patient's health plan (synthetic)",
    prefix: 'pay',
    types: ['Coverage', 'Claim', 'ExplanationOfBenefit'],
    latencyMs: [200, 900],
    holds: anyOf(['Coverage']),
  },
];

export function findSource(id: SourceId): SourceDefinition {
  return SOURCES.find((source) => source.id === id)!;
}

/** A number in [0, 1) from the seed and the parts: the same inputs, the same number. */
export function seeded(seed: number, ...parts: string[]): number {
  const digest = createHash('sha256')
    .update([seed, ...parts].join('|'))
    .digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

function localId(seed: number, source: SourceDefinition, worldId: string): string {
  return `${source.prefix}-${createHash('sha256').update(`${seed}|${source.id}|${worldId}`).digest('hex').slice(0, 12)}`;
}

export function simulatedLatency(seed: number, source: SourceDefinition, patientKey: string): number {
  const [low, high] = source.latencyMs;
  return Math.round(low + seeded(seed, 'latency', source.id, patientKey) * (high - low));
}

export const SOURCE_MRN_SYSTEM = (source: SourceId) => `https://sandbox.example/fhir/sid/mrn-${source}`;

/** The source's registration of a world patient: its own id and MRN, and one small difference. */
function registration(seed: number, source: SourceDefinition, patient: Patient): Patient {
  const copy = structuredClone(patient) as Patient;
  copy.id = localId(seed, source, patient.id!);
  copy.identifier = [{ system: SOURCE_MRN_SYSTEM(source.id), value: `${source.prefix.toUpperCase()}${copy.id.slice(-6).toUpperCase()}` }];
  delete copy.generalPractitioner;
  delete copy.managingOrganization;
  delete copy.contact;
  const name = copy.name![0]!;
  switch (Math.floor(seeded(seed, 'registration', source.id, patient.id!) * 4)) {
    case 0:
      copy.telecom = copy.telecom?.filter((contact) => contact.system !== 'phone');
      break;
    case 1:
      name.given = name.given!.slice(0, 1);
      break;
    case 2:
      copy.address = copy.address?.map((address) => ({
        ...address,
        line: address.line?.map((line) => line.replace(/ Street$/, ' St').replace(/ Avenue$/, ' Ave')),
      }));
      break;
    default:
      name.family = name.family!.toUpperCase();
  }
  return copy;
}

/** Every patient the source holds, as it registered them (its MPI). */
export function sourceRegistrations(
  store: FhirStore,
  seed: number,
  source: SourceDefinition,
): { patients: Patient[]; worldIdOf: Map<string, string> } {
  const patients: Patient[] = [];
  const worldIdOf = new Map<string, string>();
  for (const patient of store.patients()) {
    if (!source.holds(store, patient.id!)) continue;
    const copy = registration(seed, source, patient);
    patients.push(copy);
    worldIdOf.set(copy.id!, patient.id!);
  }
  return { patients, worldIdOf };
}

/** The source's own match of the requested demographics: its best patient, if certain or probable (the caller decides whether probable counts). */
export function matchAtSource(
  store: FhirStore,
  seed: number,
  source: SourceDefinition,
  query: Patient,
): { patient: Patient; worldId: string; grade: string } | undefined {
  const { patients, worldIdOf } = sourceRegistrations(store, seed, source);
  const [best] = createMpiIndex(patients).match(demographicsOf(query), { count: 1 }).candidates;
  if (!best || (best.grade !== 'certain' && best.grade !== 'probable')) return undefined;
  return { patient: best.patient, worldId: worldIdOf.get(best.patient.id!)!, grade: best.grade };
}

function rewriteReferences(value: unknown, rewrite: (reference: string) => string): void {
  if (Array.isArray(value)) for (const item of value) rewriteReferences(item, rewrite);
  else if (value && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(object)) {
      if (key === 'reference' && typeof child === 'string') object[key] = rewrite(child);
      else rewriteReferences(child, rewrite);
    }
  }
}

function shiftMinutes(dateTime: string, minutes: number): string {
  if (!dateTime.includes('T')) return dateTime;
  return new Date(Date.parse(dateTime) + minutes * 60_000).toISOString().replace('.000Z', 'Z');
}

/** The source's own small differences in one record, none of which changes what it means. */
function discrepancy(seed: number, source: SourceDefinition, resource: FhirResource): void {
  const roll = seeded(seed, 'discrepancy', source.id, resource.id!);
  const record = resource as unknown as Record<string, unknown>;
  if (roll < 0.3 && resource.resourceType === 'Encounter' && resource.period?.start) {
    resource.period = { ...resource.period, start: shiftMinutes(resource.period.start, 5 + Math.floor(roll * 20)) };
  } else if (roll < 0.5) {
    const code = record.code as { text?: string; coding?: { display?: string }[] } | undefined;
    if (code?.coding?.[0]?.display) code.text = `${code.coding[0].display} (${source.prefix.toUpperCase()})`;
  } else if (roll < 0.6 && resource.resourceType === 'Observation') {
    delete resource.interpretation;
  }
}

/** The source's copies of the patient's records of its types, with its own ids and references. */
export function sourceRecords(
  store: FhirStore,
  seed: number,
  source: SourceDefinition,
  worldPatientId: string,
  localPatientId: string,
): FhirResource[] {
  const records = source.types.flatMap((type) =>
    store.listForPatient(type, worldPatientId).filter((resource) => source.id !== 'lab' || isLab(resource)),
  );
  const ids = new Map(
    records.map((resource) => [`${resource.resourceType}/${resource.id}`, `${resource.resourceType}/${localId(seed, source, resource.id!)}`]),
  );
  ids.set(`Patient/${worldPatientId}`, `Patient/${localPatientId}`);
  return records.map((resource) => {
    const copy = structuredClone(resource) as FhirResource;
    copy.id = localId(seed, source, resource.id!);
    rewriteReferences(copy, (reference) => ids.get(reference) ?? reference);
    discrepancy(seed, source, copy);
    return copy;
  });
}
