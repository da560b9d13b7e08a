import { z } from 'zod';
import { SCENARIO_OUTCOMES } from '../../catalog/scenarios/definition';
import type { ScenarioRun } from '../../drizzle/schema';
import type { RunPlan } from '../../scenarios/plan';
import type { ScenarioPace, ScenarioProgress } from '../../scenarios/run';
import { PACE_MODES, SCENARIO_RUN_STATUSES, SCENARIO_STEP_STATUSES } from '../../scenarios/vocabulary';
import { scenarioWorkflowId } from '../../workflows/scenario/contract';

/** How a scenario run looks to partners. */

export const paceSchema = z
  .object({
    mode: z.enum(PACE_MODES),
    time_scale: z
      .number()
      .nullable()
      .meta({ description: 'Simulated seconds per real second (accelerated only); 1440 is a simulated day per real minute' }),
  })
  .meta({ id: 'ScenarioPace' });

const stepSchema = z
  .object({
    id: z.string().meta({ example: 'request_pended' }),
    description: z.string(),
    status: z.enum(SCENARIO_STEP_STATUSES),
    events: z.array(z.string()).meta({ description: 'The catalog events this step emits in this run' }),
    delay_seconds: z.number().meta({ description: 'Simulated seconds after the previous step that happens' }),
    due_at: z.iso.datetime().nullable().meta({ description: 'When its wait ends in real time (null until it waits, and at manual pace)' }),
    simulated_due_at: z.iso.datetime().meta({ description: "When it happens on the run's simulated clock" }),
    emitted: z
      .array(z.object({ event: z.string(), delivery_id: z.string() }))
      .meta({ description: 'Its deliveries, each followed at GET /v1/webhooks/deliveries/{delivery_id}' }),
  })
  .meta({ id: 'ScenarioRunStep' });

const decidedBySchema = z
  .object({
    payer_id: z.string(),
    payer_name: z.string(),
    rule: z.string().meta({
      description: 'The payer rule that decided, as a path into GET /v1/sandbox/payer-rules/{payer_id}',
      example: 'prior_authorization.services[code=73721]',
    }),
    detail: z.string(),
    decision_within_hours: z
      .number()
      .nullable()
      .meta({ description: "The payer's decision time frame (CMS-0057-F: 72 h expedited, 168 h standard)" }),
    cms_0057_f_impacted: z.boolean(),
    outcome_from: z
      .enum(['request', 'payer_rules'])
      .nullable()
      .meta({ description: 'Whether the outcome was asked for or decided by the payer rules' }),
  })
  .meta({ id: 'ScenarioRunDecision' });

export const runSchema = z
  .object({
    id: z.string().meta({ example: 'run_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    scenario_id: z.string().meta({ example: 'prior_auth_approved_after_pend' }),
    status: z.enum(SCENARIO_RUN_STATUSES),
    pace: paceSchema,
    patient: z.string().meta({ example: 'syn-pat-0001' }),
    coverage: z.string().meta({ description: "The patient's Coverage the run bills and authorizes against", example: 'Coverage/syn-cov-0001-001' }),
    connection_id: z.string().nullable(),
    outcome: z.enum(SCENARIO_OUTCOMES).nullable(),
    seed: z.string().nullable(),
    decided_by: decidedBySchema.nullable(),
    simulated_now: z.iso.datetime().meta({ description: "The run's simulated clock now" }),
    current_step: z.string().nullable(),
    stopped_reason: z.string().nullable(),
    steps: z.array(stepSchema),
    workflow_id: z
      .string()
      .meta({ description: 'The Temporal workflow id: find it in the Web UI', example: 'scenario-run_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'ScenarioRun' });

export type PresentedRun = z.input<typeof runSchema>;

/**
 * The simulated clock now: the time of the last step that happened, moved on by the real time spent
 * in the current wait times the pace's scale, never past the step it waits for.
 */
export function simulatedNow(run: ScenarioRun, progress: ScenarioProgress, now = Date.now()): string {
  const pace = run.pace as ScenarioPace;
  const happened = progress.steps.filter((step) => step.status === 'done');
  const lastHappened = happened.length ? Date.parse(happened.at(-1)!.simulated_due_at) : run.simulatedStart.getTime();
  if (progress.status === 'completed')
    return new Date(Date.parse(progress.steps.filter((step) => step.status !== 'skipped').at(-1)!.simulated_due_at)).toISOString();
  const waiting = progress.status === 'running' ? progress.steps.find((step) => step.status === 'waiting') : undefined;
  if (!waiting?.due_at) return new Date(lastHappened).toISOString();
  const scale = pace.mode === 'accelerated' ? pace.time_scale! : 1;
  const target = Date.parse(waiting.simulated_due_at);
  const remaining = Math.max(0, Date.parse(waiting.due_at) - now) * scale;
  return new Date(Math.max(lastHappened, Math.min(target, target - remaining))).toISOString();
}

export function presentRun(run: ScenarioRun, progress: ScenarioProgress = run.progress as ScenarioProgress): PresentedRun {
  const plan = run.plan as RunPlan;
  return {
    id: run.id,
    scenario_id: run.scenarioId,
    status: progress.status,
    pace: run.pace as ScenarioPace,
    patient: run.patientId,
    coverage: `Coverage/${plan.coverage_id}`,
    connection_id: run.connectionId,
    outcome: plan.outcome,
    seed: run.seed,
    decided_by: plan.decided_by,
    simulated_now: simulatedNow(run, progress),
    current_step: progress.current_step,
    stopped_reason: progress.stopped_reason,
    steps: progress.steps.map((step, index) => ({
      id: step.id,
      description: plan.steps[index]!.description,
      status: step.status,
      events: plan.steps[index]!.emits,
      delay_seconds: plan.steps[index]!.delay_seconds,
      due_at: step.due_at,
      simulated_due_at: step.simulated_due_at,
      emitted: step.emitted,
    })),
    workflow_id: scenarioWorkflowId(run.id),
    created_at: run.createdAt.toISOString(),
    updated_at: run.updatedAt.toISOString(),
  };
}
