import { createHash } from 'node:crypto';
import type { Bundle, FhirResource, OperationOutcome, Patient, Provenance } from 'fhir/r4';
import { SYNTHETIC_META, SYNTHETIC_TAG, WORLD_AS_OF } from '../../fixtures/synthetic';
import { findSource, SOURCE_MRN_SYSTEM } from './sources';
import type { AggregatorQueryStatus } from './vocabulary';
import { FAILED_SOURCE_STATUSES, PURPOSE_CODES, type PurposeOfUse, SOURCE_IDS, type SourceId, type SourceStatus } from './vocabulary';

/** What one source answered, as the workflow collected it. */
export interface SourceOutcome {
  source: SourceId;
  status: SourceStatus;
  /** The simulated time the source took (or the deadline, for a timeout). */
  latency_ms: number;
  /** The source's own id of the patient, when it matched. */
  patient_id?: string;
  /** The source's MRN of the patient, when it matched (absent in outcomes recorded before it existed). */
  mrn?: string;
  match_grade?: string;
  resources?: FhirResource[];
  error?: string;
}

export interface SourceReport {
  source: SourceId;
  name: string;
  status: SourceStatus;
  latency_ms: number;
  patient_id: string | null;
  match_grade: string | null;
  /** Records the source returned (before deduplication). */
  records: number;
  error: string | null;
}

/** Where each source is named, in meta.source and the Provenance: a URI per source. */
export const sourceUri = (source: SourceId) => `https://sandbox.example/sources/${source}`;

/** Sources whose copy is kept when several hold the same record: results from the lab first. */
const AUTHORITY: readonly SourceId[] = ['lab', 'hospital', 'clinic', 'pharmacy', 'payer'];

type Json = Record<string, unknown>;
const codeOf = (concept: unknown) => {
  const coding = (concept as { coding?: { system?: string; code?: string }[] } | undefined)?.coding?.[0];
  return coding ? `${coding.system}|${coding.code}` : '';
};
const day = (value: unknown) => (typeof value === 'string' ? value.slice(0, 10) : '');

/**
 * What makes two copies the same record, by type: the codes and the day, never the ids (every
 * source has its own) nor the fields sources record differently (times, display texts).
 */
export function sameRecordKey(resource: FhirResource): string {
  const r = resource as unknown as Json;
  const period = r.period as { start?: string } | undefined;
  const quantity = r.valueQuantity as { value?: number; unit?: string } | undefined;
  const parts: Record<string, () => unknown[]> = {
    Encounter: () => [(r.class as { code?: string }).code, codeOf((r.type as unknown[] | undefined)?.[0]), day(period?.start)],
    Condition: () => [codeOf(r.code), day(r.onsetDateTime ?? r.recordedDate)],
    Observation: () => [
      codeOf(r.code),
      day(r.effectiveDateTime ?? (r.effectivePeriod as { start?: string } | undefined)?.start),
      quantity ? `${Math.round((quantity.value ?? 0) * 100) / 100} ${quantity.unit}` : codeOf(r.valueCodeableConcept),
    ],
    Procedure: () => [codeOf(r.code), day(r.performedDateTime ?? (r.performedPeriod as { start?: string } | undefined)?.start)],
    DiagnosticReport: () => [codeOf(r.code), day(r.effectiveDateTime ?? r.issued)],
    ServiceRequest: () => [codeOf(r.code), day(r.authoredOn)],
    AllergyIntolerance: () => [codeOf(r.code)],
    Immunization: () => [codeOf(r.vaccineCode), day(r.occurrenceDateTime)],
    MedicationRequest: () => [codeOf(r.medicationCodeableConcept), day(r.authoredOn)],
    Coverage: () => [r.subscriberId, (r.payor as { reference?: string }[] | undefined)?.[0]?.reference],
    Claim: () => [(r.identifier as { value?: string }[] | undefined)?.[0]?.value],
    ExplanationOfBenefit: () => [(r.identifier as { value?: string }[] | undefined)?.[0]?.value, day(r.created)],
  };
  return [resource.resourceType, ...(parts[resource.resourceType]?.() ?? [resource.id])].join('#');
}

/** The clinical date of a record, for the query's date range; undefined when it has none. */
export function recordDate(resource: FhirResource): string | undefined {
  const r = resource as unknown as Json;
  const candidates = [
    r.effectiveDateTime,
    (r.effectivePeriod as { start?: string } | undefined)?.start,
    (r.period as { start?: string } | undefined)?.start,
    r.onsetDateTime,
    r.recordedDate,
    r.performedDateTime,
    (r.performedPeriod as { start?: string } | undefined)?.start,
    r.occurrenceDateTime,
    r.authoredOn,
    r.created,
    r.issued,
  ];
  const found = candidates.find((value) => typeof value === 'string');
  return found ? (found as string).slice(0, 10) : undefined;
}

export function withinDates(resource: FhirResource, from?: string, to?: string): boolean {
  const date = recordDate(resource);
  if (date === undefined) return true;
  return (from === undefined || date >= from) && (to === undefined || date <= to);
}

function rewrite(value: unknown, map: Map<string, string>): void {
  if (Array.isArray(value)) for (const item of value) rewrite(item, map);
  else if (value && typeof value === 'object') {
    const object = value as Json;
    for (const [key, child] of Object.entries(object)) {
      if (key === 'reference' && typeof child === 'string') object[key] = map.get(child) ?? child;
      else rewrite(child, map);
    }
  }
}

export interface AggregatedAnswer {
  /** How the query went: every source answered, some failed or timed out, or none answered. */
  status: Exclude<AggregatorQueryStatus, 'running'>;
  bundle: Bundle;
  sources: SourceReport[];
}

/** `completed` when every source answered (records, no match or a probable one), `failed` when none did, else `partial`. */
export function answerStatus(outcomes: readonly Pick<SourceOutcome, 'status'>[]): AggregatedAnswer['status'] {
  const failed = outcomes.filter((outcome) => FAILED_SOURCE_STATUSES.includes(outcome.status)).length;
  if (failed === 0) return 'completed';
  return failed === outcomes.length ? 'failed' : 'partial';
}

/**
 * What the answer says about a source that gave it nothing: an error or a timeout (the answer is
 * incomplete), or a probable match left out because the query did not ask for probable matches.
 */
function sourceOutcome(outcome: SourceOutcome): OperationOutcome {
  const name = findSource(outcome.source).name;
  const issue: OperationOutcome['issue'][number] =
    outcome.status === 'timeout'
      ? {
          severity: 'error',
          code: 'timeout',
          diagnostics: `${name} did not answer in time: ${outcome.error ?? 'timed out'}. Its records are missing from this answer.`,
        }
      : outcome.status === 'error'
        ? {
            severity: 'error',
            code: 'exception',
            diagnostics: `${name} failed: ${outcome.error ?? 'error'}. Its records are missing from this answer.`,
          }
        : {
            severity: 'warning',
            code: 'incomplete',
            diagnostics: `${name} holds a probable match of the patient, left out: ask with include_probable_matches to merge probable matches.`,
          };
  return {
    resourceType: 'OperationOutcome',
    id: `outcome-${outcome.source}`,
    meta: { ...SYNTHETIC_META, source: sourceUri(outcome.source) },
    issue: [issue],
  };
}

/**
 * The answer: one Patient (with each answering source's MRN), every record once (the most
 * authoritative source's copy, its `meta.source` naming that source), references between records
 * pointing inside the Bundle, one Provenance per source that answered, targeting every record it
 * held, and one OperationOutcome per source that failed, timed out or held only a probable match.
 * Pure: the same outcomes give the same Bundle.
 */
export function aggregate(options: { patient: Patient; purpose: PurposeOfUse; outcomes: readonly SourceOutcome[]; seed: number }): AggregatedAnswer {
  const { purpose, outcomes, seed } = options;
  const patient = structuredClone(options.patient);
  const bundlePatientRef = `Patient/${patient.id}`;
  const ordered = [...outcomes].sort((a, b) => AUTHORITY.indexOf(a.source) - AUTHORITY.indexOf(b.source));
  const groups = new Map<string, { kept: FhirResource; keptFrom: SourceId; holders: { source: SourceId; ref: string }[] }>();
  const references = new Map<string, string>();
  for (const outcome of ordered) {
    if (outcome.status !== 'ok') continue;
    const sourceRefs = new Map<string, string>([[`Patient/${outcome.patient_id}`, bundlePatientRef]]);
    for (const resource of outcome.resources ?? []) {
      const key = sameRecordKey(resource);
      const ref = `${resource.resourceType}/${resource.id}`;
      const group = groups.get(key);
      if (group) {
        group.holders.push({ source: outcome.source, ref });
        sourceRefs.set(ref, `${group.kept.resourceType}/${group.kept.id}`);
      } else {
        groups.set(key, { kept: structuredClone(resource), keptFrom: outcome.source, holders: [{ source: outcome.source, ref }] });
        sourceRefs.set(ref, ref);
      }
    }
    for (const [from, to] of sourceRefs) references.set(from, to);
  }
  // Each source's MRN under that source's MRN system (its resource id is no MRN: Provenance names it).
  for (const outcome of outcomes) {
    if (outcome.status !== 'ok' || !outcome.mrn) continue;
    patient.identifier = [...(patient.identifier ?? []), { system: SOURCE_MRN_SYSTEM(outcome.source), value: outcome.mrn }];
  }
  const records = [...groups.values()].sort((a, b) =>
    a.kept.resourceType === b.kept.resourceType ? (a.kept.id! < b.kept.id! ? -1 : 1) : a.kept.resourceType < b.kept.resourceType ? -1 : 1,
  );
  for (const group of records) {
    rewrite(group.kept, references);
    group.kept.meta = { ...group.kept.meta, source: sourceUri(group.keptFrom), tag: [SYNTHETIC_TAG] };
  }
  const provenances: Provenance[] = SOURCE_IDS.filter((source) =>
    outcomes.some((outcome) => outcome.source === source && outcome.status === 'ok'),
  ).map((source) => ({
    resourceType: 'Provenance',
    id: `provenance-${source}`,
    meta: SYNTHETIC_META,
    target: records
      .filter((group) => group.holders.some((holder) => holder.source === source))
      .map((group) => ({ reference: `${group.kept.resourceType}/${group.kept.id}` })),
    recorded: WORLD_AS_OF,
    policy: [sourceUri(source)],
    activity: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-DataOperation', code: 'CREATE', display: 'create' }] },
    agent: [
      {
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/provenance-participant-type', code: 'author', display: 'Author' }] },
        who: { display: findSource(source).name },
      },
    ],
    entity: [
      {
        role: 'source',
        what: { display: `${findSource(source).name}, patient ${outcomes.find((outcome) => outcome.source === source)!.patient_id}` },
      },
    ],
  }));
  const unanswered = SOURCE_IDS.flatMap((source) =>
    outcomes.filter(
      (outcome) => outcome.source === source && (FAILED_SOURCE_STATUSES.includes(outcome.status) || outcome.status === 'probable_match'),
    ),
  );
  const resources: FhirResource[] = [
    patient,
    ...records.map((group) => group.kept),
    ...provenances.filter((provenance) => provenance.target.length > 0),
    ...unanswered.map(sourceOutcome),
  ];
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([seed, purpose, resources]))
    .digest('hex')
    .slice(0, 16);
  const bundle: Bundle = {
    resourceType: 'Bundle',
    id: `aggregated-${fingerprint}`,
    meta: {
      lastUpdated: WORLD_AS_OF,
      tag: [SYNTHETIC_TAG],
      security: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ActReason', ...PURPOSE_CODES[purpose] }],
    },
    type: 'collection',
    timestamp: WORLD_AS_OF,
    entry: resources.map((resource) => ({ fullUrl: `https://sandbox.example/aggregated/${resource.resourceType}/${resource.id}`, resource })),
  };
  const sources: SourceReport[] = SOURCE_IDS.map((source) => {
    const outcome = outcomes.find((candidate) => candidate.source === source)!;
    return {
      source,
      name: findSource(source).name,
      status: outcome.status,
      latency_ms: outcome.latency_ms,
      patient_id: outcome.patient_id ?? null,
      match_grade: outcome.match_grade ?? null,
      records: outcome.resources?.length ?? 0,
      error: outcome.error ?? null,
    };
  });
  return { status: answerStatus(outcomes), bundle, sources };
}
