import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PlannedStep } from '../../scenarios/plan';
import type { ScenarioPace } from '../../scenarios/run';
import { advanceScenarioUpdate, cancelScenarioUpdate, scenarioProgressQuery, scenarioWorkflowId } from '../../workflows/scenario/contract';
import { initialProgress, MANUAL_RUN_IDLE_MS } from '../../workflows/scenario/policy';
import { scenarioWorkflow } from '../../workflows/scenario/workflow';
import { answers, createFakeActivities } from '../support/fake-activities';
import { durationMillis, useTimeSkippingWith } from '../support/time-skipping';
import { waitUntil } from '../support/wait';

/**
 * The scenario workflow's decisions with in-memory activities: how long each step waits at each pace,
 * skipped steps, a manual run's expiry, advance and cancel. Its step deliveries run as real delivery
 * workflows on the same fakes. No database.
 */
const fakes = createFakeActivities();
const suite = useTimeSkippingWith(fakes.activities);

const HOUR = 3600;
const DAY = 24 * HOUR;

const step = (id: string, delaySeconds: number, emits: string[], skipped = false): PlannedStep => ({
  id,
  description: `The ${id} step`,
  emits,
  typical_delay_seconds: delaySeconds,
  delay_seconds: delaySeconds,
  skipped,
});

/** A prior authorization pended-then-approved plan, its pend skipped (the payer approved at once). */
const steps = [
  step('ordered', 0, ['orders.service_request.placed']),
  step('submitted', 2 * HOUR, ['prior_auth.request.submitted']),
  step('pended', DAY, ['prior_auth.request.pended'], true),
  step('decided', 3 * DAY, ['prior_auth.request.approved', 'scheduling.appointment.booked']),
];

const newRunId = () => `run-fake-${randomUUID()}`;

function start(runId: string, pace: ScenarioPace, options: { timeSkipping?: boolean } = {}) {
  const simulatedStart = '2026-03-02T09:00:00.000Z';
  const run = { id: runId, organizationId: 'org_fake', scenarioId: 'prior_auth_approved_after_pend', connectionId: null, pace };
  return suite.environment.start(scenarioWorkflow, {
    workflowId: scenarioWorkflowId(runId),
    args: [
      {
        ...{ runId, organizationId: run.organizationId, scenarioId: run.scenarioId, connectionId: null, pace },
        steps,
        simulatedStart,
        retryScheduleMs: [30_000],
        newRun: {
          ...run,
          environment: 'sandbox',
          patientId: 'syn-pat-0001',
          outcome: null,
          seed: null,
          plan: { steps },
          progress: initialProgress(steps, simulatedStart),
          simulatedStart,
          createdAt: new Date().toISOString(),
        },
      },
    ],
    ...options,
  });
}

async function timersOf(handle: Awaited<ReturnType<typeof start>>) {
  const events = (await handle.fetchHistory()).events ?? [];
  return events
    .filter((event) => event.timerStartedEventAttributes)
    .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
}

const emittedOf = (progress: { steps: { emitted: { event: string }[] }[] }) => progress.steps.map((s) => s.emitted.map((e) => e.event));

describe('the scenario workflow, with fake activities', () => {
  it.each([
    ['realtime', { mode: 'realtime', time_scale: null }, [2 * HOUR * 1000, 3 * DAY * 1000]],
    ['accelerated (a simulated day per minute)', { mode: 'accelerated', time_scale: 1440 }, [5_000, 180_000]],
  ] as const)('at %s pace waits each step’s delay at that pace, skips the skipped step, and emits in step order', async (_pace, pace, waits) => {
    const runId = newRunId();
    const handle = await start(runId, pace);
    const progress = await handle.result();

    expect(progress.status).toBe('completed');
    expect(await timersOf(handle)).toEqual(waits);
    expect(progress.steps.map((s) => s.status)).toEqual(['done', 'done', 'skipped', 'done']);
    expect(emittedOf(progress)).toEqual([
      ['orders.service_request.placed'],
      ['prior_auth.request.submitted'],
      [],
      ['prior_auth.request.approved', 'scheduling.appointment.booked'],
    ]);
    // Each event went out as a delivery workflow of its own, on the same fakes.
    expect(fakes.attemptsOf(`${runId}-decided-1`)).toEqual(['initial #1']);
  });

  it('goes on when a step’s delivery fails for good: the delivery keeps its own state, the run completes', async () => {
    const runId = newRunId();
    fakes.receiverAnswers(`${runId}-submitted-0`, answers.gone);
    const handle = await start(runId, { mode: 'accelerated', time_scale: 1440 });
    const progress = await handle.result();

    expect(progress.status).toBe('completed');
    expect(fakes.attemptsOf(`${runId}-submitted-0`)).toEqual(['initial #1']);
    expect(fakes.exhausted).toContain(`${runId}-submitted-0`);
    expect(fakes.attemptsOf(`${runId}-decided-0`)).toEqual(['initial #1']);
  });

  it(`expires a manual-pace run nobody advances after ${MANUAL_RUN_IDLE_MS / 3_600_000} hours, emitting nothing more`, async () => {
    const runId = newRunId();
    const handle = await start(runId, { mode: 'manual', time_scale: null });
    const progress = await handle.result();

    expect(progress.status).toBe('cancelled');
    expect(progress.stopped_reason).toMatch(/^Expired: no advance for 24 hours/);
    expect(emittedOf(progress)).toEqual([['orders.service_request.placed'], [], [], []]);
    expect(fakes.progressOf(runId).at(-1)).toEqual(progress);
  });

  it('moves a manual-pace run one step per advance (a retried advance moves nothing), and a cancel stops it', async () => {
    // In real time: the run waits for each advance as a person would.
    const runId = newRunId();
    const handle = await start(runId, { mode: 'manual', time_scale: null }, { timeSkipping: false });
    const waitingAt = (stepId: string) =>
      waitUntil(async () => ((await handle.query(scenarioProgressQuery)).current_step === stepId ? true : undefined), {
        what: `the run waiting at ${stepId}`,
      });
    await waitingAt('submitted');

    await handle.executeUpdate(advanceScenarioUpdate, { args: [{ fromStep: 1 }] });
    await waitingAt('decided');
    // The same advance again (a client retrying after a lost answer) finds its wait released already.
    const retried = await handle.executeUpdate(advanceScenarioUpdate, { args: [{ fromStep: 1 }] });
    expect(retried.steps.map((s) => s.status)).toEqual(['done', 'done', 'skipped', 'waiting']);

    const cancelled = await handle.executeUpdate(cancelScenarioUpdate);
    expect(cancelled).toMatchObject({ status: 'cancelled', stopped_reason: 'Cancelled through the API' });
    expect(emittedOf(await handle.result())).toEqual([['orders.service_request.placed'], ['prior_auth.request.submitted'], [], []]);
    expect(fakes.attemptsOf(`${runId}-decided-0`)).toEqual([]);
  });
});
