import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type { Patient } from 'fhir/r4';
import type { FhirStore } from '../fixtures/store';
import { AGGREGATOR_COMPLETED_EVENT, queryCompletedTask } from '../interop/aggregator/completed-event';
import { type AggregatedAnswer, aggregate, type SourceOutcome, withinDates } from '../interop/aggregator/merge';
import { type AggregatorQueryRequest, aggregatorQueryPath, type StoredResult } from '../interop/aggregator/query';
import { queryOutcome, queryRequest, recordQueryAnswer } from '../interop/aggregator/records';
import { findSource, matchAtSource, SOURCE_MRN_SYSTEM, simulatedLatency, sourceRecords } from '../interop/aggregator/sources';
import type { SourceId } from '../interop/aggregator/vocabulary';
import { demographicsOf } from '../interop/mpi/demographics';
import { worldMpi } from '../interop/mpi/world';
import type { Database } from '../platform/database';
import { findOrganization } from '../platform/organizations';
import type { NewDelivery } from '../webhooks/new-delivery';
import { newDelivery } from '../webhooks/new-delivery';

export interface AggregatorActivityDependencies {
  db: Database;
  fhirStore: FhirStore;
}

/**
 * The aggregator's activities: ask one simulated source (with its latency, its
 * failure or its silence), and merge and store the answer. Each answers from the stored record when
 * retried.
 */
export function createAggregatorActivities({ db, fhirStore }: AggregatorActivityDependencies) {
  /** The world patient the request names or matches (certain, or probable when the query asks for it), or the request itself. */
  function enterprisePatient(request: AggregatorQueryRequest): Patient {
    if (request.patientId) return fhirStore.read('Patient', request.patientId) as Patient;
    // The index also holds near-duplicates that are no patient of the world: only a world patient names the record.
    const best = worldMpi(fhirStore)
      .index.match(demographicsOf(request.patient))
      .candidates.find((candidate) => fhirStore.read('Patient', candidate.patient.id!) !== undefined);
    if (best && (best.grade === 'certain' || (best.grade === 'probable' && request.includeProbableMatches === true))) return best.patient;
    return { ...request.patient, id: 'requested' };
  }

  return {
    /**
     * One source: it takes its simulated time, then matches the patient in its own index and
     * answers its copies. The activity stops waiting at the query's deadline, as an HTTP client
     * with a timeout would, and answers `timeout`.
     */
    async querySource({ source: sourceId, queryId }: { source: SourceId; queryId: string }): Promise<SourceOutcome> {
      const request = await queryRequest(db, queryId);
      const source = findSource(sourceId);
      const behaviour = request.simulate[sourceId] ?? 'ok';
      const latency = simulatedLatency(request.seed, source, JSON.stringify(request.patient));
      const cancelled = Context.current().cancellationSignal;
      if (behaviour === 'timeout' || latency >= request.sourceTimeoutMs) {
        await sleep(request.sourceTimeoutMs, undefined, { signal: cancelled });
        return { source: sourceId, status: 'timeout', latency_ms: request.sourceTimeoutMs, error: `no answer within ${request.sourceTimeoutMs} ms` };
      }
      await sleep(latency, undefined, { signal: cancelled });
      if (behaviour === 'error')
        return { source: sourceId, status: 'error', latency_ms: latency, error: `${source.name} answered 503 Service Unavailable` };
      const match = matchAtSource(fhirStore, request.seed, source, request.patient);
      if (!match) return { source: sourceId, status: 'no_match', latency_ms: latency };
      // A probable match may be another person: its records are merged only when the query asks for that.
      if (match.grade === 'probable' && request.includeProbableMatches !== true) {
        return { source: sourceId, status: 'probable_match', latency_ms: latency, match_grade: match.grade };
      }
      const mrn = match.patient.identifier?.find((identifier) => identifier.system === SOURCE_MRN_SYSTEM(sourceId))?.value;
      const resources = sourceRecords(fhirStore, request.seed, source, match.worldId, match.patient.id!).filter(
        (resource) =>
          (request.resourceTypes === null || (request.resourceTypes as string[]).includes(resource.resourceType)) &&
          withinDates(resource, request.dateFrom ?? undefined, request.dateTo ?? undefined),
      );
      return {
        source: sourceId,
        status: 'ok',
        latency_ms: latency,
        patient_id: match.patient.id!,
        ...(mrn ? { mrn } : {}),
        match_grade: match.grade,
        resources,
      };
    },

    /**
     * Merges the answers, stores them on the query and prepares the completion webhook (when the
     * organization has a webhook URL). A retry finds the query completed and prepares nothing new.
     */
    async completeAggregatorQuery(input: {
      queryId: string;
      organizationId: string;
      outcomes: SourceOutcome[];
    }): Promise<{ records: number; newDelivery: NewDelivery | null }> {
      const request = await queryRequest(db, input.queryId);
      const patient = enterprisePatient(request);
      const answer = aggregate({ patient, purpose: request.purposeOfUse, outcomes: input.outcomes, seed: request.seed });
      const records = answer.bundle.entry!.filter(
        (entry) => !['Patient', 'Provenance', 'OperationOutcome'].includes(entry.resource!.resourceType),
      ).length;
      const stored = await queryOutcome(db, input.queryId);
      if (stored && stored.status !== 'running') return { records, newDelivery: (stored.result as StoredResult).webhook_delivery };
      const completedAt = new Date();
      const organization = await findOrganization(db, input.organizationId);
      const newDelivery = organization?.webhookUrl ? completionDelivery(input, patient, answer, records, completedAt) : null;
      const result: StoredResult = { ...answer, webhook_delivery: newDelivery };
      await recordQueryAnswer(db, input.queryId, { status: answer.status, result, completedAt });
      return { records, newDelivery };
    },
  };
}

function completionDelivery(
  input: { queryId: string; organizationId: string },
  patient: Patient,
  answer: AggregatedAnswer,
  records: number,
  completedAt: Date,
): NewDelivery {
  return newDelivery({
    organizationId: input.organizationId,
    connectionId: null,
    event: AGGREGATOR_COMPLETED_EVENT,
    environment: 'sandbox',
    occurredAt: completedAt.toISOString(),
    resource: queryCompletedTask({
      queryId: input.queryId,
      patientReference: patient.id === 'requested' ? null : `Patient/${patient.id}`,
      answerPath: aggregatorQueryPath(input.queryId),
      completedAt: completedAt.toISOString(),
      status: answer.status,
      records,
      sources: answer.sources,
    }),
  });
}
