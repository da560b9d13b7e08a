import { z } from 'zod';
import { findScenario, scenarios } from '../../catalog/scenarios';
import { SCENARIO_OUTCOMES } from '../../catalog/scenarios/definition';
import type { ScenarioRun } from '../../drizzle/schema';
import type { FhirStore } from '../../fixtures/store';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { idSchema, newId } from '../../platform/ids';
import { WorkflowClosedError, type WorkflowGateway, WorkflowRefusedError } from '../../platform/workflow-gateway';
import { resourceStamp, simulatedStartFor } from '../../scenarios/ids';
import { DEFAULT_SCENARIO_PATIENT, planRun, type RunPlan } from '../../scenarios/plan';
import type { NewScenarioRun, ScenarioPace, ScenarioProgress } from '../../scenarios/run';
import { findOwnedRun, listRuns, pendingRun, recordNewRun, runningRuns } from '../../scenarios/run-records';
import { PACE_MODES, SCENARIO_RUN_STATUSES } from '../../scenarios/vocabulary';
import {
  advanceScenarioUpdate,
  advanceUpdateId,
  cancelScenarioUpdate,
  cancelUpdateId,
  runHasEnded,
  SCENARIO_RUN_ENDED,
  scenarioSearchAttributes,
  scenarioWorkflowId,
} from '../../workflows/scenario/contract';
import { initialProgress } from '../../workflows/scenario/policy';
import { scenarioWorkflow } from '../../workflows/scenario/workflow';
import { acceptWork } from '../http/accepted-work';
import { assertWithinInFlightBound } from '../http/in-flight-bound';
import { ownedConnection } from '../http/owned-rows';
import { decodeCursor, pageQuerySchema, pageSchema, toPage } from '../http/pagination';
import { ApiProblem, invalidFields, notFound } from '../http/problem';
import { defineRoute } from '../http/route';
import { patientIdFrom } from '../sandbox/world-lookups';
import { presentRun, runSchema } from './presenter';

/** A simulated day per real minute: what `accelerated` means when no time_scale is given. */
export const DEFAULT_TIME_SCALE = 1440;
const MAX_TIME_SCALE = 10_000_000;

const runBodySchema = z
  .object({
    connection_id: idSchema('conn')
      .optional()
      .meta({ description: "Send the run's events for this connection (its URL and secret when it has them)" }),
    patient: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .meta({ description: `A synthetic patient id (\`syn-pat-0001\` or \`Patient/syn-pat-0001\`); default ${DEFAULT_SCENARIO_PATIENT}` }),
    pace: z
      .object({
        mode: z.enum(PACE_MODES),
        time_scale: z
          .number('time_scale must be a number')
          .min(1, 'time_scale must be at least 1')
          .max(MAX_TIME_SCALE, `time_scale must be at most ${MAX_TIME_SCALE}`)
          .optional()
          .meta({
            description: `Simulated seconds per real second, accelerated only (default ${DEFAULT_TIME_SCALE}: a simulated day per real minute)`,
          }),
      })
      .strict()
      .refine((pace) => pace.mode === 'accelerated' || pace.time_scale === undefined, {
        message: 'time_scale applies only to the accelerated pace',
        path: ['time_scale'],
      })
      .optional()
      .meta({
        description: `realtime, accelerated (with time_scale) or manual (each step waits for an advance); default accelerated at ${DEFAULT_TIME_SCALE}`,
      }),
    outcome: z
      .enum(SCENARIO_OUTCOMES)
      .optional()
      .meta({ description: 'Where the scenario branches: prior authorization or claim outcome. Absent: the payer rules decide.' }),
    seed: z
      .union([z.string().regex(/^[A-Za-z0-9._-]{1,64}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)], {
        error: 'seed must be a whole number or 1 to 64 letters, digits, dots, dashes or underscores',
      })
      .optional()
      .meta({ description: "Makes the run's resource ids and content reproducible" }),
  })
  .strict()
  .meta({ id: 'RunScenario' });

const acceptedRunSchema = runSchema.extend({ url: z.string().meta({ description: 'Where to follow this run' }) }).meta({ id: 'AcceptedScenarioRun' });

const scenarioParams = z.object({ scenario_id: z.string().meta({ example: 'prior_auth_approved_after_pend' }) });
const runParams = z.object({ run_id: idSchema('run') });
const listQuerySchema = pageQuerySchema.extend({
  scenario_id: z.string().optional(),
  status: z.enum(SCENARIO_RUN_STATUSES).optional(),
});

interface ScenarioRouteDependencies {
  db: Database;
  config: Config;
  workflows: WorkflowGateway;
  fhirStore: FhirStore;
}

/** Scenario runs: start one (a workflow per run), read them, and advance or cancel a running one. */
export function scenarioRoutes({ db, config, workflows, fhirStore }: ScenarioRouteDependencies) {
  async function findOwned(organizationId: string, runId: string): Promise<ScenarioRun> {
    const run = await findOwnedRun(db, organizationId, runId);
    if (!run) throw notFound('scenario run', runId, 'path.run_id');
    return run;
  }

  /**
   * An Update on a run, with an id, so a request retried after a 503 (the Update outliving the call
   * deadline) joins the Update it retries; a refusal or a closed run is a 409 saying the run has ended.
   */
  async function steer(run: ScenarioRun, steering: (workflowId: string) => Promise<ScenarioProgress>): Promise<ScenarioProgress> {
    try {
      return await steering(scenarioWorkflowId(run.id));
    } catch (error) {
      if (error instanceof WorkflowRefusedError) throw new ApiProblem(409, error.code, error.message);
      if (!(error instanceof WorkflowClosedError)) throw error;
      const { status } = await findOwned(run.organizationId, run.id);
      throw new ApiProblem(409, SCENARIO_RUN_ENDED, runHasEnded(status));
    }
  }

  return [
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/scenarios/{scenario_id}/run',
      operationId: 'runScenario',
      summary: 'Run a scenario: its steps emit webhook events over simulated time',
      description:
        'Starts one Temporal workflow for the run (`scenario-<run id>`). Each step waits its typical delay at the chosen pace, then emits its catalog events as signed webhook deliveries, built for this run and patient. ' +
        'The payer rules decide what needs authorization, the decision time frame and (when `outcome` is absent) the outcome; `decided_by` says which rule did.',
      tag: 'Scenarios',
      auth: 'api_key',
      params: scenarioParams,
      body: runBodySchema,
      success: { status: 202, description: 'Accepted: the run has started', schema: acceptedRunSchema },
      errors: [404, 415, 422, 503],
      handler: async ({ auth, params, body, res }) => {
        const scenario = findScenario(params.scenario_id);
        if (!scenario) {
          throw new ApiProblem(
            404,
            'not_found',
            `No scenario with id ${params.scenario_id} exists; GET /v1/sandbox/catalog lists the ${scenarios.length} scenarios.`,
          );
        }
        let environment = 'sandbox';
        if (body.connection_id) {
          environment = (await ownedConnection(db, auth.organizationId, body.connection_id, 'body.connection_id')).environment;
        }
        const patientId = patientIdFrom(body.patient ?? DEFAULT_SCENARIO_PATIENT);
        if (!fhirStore.read('Patient', patientId)) {
          throw invalidFields(
            'body',
            [{ path: 'body.patient', message: `names no synthetic patient (${patientId}); GET /v1/patients lists them` }],
            'unknown_patient',
          );
        }
        const planned = planRun({ scenario, patientId, outcome: body.outcome, store: fhirStore });
        if ('invalidOutcome' in planned) throw invalidFields('body', [{ path: 'body.outcome', message: planned.invalidOutcome }]);
        if ('unfit' in planned) throw invalidFields('body', [{ path: 'body.patient', message: planned.unfit }], 'patient_does_not_fit_scenario');
        const { plan } = planned;
        assertWithinInFlightBound(await runningRuns(db, auth.organizationId), config.SCENARIO_RUNS_IN_FLIGHT_PER_ORGANIZATION, 'scenario runs');

        const pace: ScenarioPace = {
          mode: body.pace?.mode ?? 'accelerated',
          time_scale: (body.pace?.mode ?? 'accelerated') === 'accelerated' ? (body.pace?.time_scale ?? DEFAULT_TIME_SCALE) : null,
        };
        const seed = body.seed === undefined ? null : String(body.seed);
        // Planned once per Idempotency-Key: a retry after a lost answer starts (or finds) the same run.
        const plannedRun = (): NewScenarioRun => {
          const runId = newId('run');
          const now = new Date();
          const stamp = resourceStamp({ runId, scenarioId: scenario.id, patientId, seed });
          const simulatedStart = simulatedStartFor(stamp, seed !== null, now).toISOString();
          return {
            id: runId,
            organizationId: auth.organizationId,
            scenarioId: scenario.id,
            connectionId: body.connection_id ?? null,
            environment,
            patientId,
            pace,
            outcome: plan.outcome,
            seed,
            plan,
            progress: initialProgress(plan.steps, simulatedStart),
            simulatedStart,
            createdAt: now.toISOString(),
          };
        };
        const paceText = pace.mode === 'accelerated' ? `accelerated ×${pace.time_scale}` : pace.mode;
        const accepted = await acceptWork({
          res,
          plan: plannedRun,
          describe: (run) => `scenario run ${run.id}`,
          start: (run) =>
            workflows.startOnce(scenarioWorkflow, {
              workflowId: scenarioWorkflowId(run.id),
              args: [
                {
                  runId: run.id,
                  organizationId: run.organizationId,
                  scenarioId: run.scenarioId,
                  connectionId: run.connectionId,
                  pace: run.pace,
                  steps: (run.plan as RunPlan).steps,
                  simulatedStart: run.simulatedStart,
                  retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
                  newRun: run,
                },
              ],
              organizationId: run.organizationId,
              searchAttributes: scenarioSearchAttributes(run),
              summary: `${scenario.name}: ${run.patientId}${plan.outcome ? `, ${plan.outcome}` : ''} (${paceText})`,
            }),
          answer: async (run) => {
            await recordNewRun(db, run);
            return presentRun(await findOwned(auth.organizationId, run.id));
          },
          fallback: (run) => presentRun(pendingRun(run)),
        });
        const url = `/v1/sandbox/scenarios/runs/${accepted.id}`;
        res.setHeader('Location', url);
        return { ...accepted, url };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/scenarios/runs',
      operationId: 'listScenarioRuns',
      summary: 'List scenario runs, newest first',
      tag: 'Scenarios',
      auth: 'api_key',
      query: listQuerySchema,
      success: { status: 200, description: 'A page of runs', schema: pageSchema(runSchema) },
      errors: [400, 422],
      handler: async ({ auth, query }) => {
        const rows = await listRuns(
          db,
          auth.organizationId,
          { before: decodeCursor(query.cursor), scenarioId: query.scenario_id, status: query.status },
          query.limit + 1,
        );
        return toPage(rows, query.limit, (row) => presentRun(row));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/scenarios/runs/{run_id}',
      operationId: 'getScenarioRun',
      summary: 'Read a run: its steps, their times and the deliveries they emitted',
      tag: 'Scenarios',
      auth: 'api_key',
      params: runParams,
      success: { status: 200, description: 'The run', schema: runSchema },
      errors: [404],
      handler: async ({ auth, params }) => presentRun(await findOwned(auth.organizationId, params.run_id)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/scenarios/runs/{run_id}/advance',
      operationId: 'advanceScenarioRun',
      summary: 'Release the waiting step now (manual pace), or cut the current wait short',
      description: 'Answers once the step is released; 409 once the run has ended.',
      tag: 'Scenarios',
      auth: 'api_key',
      params: runParams,
      success: { status: 200, description: 'The run, its step released', schema: runSchema },
      errors: [404, 409],
      handler: async ({ auth, params, req }) => {
        const run = await findOwned(auth.organizationId, params.run_id);
        // The first step the run's record shows unfinished: what this advance, and any retry of it, moves past.
        const steps = (run.progress as ScenarioProgress).steps;
        const unfinished = steps.findIndex((step) => step.status === 'pending' || step.status === 'waiting');
        const request = { fromStep: unfinished === -1 ? steps.length : unfinished };
        return presentRun(
          run,
          await steer(run, (workflowId) =>
            workflows.updateOnce(workflowId, advanceUpdateId(request, req.header('idempotency-key')), advanceScenarioUpdate, request),
          ),
        );
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/scenarios/runs/{run_id}/cancel',
      operationId: 'cancelScenarioRun',
      summary: 'Cancel a running run: no further step emits',
      description: 'Answers once the workflow has cancelled the run; 409 once the run has ended. Deliveries already emitted go on as usual.',
      tag: 'Scenarios',
      auth: 'api_key',
      params: runParams,
      success: { status: 200, description: 'The cancelled run', schema: runSchema },
      errors: [404, 409],
      handler: async ({ auth, params, req }) => {
        const run = await findOwned(auth.organizationId, params.run_id);
        return presentRun(
          run,
          await steer(run, (workflowId) => workflows.updateOnce(workflowId, cancelUpdateId(req.header('idempotency-key')), cancelScenarioUpdate)),
        );
      },
    }),
  ];
}
