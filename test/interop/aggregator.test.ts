import { randomUUID } from 'node:crypto';
import type { Bundle, FhirResource, OperationOutcome, Patient, Provenance, Task } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAnswerSchema } from '../../api/interop/aggregator';
import { sameRecordKey, sourceUri } from '../../interop/aggregator/merge';
import { SOURCE_MRN_SYSTEM } from '../../interop/aggregator/sources';
import { referencesIn } from '../support/fhir-references';
import { fhirErrors } from '../support/fhir-validator';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

let service: TestService;
let receiver: TestReceiver;
let key: string;
beforeAll(async () => {
  service = await startTestService();
  receiver = await startReceiver();
  ({ key } = await service.newTenant());
  await service.call('/v1/settings/webhook', { key, method: 'PATCH', body: { webhook_url: receiver.url } });
});
afterAll(async () => {
  await service.stop();
  await receiver.close();
});

interface SourceReport {
  source: string;
  status: string;
  records: number;
  patient_id: string | null;
}
interface QueryAnswer {
  id: string;
  status: string;
  sources: SourceReport[];
  bundle: Bundle;
}

/**
 * A POST with an Idempotency-Key, sent again on a fresh socket when the pooled one was closed under
 * it (a long test before it outlived the server's keep-alive): the key makes the second send safe.
 */
async function post(body: object, idempotencyKey = randomUUID()) {
  const send = () => service.call('/v1/sandbox/aggregator/query', { key, method: 'POST', body, headers: { 'Idempotency-Key': idempotencyKey } });
  try {
    return await send();
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code !== 'ECONNRESET') throw error;
    return send();
  }
}

/** Posts a query and follows it to its answer, whether it came at once (200) or later (202 and a GET). */
async function query(body: object): Promise<QueryAnswer> {
  const posted = await post(body);
  expect([200, 202], JSON.stringify(posted.body)).toContain(posted.status);
  // Every answer is what the OpenAPI document (its zod schema) says.
  expect(queryAnswerSchema.safeParse(posted.body).error).toBeUndefined();
  if (posted.status === 200) return posted.body;
  expect(posted.headers.get('location')).toBe(`/v1/sandbox/aggregator/queries/${posted.body.id}`);
  return waitUntil(
    async () => {
      const read = await service.call(`/v1/sandbox/aggregator/queries/${posted.body.id}`, { key });
      expect(queryAnswerSchema.safeParse(read.body).error).toBeUndefined();
      return read.body.status !== 'running' ? read.body : undefined;
    },
    { what: `query ${posted.body.id} completing`, timeoutMs: 30_000, intervalMs: 200 },
  );
}

const statuses = (answer: QueryAnswer) => Object.fromEntries(answer.sources.map((source) => [source.source, source.status]));
const records = (bundle: Bundle): FhirResource[] =>
  bundle
    .entry!.map((entry) => entry.resource as FhirResource)
    .filter((resource) => !['Patient', 'Provenance', 'OperationOutcome'].includes(resource.resourceType));
const outcomes = (bundle: Bundle) =>
  bundle.entry!.map((entry) => entry.resource!).filter((resource): resource is OperationOutcome => resource.resourceType === 'OperationOutcome');
const provenances = (bundle: Bundle) =>
  bundle.entry!.map((entry) => entry.resource!).filter((resource): resource is Provenance => resource.resourceType === 'Provenance');

describe('POST /v1/sandbox/aggregator/query', () => {
  // A time limit of its own: compiling the R4 schema's Bundle (every resource type) takes seconds on a loaded machine.
  it("returns the others' records, deduplicated with provenance, when one source fails and one times out", async () => {
    const answer = await query({
      patient_id: 'syn-pat-0001',
      purpose_of_use: 'treatment',
      seed: 7,
      simulate: { lab: 'error', pharmacy: 'timeout' },
      source_timeout_ms: 1_500,
    });
    expect(answer.status).toBe('partial');
    expect(statuses(answer)).toEqual({ hospital: 'ok', clinic: 'ok', lab: 'error', pharmacy: 'timeout', payer: 'ok' });
    expect(answer.sources.find((source) => source.source === 'lab')).toMatchObject({ records: 0, patient_id: null });

    const { bundle } = answer;
    expect(fhirErrors(bundle)).toEqual([]);
    expect(bundle.meta!.security).toEqual([expect.objectContaining({ code: 'TREAT' })]);
    expect(bundle.entry![0]!.resource).toMatchObject({ resourceType: 'Patient', id: 'syn-pat-0001' });
    // The failed and the timed-out source each say so in the Bundle.
    expect(outcomes(bundle).map((outcome) => [outcome.meta!.source, outcome.issue[0]!.severity, outcome.issue[0]!.code])).toEqual([
      [sourceUri('lab'), 'error', 'exception'],
      [sourceUri('pharmacy'), 'error', 'timeout'],
    ]);
    expect(outcomes(bundle)[1]!.issue[0]!.diagnostics).toContain('Evergreen Pharmacy Network');
    // Each answering source's MRN under its MRN system; its resource id is no MRN.
    const patientIdentifiers = (bundle.entry![0]!.resource as Patient).identifier!.filter((identifier) => identifier.system!.includes('/mrn-'));
    expect(patientIdentifiers.map((identifier) => identifier.system)).toEqual(
      ['hospital', 'clinic', 'payer'].map((source) => SOURCE_MRN_SYSTEM(source as 'hospital')),
    );
    for (const identifier of patientIdentifiers) {
      expect(identifier.value).toMatch(/^[A-Z]{3}[0-9A-F]{6}$/);
      expect(answer.sources.map((source) => source.patient_id)).not.toContain(identifier.value);
    }
    const kept = records(bundle);
    const keys = kept.map((resource) => sameRecordKey(resource));
    expect(new Set(keys).size).toBe(keys.length);
    const returned = answer.sources.reduce((sum, source) => sum + source.records, 0);
    expect(kept.length).toBeLessThan(returned);
    expect(new Set(kept.map((resource) => resource.resourceType))).toEqual(
      new Set(
        [
          'Encounter',
          'Condition',
          'Observation',
          'Procedure',
          'DiagnosticReport',
          'AllergyIntolerance',
          'Immunization',
          'MedicationRequest',
          'ServiceRequest',
          'Coverage',
          'Claim',
          'ExplanationOfBenefit',
        ].filter((type) => keys.some((key) => key.startsWith(`${type}#`))),
      ),
    );

    const okSources = ['hospital', 'clinic', 'payer'];
    expect(provenances(bundle).map((provenance) => provenance.policy![0])).toEqual(okSources.map((source) => sourceUri(source as 'hospital')));
    const targetedBy = new Map<string, string[]>();
    for (const provenance of provenances(bundle)) {
      for (const target of provenance.target)
        targetedBy.set(target.reference!, [...(targetedBy.get(target.reference!) ?? []), provenance.policy![0]!]);
    }
    for (const resource of kept) {
      expect(okSources.map((source) => sourceUri(source as 'hospital'))).toContain(resource.meta!.source);
      expect(targetedBy.get(`${resource.resourceType}/${resource.id}`), `${resource.resourceType}/${resource.id}`).toContain(resource.meta!.source);
    }
    expect([...targetedBy.values()].some((sources) => sources.length === 2)).toBe(true);
    const inBundle = new Set(bundle.entry!.map((entry) => `${entry.resource!.resourceType}/${entry.resource!.id}`));
    const patientReferences = referencesIn(kept).filter((reference) => reference.startsWith('Patient/'));
    expect(new Set(patientReferences)).toEqual(new Set(['Patient/syn-pat-0001']));
    for (const reference of referencesIn(kept).filter((reference) =>
      /^(Encounter|Condition|Observation|ServiceRequest|Claim|Coverage)\//.test(reference),
    )) {
      expect(inBundle.has(reference) || service.fhirStore.read(reference.split('/')[0]!, reference.split('/')[1]!) !== undefined, reference).toBe(
        true,
      );
    }
  }, 60_000);

  it('says failed when no source answered, with an OperationOutcome for each', async () => {
    const answer = await query({
      patient_id: 'syn-pat-0001',
      purpose_of_use: 'treatment',
      simulate: { hospital: 'error', clinic: 'error', lab: 'timeout', pharmacy: 'error', payer: 'timeout' },
      source_timeout_ms: 300,
    });
    expect(answer.status).toBe('failed');
    expect(fhirErrors(answer.bundle)).toEqual([]);
    expect(records(answer.bundle)).toEqual([]);
    expect(outcomes(answer.bundle).map((outcome) => outcome.meta!.source)).toEqual(
      ['hospital', 'clinic', 'lab', 'pharmacy', 'payer'].map((source) => sourceUri(source as 'hospital')),
    );
    expect(outcomes(answer.bundle).every((outcome) => outcome.issue[0]!.severity === 'error')).toBe(true);
    expect(provenances(answer.bundle)).toEqual([]);
    const delivered = await waitUntil(
      () => receiver.requests.find((request) => JSON.parse(request.body).resource.identifier?.[0]?.value === answer.id),
      { what: 'the completion webhook', timeoutMs: 20_000 },
    );
    expect(JSON.parse(delivered.body).resource).toMatchObject({ resourceType: 'Task', status: 'failed', businessStatus: { text: 'failed' } });
  });

  it('leaves out probable matches unless the query asks for them', async () => {
    const answer = await query({
      patient: { given: 'Nate', family: 'Bradtke', birth_date: '1974-10-27', gender: 'male' },
      purpose_of_use: 'treatment',
    });
    expect(answer.status).toBe('completed');
    expect(fhirErrors(answer.bundle)).toEqual([]);
    const probable = answer.sources.filter((source) => source.status === 'probable_match');
    expect(probable.length).toBeGreaterThan(0);
    for (const source of probable) expect(source).toMatchObject({ match_grade: 'probable', patient_id: null, records: 0 });
    expect(answer.sources.every((source) => ['probable_match', 'no_match'].includes(source.status))).toBe(true);
    expect(records(answer.bundle)).toEqual([]);
    // The world's MPI match is probable too: the Patient is the request, not the world's record.
    expect(answer.bundle.entry![0]!.resource).toMatchObject({ resourceType: 'Patient', id: 'requested' });
    expect(outcomes(answer.bundle).map((outcome) => [outcome.meta!.source, outcome.issue[0]!.severity, outcome.issue[0]!.code])).toEqual(
      probable.map((source) => [sourceUri(source.source as 'hospital'), 'warning', 'incomplete']),
    );
  });

  it('gives the same answer for the same seed, and other source ids for another', async () => {
    const body = { patient_id: 'syn-pat-0002', purpose_of_use: 'payment', seed: 42 };
    const [first, second, other] = await Promise.all([query(body), query(body), query({ ...body, seed: 43 })]);
    expect(first.id).not.toBe(second.id);
    expect(second.bundle).toEqual(first.bundle);
    expect(second.sources).toEqual(first.sources);
    expect(other.bundle.id).not.toBe(first.bundle.id);
    expect(other.sources.map((source) => source.patient_id)).not.toEqual(first.sources.map((source) => source.patient_id));
  });

  it('matches demographics at every source through the MPI, and filters by resource type and date', async () => {
    const answer = await query({
      patient: { given: 'Nate', family: 'Bradtke', birth_date: '1974-10-27', gender: 'male' },
      purpose_of_use: 'individual_access',
      // A nickname, a birth date and a gender are a probable match only: merged because the query asks.
      include_probable_matches: true,
      resource_types: ['Observation', 'Encounter'],
      date_from: '2025-03-01',
      date_to: '2025-09-30',
    });
    expect(answer.bundle.entry![0]!.resource).toMatchObject({ resourceType: 'Patient', id: 'syn-pat-0036' });
    expect(answer.sources.find((source) => source.source === 'clinic')).toMatchObject({ status: 'ok', patient_id: expect.stringMatching(/^rfm-/) });
    const kept = records(answer.bundle);
    expect(kept.length).toBeGreaterThan(0);
    for (const resource of kept as (FhirResource & { effectiveDateTime?: string; period?: { start: string } })[]) {
      expect(['Observation', 'Encounter']).toContain(resource.resourceType);
      const date = (resource.effectiveDateTime ?? resource.period!.start).slice(0, 10);
      expect(date >= '2025-03-01' && date <= '2025-09-30', date).toBe(true);
    }
    const nobody = await query({ patient: { given: 'Zed', family: 'Quixote', birth_date: '1901-01-01' }, purpose_of_use: 'operations' });
    expect(new Set(nobody.sources.map((source) => source.status))).toEqual(new Set(['no_match']));
  });

  it('announces the completion with an aggregator.query.completed webhook through the delivery workflow', async () => {
    const before = receiver.requests.length;
    // A source slower than the POST's wait: the answer is 202 with the query, the result comes later.
    const body = { patient_id: 'syn-pat-0003', purpose_of_use: 'treatment', simulate: { payer: 'error', lab: 'timeout' }, source_timeout_ms: 2_500 };
    const posted = await post(body);
    expect(posted.status).toBe(202);
    expect(posted.body).toMatchObject({ status: 'running', sources: null, bundle: null, workflow_id: `aggregator-${posted.body.id}` });
    const answer = await waitUntil(
      async () => {
        const read = await service.call(`/v1/sandbox/aggregator/queries/${posted.body.id}`, { key });
        return read.body.status !== 'running' ? (read.body as QueryAnswer) : undefined;
      },
      { what: 'the query completing', timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(statuses(answer)).toMatchObject({ payer: 'error', lab: 'timeout' });
    const delivered = await waitUntil(
      () => receiver.requests.slice(before).find((request) => JSON.parse(request.body).resource.identifier?.[0]?.value === answer.id),
      { what: 'the completion webhook', timeoutMs: 20_000 },
    );
    const envelope = JSON.parse(delivered.body) as { event: string; resource: Task };
    expect(envelope.event).toBe('aggregator.query.completed');
    expect(fhirErrors(envelope.resource)).toEqual([]);
    expect(answer.status).toBe('partial');
    expect(envelope.resource).toMatchObject({ status: 'completed', businessStatus: { text: 'partial' }, for: { reference: 'Patient/syn-pat-0003' } });
    expect(envelope.resource.output).toContainEqual({ type: { text: 'source:payer' }, valueCode: 'error' });
    expect(envelope.resource.output).toContainEqual({ type: { text: 'answer' }, valueUrl: `/v1/sandbox/aggregator/queries/${answer.id}` });
    expect(delivered.headers['x-service-delivery-id']).toMatch(/^dlv_/);
  });

  it('answers an Idempotency-Key retry with the same query', async () => {
    const body = { patient_id: 'syn-pat-0004', purpose_of_use: 'treatment' };
    const idempotencyKey = randomUUID();
    const first = await post(body, idempotencyKey);
    const again = await post(body, idempotencyKey);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses bad input with a 422 listing each bad field, and keeps queries to their organization', async () => {
    const missing = await service.call('/v1/sandbox/aggregator/query', { key, method: 'POST', body: { patient_id: 'syn-pat-0001' } });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual([{ path: 'body.purpose_of_use', message: expect.stringContaining('treatment') }]);
    const bad = await service.call('/v1/sandbox/aggregator/query', {
      key,
      method: 'POST',
      body: { purpose_of_use: 'research', resource_types: ['Banana'], date_from: '2025-13-01', seed: -1, simulate: { lab: 'explode' }, extra: 1 },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(
      ['body.patient_id', 'body.date_from', 'body.extra', 'body.purpose_of_use', 'body.resource_types.0', 'body.seed', 'body.simulate.lab'].sort(),
    );
    const unknown = await service.call('/v1/sandbox/aggregator/query', {
      key,
      method: 'POST',
      body: { patient_id: 'syn-pat-9999', purpose_of_use: 'treatment' },
    });
    expect(unknown.status).toBe(404);

    const mine = await service.call('/v1/sandbox/aggregator/query', {
      key,
      method: 'POST',
      body: { patient_id: 'syn-pat-0005', purpose_of_use: 'operations' },
    });
    const other = await service.newTenant('Other Health (synthetic)');
    expect((await service.call(`/v1/sandbox/aggregator/queries/${mine.body.id}`, { key: other.key })).status).toBe(404);
    expect((await service.call('/v1/sandbox/aggregator/queries/aq_nope', { key })).status).toBe(404);
  });
});
