import { describe, expect, it } from 'vitest';
import { findScenario } from '../../catalog/scenarios';
import { loadFhirStore } from '../../fixtures/store';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { planRun } from '../../scenarios/plan';
import type { ScenarioPace } from '../../scenarios/run';
import { scenarioWorkflowId } from '../../workflows/scenario/contract';
import { initialProgress, MANUAL_RUN_IDLE_MS } from '../../workflows/scenario/policy';
import { scenarioWorkflow } from '../../workflows/scenario/workflow';
import { startReceiver } from '../support/receiver';
import { durationMillis, useTimeSkipping } from '../support/time-skipping';

/** A manual-pace run nobody advances expires after MANUAL_RUN_IDLE_MS (a day), on the time-skipping server. */
const suite = useTimeSkipping();

describe('a manual-pace scenario run', () => {
  it('expires after a day without an advance, having emitted only its first step', async () => {
    const receiver = await startReceiver();
    try {
      const organization = await createOrganization(suite.db, { name: 'Idle Manual Run Health (synthetic)', webhookUrl: receiver.url });
      const scenario = findScenario('prior_auth_approved_after_pend')!;
      const planned = planRun({ scenario, patientId: 'syn-pat-0001', outcome: 'pended_then_approved', store: loadFhirStore() });
      if (!('plan' in planned)) throw new Error('the walkthrough patient fits the scenario');
      const { plan } = planned;
      const runId = newId('run');
      const pace: ScenarioPace = { mode: 'manual', time_scale: null };
      const simulatedStart = new Date().toISOString();
      const handle = await suite.environment.start(scenarioWorkflow, {
        workflowId: scenarioWorkflowId(runId),
        args: [
          {
            runId,
            organizationId: organization.id,
            scenarioId: scenario.id,
            connectionId: null,
            pace,
            steps: plan.steps,
            simulatedStart,
            retryScheduleMs: [1000],
            newRun: {
              id: runId,
              organizationId: organization.id,
              scenarioId: scenario.id,
              connectionId: null,
              environment: 'sandbox',
              patientId: 'syn-pat-0001',
              pace,
              outcome: plan.outcome,
              seed: null,
              plan,
              progress: initialProgress(plan.steps, simulatedStart),
              simulatedStart,
              createdAt: simulatedStart,
            },
          },
        ],
      });
      const final = await handle.result();
      expect(final.status).toBe('cancelled');
      expect(final.stopped_reason).toContain('Expired: no advance for 24 hours');
      expect(final.steps[0]!.status).toBe('done');
      expect(final.steps[1]!.status).toBe('cancelled');
      expect(receiver.requests.map((request) => JSON.parse(request.body).event)).toEqual(['orders.service_request.placed']);
      const timers = ((await handle.fetchHistory()).events ?? [])
        .filter((event) => event.timerStartedEventAttributes)
        .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
      expect(timers).toEqual([MANUAL_RUN_IDLE_MS]);
    } finally {
      await receiver.close();
    }
  });
});
