import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { findScenario } from '../../catalog/scenarios';
import { loadFhirStore } from '../../fixtures/store';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { planRun } from '../../scenarios/plan';
import type { ScenarioPace } from '../../scenarios/run';
import { scenarioWorkflowId } from '../../workflows/scenario/contract';
import { initialProgress } from '../../workflows/scenario/policy';
import { scenarioWorkflow } from '../../workflows/scenario/workflow';
import { startReceiver } from '../support/receiver';
import { durationMillis, useTimeSkipping } from '../support/time-skipping';
import { PENDED_THEN_APPROVED_EVENTS } from './support';

const suite = useTimeSkipping();

describe('the prior-auth scenario at realtime pace', () => {
  // P3DT9H10M of workflow time; the test's own 30 s timeout is what holds it to seconds.
  it('waits the real multi-day delays as durable timers and emits every event in order', async () => {
    const receiver = await startReceiver();
    try {
      const organization = await createOrganization(suite.db, { name: 'Time-skipping Scenario Health (synthetic)', webhookUrl: receiver.url });
      const scenario = findScenario('prior_auth_approved_after_pend')!;
      const planned = planRun({ scenario, patientId: 'syn-pat-0001', outcome: 'pended_then_approved', store: loadFhirStore() });
      if (!('plan' in planned)) throw new Error('the walkthrough patient fits the scenario');
      const { plan } = planned;
      const runId = newId('run');
      const pace: ScenarioPace = { mode: 'realtime', time_scale: null };
      const simulatedStart = new Date().toISOString();
      const newRun = {
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
      };

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
            newRun,
          },
        ],
      });
      const final = await handle.result();

      expect(final.status).toBe('completed');
      expect(receiver.requests.map((request) => JSON.parse(request.body).event)).toEqual(PENDED_THEN_APPROVED_EVENTS);
      const events = (await handle.fetchHistory()).events ?? [];
      const timers = events
        .filter((event) => event.timerStartedEventAttributes)
        .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
      expect(timers).toEqual([600, 7200, 86_400, 14_400, 172_800, 10_800].map((seconds) => seconds * 1000));
      expect(timers.reduce((sum, ms) => sum + ms, 0)).toBe(((3 * 24 + 9) * 60 + 10) * 60_000);
      // Each timer says in the Web UI which step it waits for.
      const summaries = events
        .filter((event) => event.timerStartedEventAttributes)
        .map((event) => defaultPayloadConverter.fromPayload<string>(event.userMetadata!.summary!));
      expect(summaries[2]).toBe(`Step request_pended in 1 d simulated: ${plan.steps[3]!.description}`);
    } finally {
      await receiver.close();
    }
  });
});
