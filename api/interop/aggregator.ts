import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { AggregatorQuery } from '../../drizzle/schema';
import type { FhirStore } from '../../fixtures/store';
import { type AggregatorQueryRequest, aggregatorQueryPath, type StoredResult } from '../../interop/aggregator/query';
import { findQuery, recordNewQuery, runningQueries } from '../../interop/aggregator/records';
import {
  AGGREGATABLE_TYPES,
  AGGREGATOR_QUERY_STATUSES,
  PURPOSES_OF_USE,
  SIMULATED_BEHAVIOURS,
  SOURCE_IDS,
  SOURCE_STATUSES,
} from '../../interop/aggregator/vocabulary';
import { demographicsOf } from '../../interop/mpi/demographics';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { idSchema, newId } from '../../platform/ids';
import type { WorkflowGateway } from '../../platform/workflow-gateway';
import { aggregatorSearchAttributes, aggregatorWorkflowId } from '../../workflows/aggregator/contract';
import { aggregatorWorkflow } from '../../workflows/aggregator/workflow';
import { acceptWork } from '../http/accepted-work';
import { assertWithinInFlightBound } from '../http/in-flight-bound';
import { guardRequest, privacyWarningSchema } from '../http/privacy';
import { notFound } from '../http/problem';
import { defineRoute, RESPONDED } from '../http/route';
import { demographicsShape, ENOUGH, enoughToMatch, patientFromDemographics } from './mpi';

/** How long the POST waits for the answer before answering 202 with the query to poll. */
export const AGGREGATOR_ANSWER_WAIT_MS = 2_000;
export const DEFAULT_SOURCE_TIMEOUT_MS = 3_000;

const dateField = z.iso.date('must be a date, YYYY-MM-DD');

const querySchema = z
  .object({
    patient_id: z.string().max(64).optional().meta({ description: 'A patient of the synthetic world', example: 'syn-pat-0001' }),
    patient: z.object(demographicsShape).strict().optional().meta({ description: 'Demographics to match at every source, instead of patient_id' }),
    purpose_of_use: z.enum(PURPOSES_OF_USE, { message: `must be one of ${PURPOSES_OF_USE.join(', ')}` }),
    resource_types: z
      .array(z.enum(AGGREGATABLE_TYPES, { message: `must be one of ${AGGREGATABLE_TYPES.join(', ')}` }))
      .min(1)
      .optional(),
    date_from: dateField.optional(),
    date_to: dateField.optional(),
    seed: z.number().int().min(0).max(2_147_483_647).default(1).meta({ description: 'The same seed gives the same answer' }),
    simulate: z
      .partialRecord(z.enum(SOURCE_IDS), z.enum(SIMULATED_BEHAVIOURS, { message: `must be one of ${SIMULATED_BEHAVIOURS.join(', ')}` }))
      .optional()
      .meta({ description: 'Make a source fail (`error`) or never answer (`timeout`)', example: { lab: 'error', pharmacy: 'timeout' } }),
    source_timeout_ms: z.number().int().min(200).max(30_000).default(DEFAULT_SOURCE_TIMEOUT_MS),
    include_probable_matches: z.boolean().default(false).meta({
      description:
        'Merge the records of a source whose match of the patient is only probable (it may be another person). By default such a source is reported as `probable_match` and its records are left out.',
    }),
  })
  .strict()
  // Checked even when other fields are bad, so the 422 lists this one too (hence the defensive reads).
  .refine((body) => ((body as { patient_id?: unknown }).patient_id === undefined) !== ((body as { patient?: unknown }).patient === undefined), {
    message: 'give either patient_id or patient, not both',
    path: ['patient_id'],
    when: () => true,
  })
  .superRefine((body, context) => {
    if (body.patient && !enoughToMatch(demographicsOf(patientFromDemographics(body.patient)))) {
      context.addIssue({ code: 'custom', path: ['patient'], message: ENOUGH });
    }
    if (body.date_from && body.date_to && body.date_from > body.date_to) {
      context.addIssue({ code: 'custom', path: ['date_to'], message: 'must not be before date_from' });
    }
  })
  .meta({ id: 'AggregatorQueryRequest' });

const sourceReportSchema = z.object({
  source: z.enum(SOURCE_IDS),
  name: z.string(),
  status: z.enum(SOURCE_STATUSES),
  latency_ms: z.number().int(),
  patient_id: z.string().nullable().meta({ description: "The source's own id of the patient" }),
  match_grade: z.string().nullable(),
  records: z.number().int().meta({ description: 'Records the source returned, before deduplication' }),
  error: z.string().nullable(),
});

export const queryAnswerSchema = z
  .object({
    id: z.string().meta({ example: 'aq_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    status: z.enum(AGGREGATOR_QUERY_STATUSES).meta({
      description:
        '`running`, then `completed` (every source answered), `partial` (some sources failed or timed out; the others’ records are there) or `failed` (no source answered)',
    }),
    purpose_of_use: z.enum(PURPOSES_OF_USE),
    workflow_id: z.string(),
    created_at: z.iso.datetime(),
    completed_at: z.iso.datetime().nullable(),
    sources: z.array(sourceReportSchema).nullable(),
    warnings: z
      .array(privacyWarningSchema)
      .optional()
      .meta({ description: 'In the answer to the query itself: each real identifier the privacy guard masked in `patient` (docs/api/privacy.md)' }),
    bundle: z
      .looseObject({ resourceType: z.literal('Bundle'), type: z.literal('collection') })
      .nullable()
      .meta({
        description:
          'The patient (with each answering source’s MRN), every record once (meta.source: the copy kept), one Provenance per source that answered, and one OperationOutcome per source that failed, timed out or held only a probable match',
      }),
  })
  .meta({ id: 'AggregatorQuery' });

type QueryAnswer = z.input<typeof queryAnswerSchema>;

function present(row: AggregatorQuery): QueryAnswer {
  const result = row.result as StoredResult | null;
  return {
    id: row.id,
    status: row.status,
    purpose_of_use: (row.request as AggregatorQueryRequest).purposeOfUse,
    workflow_id: aggregatorWorkflowId(row.id),
    created_at: row.createdAt.toISOString(),
    completed_at: row.completedAt?.toISOString() ?? null,
    sources: result?.sources ?? null,
    bundle: (result?.bundle as QueryAnswer['bundle']) ?? null,
  };
}

function running(id: string, purpose: QueryAnswer['purpose_of_use'], createdAt: string): QueryAnswer {
  return {
    id,
    status: 'running',
    purpose_of_use: purpose,
    workflow_id: aggregatorWorkflowId(id),
    created_at: createdAt,
    completed_at: null,
    sources: null,
    bundle: null,
  };
}

/** `POST /v1/sandbox/aggregator/query` and `GET …/queries/{id}`: a patient's record from several simulated sources. */
export function aggregatorRoutes({
  db,
  fhirStore,
  workflows,
  config,
}: {
  db: Database;
  fhirStore: FhirStore;
  workflows: WorkflowGateway;
  config: Config;
}) {
  const findOwned = (organizationId: string, id: string) => findQuery(db, organizationId, id);

  return [
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/aggregator/query',
      operationId: 'queryAggregator',
      summary: "Assemble a patient's record from the simulated sources (hospital, clinic, lab, pharmacy network, payer)",
      description: `One Temporal workflow per query (\`aggregator-<query id>\`). Answered with the result (200) when done within ${AGGREGATOR_ANSWER_WAIT_MS / 1000} s, else 202 with the query to read at \`GET /v1/sandbox/aggregator/queries/{id}\`; the \`aggregator.query.completed\` webhook announces the end either way.`,
      tag: 'Interop',
      auth: 'api_key',
      body: querySchema,
      success: {
        status: 202,
        description: 'The query, still running (200 with the same shape when it finished within the wait)',
        schema: queryAnswerSchema,
      },
      errors: [404, 415, 422],
      handler: async ({ auth, body, res }) => {
        if (body.patient_id !== undefined && !fhirStore.read('Patient', body.patient_id)) {
          throw notFound('patient', body.patient_id, 'body.patient_id');
        }
        assertWithinInFlightBound(
          await runningQueries(db, auth.organizationId),
          config.AGGREGATOR_QUERIES_IN_FLIGHT_PER_ORGANIZATION,
          'aggregator queries',
        );
        // Real identifiers in the demographics are masked before the query is stored or started (docs/api/privacy.md).
        const demographics = body.patient && (await guardRequest(db, auth.organizationId, body.patient, 'body.patient'));
        const request: AggregatorQueryRequest = {
          patient: demographics
            ? patientFromDemographics(demographics.value)
            : (structuredClone(fhirStore.read('Patient', body.patient_id!)!) as AggregatorQueryRequest['patient']),
          patientId: body.patient_id ?? null,
          purposeOfUse: body.purpose_of_use,
          resourceTypes: body.resource_types ?? null,
          dateFrom: body.date_from ?? null,
          dateTo: body.date_to ?? null,
          seed: body.seed,
          simulate: body.simulate ?? {},
          sourceTimeoutMs: body.source_timeout_ms,
          includeProbableMatches: body.include_probable_matches,
        };
        // A retry with the same Idempotency-Key gets the first request's plan back, so the same query (api/http/accepted-work.ts).
        const plan = () => ({ queryId: newId('aq'), createdAt: new Date().toISOString() });
        let finished = false;
        const answer = await acceptWork({
          res,
          plan,
          describe: ({ queryId }) => `aggregator query ${queryId}`,
          // The request is recorded first, so the workflow carries only its id (docs/api/privacy.md).
          start: async ({ queryId }) => {
            await recordNewQuery(db, { queryId, organizationId: auth.organizationId, request });
            return workflows.startOnce(aggregatorWorkflow, {
              workflowId: aggregatorWorkflowId(queryId),
              args: [
                {
                  queryId,
                  organizationId: auth.organizationId,
                  sourceTimeoutMs: request.sourceTimeoutMs,
                  webhookRetryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
                },
              ],
              organizationId: auth.organizationId,
              searchAttributes: aggregatorSearchAttributes(auth.organizationId),
            });
          },
          answer: async ({ queryId, createdAt }) => {
            // The wait for the result (a long poll on Temporal) ends with it, with the timer, or with the request.
            const stopWaiting = new AbortController();
            const stop = () => stopWaiting.abort();
            res.once('close', stop);
            try {
              finished = await Promise.race([
                workflows.client
                  .withAbortSignal(stopWaiting.signal, () => workflows.client.workflow.getHandle(aggregatorWorkflowId(queryId)).result())
                  .then(
                    () => true,
                    () => false,
                  ),
                sleep(AGGREGATOR_ANSWER_WAIT_MS, false, { signal: stopWaiting.signal }).catch(() => false),
              ]);
            } finally {
              res.off('close', stop);
              stop();
            }
            // The workflow writes the row; until its first step has, the query is running as planned.
            const row = await findOwned(auth.organizationId, queryId);
            return row ? present(row) : running(queryId, body.purpose_of_use, createdAt);
          },
          fallback: ({ queryId, createdAt }) => running(queryId, body.purpose_of_use, createdAt),
        });
        const answered = demographics?.warnings.length ? { ...answer, warnings: demographics.warnings } : answer;
        if (finished && answer.status !== 'running') res.status(200).json(answered);
        else res.status(202).setHeader('Location', aggregatorQueryPath(answer.id)).json(answered);
        return RESPONDED;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/aggregator/queries/{query_id}',
      operationId: 'getAggregatorQuery',
      summary: 'Read an aggregator query: its status, then each source’s status and the merged Bundle',
      tag: 'Interop',
      auth: 'api_key',
      params: z.object({ query_id: idSchema('aq') }),
      success: { status: 200, description: 'The query', schema: queryAnswerSchema },
      errors: [404],
      handler: async ({ auth, params }) => {
        const row = await findOwned(auth.organizationId, params.query_id);
        if (!row) throw notFound('aggregator query', params.query_id, 'path.query_id');
        return present(row);
      },
    }),
  ];
}
